package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

// suite is one run: the machine's tools, the built binaries, the shared
// upstream and the peers.
type suite struct {
	opt          options
	stderr       io.Writer
	root         string // module root
	work         string
	bins         struct{ daemon, baseline, self string }
	cert         certFiles
	upstreamAddr string
	upstreamH3   string
	upstream     *proc
	peers        []*peer
	adminClient  *http.Client
	haveWrk      bool
	rep          *report
}

// packages maps each command the suite uses to its Debian package.
var packages = []struct{ cmd, pkg string }{
	{"nginx", "nginx"}, {"haproxy", "haproxy"}, {"caddy", "caddy"}, {"wrk", "wrk"},
	{"h2load", "nghttp2-client"}, {"curl", "curl"}, {"openssl", "openssl"}, {"taskset", "util-linux"},
	{"redis-server", "redis-server"}, {"etcd", "etcd-server"},
}

func (s *suite) ip(last int) string { return s.opt.net + "." + strconv.Itoa(last) }

func run(ctx context.Context, opt options, stderr io.Writer) (*report, error) {
	s := &suite{opt: opt, stderr: stderr, adminClient: &http.Client{Transport: &http.Transport{}}}
	s.rep = newReport(opt)
	pinSelf()
	if opt.install {
		if err := s.install(ctx); err != nil {
			return s.rep, err
		}
	}
	if err := s.setup(ctx); err != nil {
		s.teardown()
		return s.rep, err
	}
	defer s.teardown()

	if slices.ContainsFunc(opt.scenarios, func(sc string) bool { return slices.Contains(throughputIDs, sc) }) {
		s.throughput(ctx)
	}
	for _, step := range []struct {
		id string
		fn func(context.Context)
	}{{scApply, s.apply}, {scChurn, s.churn}, {scStreams, s.streams}, {scBalance, s.balance}, {scLimits, s.limits}, {scFleet, s.fleet}, {scMemory, s.memory}} {
		if ctx.Err() != nil {
			return s.rep, ctx.Err()
		}
		if opt.has(step.id) {
			step.fn(ctx)
		}
	}
	return s.rep, s.rep.write(s.resultsPath())
}

func (s *suite) progress(format string, args ...any) {
	fmt.Fprintf(s.stderr, time.Now().Format("15:04:05")+" "+format+"\n", args...)
}

