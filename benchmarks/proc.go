package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cores: the proxy under test runs alone on proxyCPU; the load generators,
// the upstreams and this program share loadCPU.
const (
	loadCPU  = "0"
	proxyCPU = "1"
)

// clockTick is USER_HZ, the unit of /proc/PID/stat times (100 on every
// Linux this runs on).
const clockTick = 100

// proc is a child process started pinned to a core, in its own process
// group, killed when this program dies.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string // file holding its stdout and stderr
	done chan struct{}
	err  error
}

// startProc starts argv pinned to cpu (through taskset when it is on the
// machine), with env added to the environment and its output in logPath.
func startProc(name, cpu, logPath string, env []string, argv ...string) (*proc, error) {
	if _, err := exec.LookPath("taskset"); err == nil && cpu != "" {
		argv = append([]string{"taskset", "-c", cpu}, argv...)
	}
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process itself (not its group).
func (p *proc) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// stop ends the whole process group: SIGTERM, then SIGKILL after grace.
func (p *proc) stop(grace time.Duration) {
	if p == nil {
		return
	}
	pgid := p.pid()
	if !p.exited() {
		syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(grace):
		}
	}
	// Workers may outlive their master (nginx, HAProxy): kill the group.
	syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
}

// tail returns the last n bytes of the process's log, for error messages.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.TrimSpace(string(b))
}

// procStat is what this program reads of /proc/PID/stat.
type procStat struct {
	ppid  int
	ticks int64 // utime+stime+cutime+cstime
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	// The command name is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); ppid is field 4, utime..cstime fields 14-17.
	if len(f) < 15 {
		return procStat{}, false
	}
	var st procStat
	st.ppid, _ = strconv.Atoi(f[1])
	for _, k := range f[11:15] {
		v, _ := strconv.ParseInt(k, 10, 64)
		st.ticks += v
	}
	return st, true
}

// tree lists root and every process descending from it.
func tree(root int) []int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			children[st.ppid] = append(children[st.ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// treeCPU is the CPU time used so far by root's whole process tree. The
// times of children that ended and were reaped are in their parent's
// cutime and cstime, so a worker replaced during the window still counts.
func treeCPU(root int) time.Duration {
	var ticks int64
	for _, pid := range tree(root) {
		if st, ok := readStat(pid); ok {
			ticks += st.ticks
		}
	}
	return time.Duration(ticks) * time.Second / clockTick
}

// treePSS is the proportional resident memory of root's tree, in bytes:
// pages shared between a master and its workers are counted once.
func treePSS(root int) int64 {
	var total int64
	for _, pid := range tree(root) {
		f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				total += kb << 10
				break
			}
		}
		f.Close()
	}
	return total
}

// cpuBusy is the busy time of one core from /proc/stat (everything but
// idle and iowait).
func cpuBusy(cpu string) time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[0] != "cpu"+cpu {
			continue
		}
		var busy int64
		for i, v := range fs[1:] {
			if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are in user already
				continue
			}
			n, _ := strconv.ParseInt(v, 10, 64)
			busy += n
		}
		return time.Duration(busy) * time.Second / clockTick
	}
	return 0
}

// window measures one peer's CPU over a stretch of time.
type window struct {
	root             int
	start            time.Time
	cpu0, busy0      time.Duration
	Wall, CPU, Other time.Duration // Other: busy time on the proxy's core not charged to the proxy
}

func openWindow(root int) *window {
	return &window{root: root, start: time.Now(), cpu0: treeCPU(root), busy0: cpuBusy(proxyCPU)}
}

func (w *window) close() {
	w.Wall = time.Since(w.start)
	w.CPU = treeCPU(w.root) - w.cpu0
	w.Other = cpuBusy(proxyCPU) - w.busy0 - w.CPU
	if w.Other < 0 {
		w.Other = 0
	}
}

// pinSelf moves every thread of this program onto the load core.
func pinSelf() {
	if _, err := exec.LookPath("taskset"); err != nil {
		return
	}
	exec.Command("taskset", "-a", "-cp", loadCPU, strconv.Itoa(os.Getpid())).Run()
}

// runCmd runs a short command and returns its combined output.
func runCmd(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

// writeAtomic writes data to path through a temporary file and a rename,
// so a reader never sees it half written.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}