func (s *suite) install(ctx context.Context) error {
	var missing []string
	for _, p := range packages {
		if _, err := exec.LookPath(p.cmd); err != nil && !slices.Contains(missing, p.pkg) {
			missing = append(missing, p.pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	s.progress("installing %s", strings.Join(missing, " "))
	if out, err := runCmd(ctx, "apt-get", "update", "-qq"); err != nil {
		return fmt.Errorf("apt-get update: %v: %s", err, out)
	}
	cmd := exec.CommandContext(ctx, "apt-get", append([]string{"install", "-y", "-qq", "--no-install-recommends"}, missing...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %v: %s", strings.Join(missing, " "), err, out)
	}
	return nil
}

func (s *suite) setup(ctx context.Context) error {
	gomod, err := runCmd(ctx, "go", "env", "GOMOD")
	if err != nil || strings.TrimSpace(gomod) == "" || strings.TrimSpace(gomod) == os.DevNull {
		return fmt.Errorf("run from inside the module (go env GOMOD: %q)", strings.TrimSpace(gomod))
	}
	s.root = filepath.Dir(strings.TrimSpace(gomod))
	if s.work = s.opt.work; s.work == "" {
		if s.work, err = os.MkdirTemp("", "paduraksa-bench-"); err != nil {
			return err
		}
	} else if err := os.MkdirAll(s.work, 0o755); err != nil {
		return err
	}
	if s.bins.self, err = os.Executable(); err != nil {
		return err
	}
	_, err = exec.LookPath("wrk")
	s.haveWrk = err == nil
	s.progress("building the daemon and the baseline in %s", s.work)
	s.bins.daemon = filepath.Join(s.work, "bin", "paduraksad")
	s.bins.baseline = filepath.Join(s.work, "bin", "httputil-baseline")
	for bin, pkg := range map[string]string{s.bins.daemon: "./examples/paduraksad", s.bins.baseline: "./benchmarks/baseline"} {
		cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, s.opt.buildFlags...), "-o", bin, pkg)...)
		cmd.Dir = s.root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v: %s", pkg, err, out)
		}
	}
	var ips []string
	for i := range 40 {
		ips = append(ips, s.ip(i+1))
	}
	if s.cert, err = makeCert(s.work, ips); err != nil {
		return err
	}
	s.upstreamAddr, s.upstreamH3 = net.JoinHostPort(s.ip(10), "9000"), net.JoinHostPort(s.ip(10), "9443")
	if s.upstream, err = s.startBackend("origin", []string{s.upstreamAddr}, []string{"origin"}, "",
		"-h3", s.upstreamH3, "-cert", s.cert.Cert, "-key", s.cert.Key); err != nil {
		return err
	}
	for i, kind := range allKinds {
		if !slices.Contains(s.opt.peers, kind) {
			continue
		}
		if reason := s.missing(kind); reason != "" {
			s.progress("%s: skipped, %s", kind, reason)
			s.rep.note(kind + ": not measured, " + reason + ".")
			continue
		}
		p := &peer{kind: kind, ip: s.ip(21 + i), dir: filepath.Join(s.work, kind), s: s}
		if err := os.MkdirAll(p.dir, 0o755); err != nil {
			return err
		}
		if kind == kindDaemon {
			p.flags = daemonFlags(ctx, s.bins.daemon)
		}
		p.version = s.version(ctx, p)
		s.peers = append(s.peers, p)
	}
	s.rep.versions = s.versions(ctx)
	return nil
}

// daemon is the suite's paduraksad peer, nil when it is not among the
// peers measured.
func (s *suite) daemon() *peer {
	for _, p := range s.peers {
		if p.kind == kindDaemon {
			return p
		}
	}
	return nil
}

// missing says why a peer cannot run here ("" when it can).
func (s *suite) missing(kind string) string {
	switch kind {
	case kindNginx, kindHAProxy, kindCaddy:
		if _, err := exec.LookPath(kind); err != nil {
			return kind + " is not installed"
		}
	}
	return ""
}

// startBackend starts one upstream process on the load core serving the
// named listeners; slow names those that answer after 50 ms.
func (s *suite) startBackend(name string, addrs, names []string, slow string, extra ...string) (*proc, error) {
	args := append([]string{s.bins.self, "-listen", strings.Join(addrs, ","), "-names", strings.Join(names, ","),
		"-slow", slow}, extra...)
	p, err := startProc("upstream "+name, loadCPU, filepath.Join(s.work, "upstream-"+name+".log"),
		[]string{roleEnv + "=upstream", "GOMAXPROCS=1"}, args...)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if err := awaitTCP(a, p, 10*time.Second); err != nil {
			p.stop(time.Second)
			return nil, err
		}
	}
	return p, nil
}

func awaitTCP(addr string, p *proc, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if p.exited() {
			return fmt.Errorf("%s exited: %s", p.name, p.tail(400))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not listening after %s", p.name, addr, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// backendAddrs are a peer's own balancing backends ("s": three, the second
// slow) or health backends ("k": three that get killed), on an address of
// their own so peers can be measured side by side.
func (s *suite) backendAddrs(p *peer, set string) []string {
	base := 9101
	if set == "k" {
		base = 9111
	}
	ip := s.ip(10 + slices.Index(allKinds, p.kind) + 20)
	return []string{net.JoinHostPort(ip, strconv.Itoa(base)), net.JoinHostPort(ip, strconv.Itoa(base+1)),
		net.JoinHostPort(ip, strconv.Itoa(base+2))}
}

func (s *suite) teardown() {
	for _, p := range s.peers {
		p.stop()
	}
	s.upstream.stop(time.Second)
	if s.opt.work == "" && s.work != "" {
		os.RemoveAll(s.work)
	}
}

func (s *suite) resultsPath() string {
	if s.opt.out != "" {
		return s.opt.out
	}
	return filepath.Join(s.root, "benchmarks", "out", "results-"+s.rep.started.UTC().Format("20060102-150405")+".md")
}

var flagLine = regexp.MustCompile(`(?m)^\s+-([a-zA-Z][\w-]*)`)

// daemonFlags lists the daemon's flags from its -h, so scenarios that
// need a flag it lacks are reported as not available in this build.
func daemonFlags(ctx context.Context, bin string) map[string]bool {
	out, _ := runCmd(ctx, bin, "-h")
	flags := map[string]bool{}
	for _, m := range flagLine.FindAllStringSubmatch(out, -1) {
		flags[m[1]] = true
	}
	return flags
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

func (s *suite) version(ctx context.Context, p *peer) string {
	switch p.kind {
	case kindNginx:
		out, _ := runCmd(ctx, "nginx", "-v")
		return strings.TrimPrefix(firstLine(out), "nginx version: ")
	case kindHAProxy:
		out, _ := runCmd(ctx, "haproxy", "-v")
		f := strings.Fields(firstLine(out))
		if len(f) >= 3 {
			return "HAProxy " + f[2]
		}
		return firstLine(out)
	case kindCaddy:
		out, _ := runCmd(ctx, "caddy", "version")
		return "Caddy " + firstLine(out)
	case kindBaseline:
		return "net/http/httputil, " + runtime.Version()
	case kindDaemon:
		rev, _ := runCmd(ctx, "git", "-C", s.root, "describe", "--always", "--dirty")
		var fl []string
		for f := range p.flags {
			if f == "https" || f == "admin" {
				fl = append(fl, "-"+f)
			}
		}
		slices.Sort(fl)
		v := "paduraksad " + strings.TrimSpace(rev) + ", " + runtime.Version()
		if len(fl) > 0 {
			v += ", with " + strings.Join(fl, " ")
		} else {
			v += ", without -https and -admin"
		}
		return v
	}
	return ""
}

// versions lists everything else measured with: tools, kernel, CPU.
func (s *suite) versions(ctx context.Context) [][2]string {
	var vs [][2]string
	for _, p := range s.peers {
		vs = append(vs, [2]string{p.kind, p.version})
	}
	tool := func(name string, argv ...string) {
		if _, err := exec.LookPath(argv[0]); err != nil {
			vs = append(vs, [2]string{name, "not installed"})
			return
		}
		out, _ := runCmd(ctx, argv[0], argv[1:]...)
		vs = append(vs, [2]string{name, firstLine(out)})
	}
	tool("wrk", "wrk", "-v")
	tool("h2load", "h2load", "--version")
	tool("curl", "curl", "--version")
	tool("openssl", "openssl", "version")
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/quic-go/quic-go" {
				vs = append(vs, [2]string{"HTTP/3 load generator", "quic-go " + d.Version + " (this program)"})
			}
		}
	}
	vs = append(vs, [2]string{"Go", runtime.Version()})
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	vs = append(vs, [2]string{"kernel", strings.TrimSpace(string(kernel))})
	if deb, err := os.ReadFile("/etc/debian_version"); err == nil {
		vs = append(vs, [2]string{"Debian", strings.TrimSpace(string(deb))})
	}
	vs = append(vs, [2]string{"CPU", cpuModel() + ", " + strconv.Itoa(runtime.NumCPU()) + " cores"})
	return vs
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}

// peersFor lists the running peers in round r's order: rotated each
// round, so no peer always runs first or last.
func (s *suite) peersFor(r int) []*peer {
	n := len(s.peers)
	out := make([]*peer, 0, n)
	for i := range n {
		out = append(out, s.peers[(i+r)%n])
	}
	return out
}
