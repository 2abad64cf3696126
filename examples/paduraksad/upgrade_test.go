package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/tlsselect"
)

// The daemon's binary, built once for the tests that run it as a
// process: a binary upgrade starts the binary again.
var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

func daemonBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "paduraksad-bin-"); binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "paduraksad")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	require.NoError(t, binErr)
	return binPath
}

// proc is the daemon run as a process, with every process of its
// upgrades: they share its output, which the test reads line by line.
type proc struct {
	t     *testing.T
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	more  chan struct{} // closed and replaced at each line
	eof   chan struct{} // every process writing the output has exited
}

// startProc runs the daemon binary with args (through sh -c script when
// script is not empty, for systemd's variables) and files as descriptors
// 3 and up.
func startProc(t *testing.T, args []string, files []*os.File, script string) *proc {
	t.Helper()
	bin := daemonBinary(t)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	p := &proc{t: t, more: make(chan struct{}), eof: make(chan struct{})}
	if script != "" {
		p.cmd = exec.Command("sh", append([]string{"-c", script + ` exec "$0" "$@"`, bin}, args...)...)
	} else {
		p.cmd = exec.Command(bin, args...)
	}
	p.cmd.Stdout, p.cmd.Stderr, p.cmd.ExtraFiles = w, w, files
	require.NoError(t, p.cmd.Start())
	w.Close()
	go func() {
		defer close(p.eof)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			close(p.more)
			p.more = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	t.Cleanup(p.stop)
	return p
}

// stop ends every process of the run: SIGTERM to each PID the output
// named, then the wait for the output's end.
func (p *proc) stop() {
	pids := map[int]bool{p.cmd.Process.Pid: true}
	for _, m := range regexp.MustCompile(`pid=(\d+)`).FindAllStringSubmatch(p.output(), -1) {
		n, _ := strconv.Atoi(m[1])
		pids[n] = true
	}
	for pid := range pids {
		ours(pid, syscall.SIGTERM)
	}
	go p.cmd.Wait()
	select {
	case <-p.eof:
	case <-time.After(15 * time.Second):
		for pid := range pids {
			ours(pid, syscall.SIGKILL)
		}
		p.t.Errorf("the daemon's processes did not exit on SIGTERM\n%s", p.output())
	}
}

// ours signals pid if it still runs the daemon's test binary: a process
// of the run that exited may have left its PID to another program.
func ours(pid int, sig syscall.Signal) {
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); err == nil && exe == binPath {
		syscall.Kill(pid, sig)
	}
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// wait returns the submatches of the first line from line from on that
// matches re, and the index after it.
func (p *proc) wait(re string, from int) ([]string, int) {
	p.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.After(15 * time.Second)
	for {
		p.mu.Lock()
		for i := from; i < len(p.lines); i++ {
			if m := rx.FindStringSubmatch(p.lines[i]); m != nil {
				p.mu.Unlock()
				return m, i + 1
			}
		}
		more := p.more
		p.mu.Unlock()
		select {
		case <-more:
		case <-p.eof:
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if n == from || !rx.MatchString(p.output()) {
				p.t.Fatalf("no line matches %q, and every process exited:\n%s", re, p.output())
			}
		case <-deadline:
			p.t.Fatalf("no line matches %q within 15 s:\n%s", re, p.output())
		}
	}
}

// served reads a process's addresses from its announcement, from line
// from on, and its PID from its readiness line.
type served struct {
	pid                int
	http, https, admin string
}

func (p *proc) ready(from int) (served, int) {
	p.t.Helper()
	var s served
	m, next := p.wait(`msg="ready for upgrades" pid=(\d+)`, from)
	s.pid, _ = strconv.Atoi(m[1])
	// The announcement comes before, on the same pipe.
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, line := range p.lines[from:next] {
		for _, f := range []struct {
			re  *regexp.Regexp
			dst *string
		}{{reAdmin, &s.admin}, {reHTTP, &s.http}, {reHTTPS, &s.https}} {
			if m := f.re.FindStringSubmatch(line); m != nil {
				*f.dst = m[1]
			}
		}
	}
	return s, next
}

var (
	reAdmin = regexp.MustCompile(`^paduraksad admin API on http://(\S+)`)
	reHTTP  = regexp.MustCompile(`^paduraksad listening on http://(\S+)`)
	reHTTPS = regexp.MustCompile(`^paduraksad listening on https://(\S+)`)
)

// upgradeDoc writes a document for a.test (plain and HTTPS with HTTP/3)
// over the upstream at up, and returns its path and the client pool.
func upgradeDoc(t *testing.T, up string) (string, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	c, err := tlsselect.SelfSigned(time.Hour, "a.test")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(c.Leaf)
	certFile, keyFile := writeKeyPair(t, dir, "a.test", c)
	cfg := filepath.Join(dir, "paduraksa.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
certificates:
  - {id: one, certFile: `+certFile+`, keyFile: `+keyFile+`}
hosts:
  - {names: [a.test], certificate: one, tls: {http3: true}, routes: [{upstream: u}]}
upstreams:
  - {id: u, destinations: [{id: d, address: "http://`+up+`"}]}
`), 0o600))
	return cfg, pool
}

// echoUpstream answers "ok" to requests and, to an Upgrade: echo one,
// 101 and then each line back until "bye".
func echoUpstream(t *testing.T) string {
	t.Helper()
	return serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			io.WriteString(w, "ok")
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil || line == "bye\n" {
				return
			}
			brw.WriteString(line)
			brw.Flush()
		}
	})})
}

// tunnelThrough opens an upgraded connection through the daemon at addr.
func tunnelThrough(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, wireTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	io.WriteString(c, "GET /ws HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 101, res.StatusCode)
	return c, br
}

func echoLine(t *testing.T, c net.Conn, br *bufio.Reader, s string) {
	t.Helper()
	_, err := io.WriteString(c, s+"\n")
	require.NoError(t, err, "writing %q", s)
	line, err := br.ReadString('\n')
	require.NoError(t, err, "reading %q back", s)
	assert.Equal(t, s+"\n", line)
}

// load is keep-alive clients asking in a loop until stopped.
type load struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	errs       []string
	stop       chan struct{}
	wg         sync.WaitGroup
}

func startLoad(clients int, rt func(i int) http.RoundTripper, url string) *load {
	l := &load{stop: make(chan struct{})}
	for i := range clients {
		c := &http.Client{Transport: rt(i), Timeout: 10 * time.Second}
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", url, nil)
				req.Host = "a.test"
				res, err := c.Do(req)
				if err == nil {
					b, rerr := io.ReadAll(res.Body)
					res.Body.Close()
					if rerr != nil || res.StatusCode != 200 || string(b) != "ok" {
						err = fmt.Errorf("status %d %q %v", res.StatusCode, b, rerr)
					}
				}
				if err != nil {
					l.failed.Add(1)
					l.mu.Lock()
					l.errs = append(l.errs, err.Error())
					l.mu.Unlock()
					continue
				}
				l.ok.Add(1)
			}
		})
	}
	return l
}

// past waits until the load has done n more requests than it had.
func (l *load) past(t *testing.T, n int64) {
	t.Helper()
	want := l.ok.Load() + l.failed.Load() + n
	deadline := time.Now().Add(15 * time.Second)
	for l.ok.Load()+l.failed.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the load did not reach %d requests", want)
		}
		time.Sleep(time.Millisecond) // the load's own progress, counted; not a synchronisation
	}
}

func (l *load) end() (ok, failed int64, errs []string) {
	close(l.stop)
	l.wg.Wait()
	return l.ok.Load(), l.failed.Load(), l.errs
}

// TestUpgradeUnderLoad: SIGUSR2 under keep-alive load over HTTP/1.1 and
// HTTP/2 costs no request, a tunnel opened before it keeps working
// through the old process's drain until it closes, the new process
// serves the same addresses, and the old one exits once drained.
func TestUpgradeUnderLoad(t *testing.T) {
	up := echoUpstream(t)
	cfg, pool := upgradeDoc(t, up)
	p := startProc(t, []string{"-config", cfg, "-watch", "0", "-http", "127.0.0.1:0", "-https", "127.0.0.1:0", "-admin", "127.0.0.1:0",
		"-upgrade-grace", "20s", "-access-log", "off", "-pid-file", filepath.Join(t.TempDir(), "pid")}, nil, "")
	old, next := p.ready(0)
	require.Equal(t, p.cmd.Process.Pid, old.pid)

	ws, br := tunnelThrough(t, old.http)
	echoLine(t, ws, br, "before")

	plain := startLoad(6, func(int) http.RoundTripper { return &http.Transport{MaxIdleConnsPerHost: 1} }, "http://"+old.http+"/")
	h2 := startLoad(4, func(int) http.RoundTripper {
		return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "a.test"}, ForceAttemptHTTP2: true}
	}, "https://"+old.https+"/")
	h3 := startLoad(2, func(int) http.RoundTripper {
		return &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "a.test"}, QUICConfig: &quic.Config{HandshakeIdleTimeout: 2 * time.Second}}
	}, "https://"+old.https+"/")
	plain.past(t, 300)
	h2.past(t, 200)
	h3.past(t, 50)

	start := time.Now()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGUSR2))
	signalled := next
	nu, _ := p.ready(next)
	assert.NotEqual(t, old.pid, nu.pid)
	assert.Equal(t, old, served{pid: old.pid, http: nu.http, https: nu.https, admin: nu.admin}, "the new process serves the same sockets")
	// The old process may say it before the new one logs its readiness.
	p.wait(`msg="handed over; draining" pid=`+strconv.Itoa(old.pid)+``, signalled)
	handOver := time.Since(start)
	// The new process serves on its own while the old drains the tunnel.
	plain.past(t, 300)
	h2.past(t, 200)
	h3.past(t, 50)
	echoLine(t, ws, br, "during the drain")
	assert.Contains(t, strings.Join(p.lines, "\n"), "socket inherited")

	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("the old process exited with a tunnel open: %v\n%s", err, p.output())
	default:
	}
	// The tunnel's close: the upstream ends its side, then the client.
	io.WriteString(ws, "bye\n")
	rest, err := io.ReadAll(br)
	assert.NoError(t, err)
	assert.Empty(t, rest)
	ws.Close()
	select {
	case err := <-exited:
		assert.NoError(t, err, "the old process exits cleanly")
	case <-time.After(15 * time.Second):
		t.Fatalf("the old process did not exit once drained:\n%s", p.output())
	}
	p.wait(`msg="drained; exiting" pid=`+strconv.Itoa(old.pid)+``, signalled)
	plain.past(t, 100)

	okP, failedP, errsP := plain.end()
	okH2, failedH2, errsH2 := h2.end()
	okH3, failedH3, errsH3 := h3.end()
	t.Logf("hand-over %v after SIGUSR2; HTTP/1.1 %d ok %d failed, HTTP/2 %d ok %d failed, HTTP/3 %d ok %d failed %q",
		handOver.Round(time.Millisecond), okP, failedP, okH2, failedH2, okH3, failedH3, errsH3)
	assert.Zero(t, failedP, "HTTP/1.1 errors: %q", errsP)
	assert.Zero(t, failedH2, "HTTP/2 errors: %q", errsH2)
	assert.Positive(t, okH3)
	res, _ := fetch(t, &http.Transport{DialContext: dialAlways(nu.http)}, "http://a.test/")
	assert.Equal(t, 200, res.StatusCode, "the new process serves after the old one left")
}

// TestUpgradeFailureKeepsTheOldServing: a new process that cannot start
// (its config is refused) exits, the old one logs it and serves on, and
// a later SIGUSR2 with the config fixed upgrades it.
func TestUpgradeFailureKeepsTheOldServing(t *testing.T) {
	up := echoUpstream(t)
	cfg, _ := upgradeDoc(t, up)
	good, err := os.ReadFile(cfg)
	require.NoError(t, err)
	p := startProc(t, []string{"-config", cfg, "-watch", "0", "-http", "127.0.0.1:0", "-https", "off", "-admin", "127.0.0.1:0", "-upgrade-grace", "5s", "-access-log", "off"}, nil, "")
	old, next := p.ready(0)
	plain := startLoad(2, func(int) http.RoundTripper { return &http.Transport{} }, "http://"+old.http+"/")
	plain.past(t, 50)

	require.NoError(t, os.WriteFile(cfg, []byte("hosts: [{names: [a.test], routes: [{upstream: nowhere}]}]\n"), 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGUSR2))
	m, next := p.wait(`msg="upgrade failed; this process keeps serving" pid=`+strconv.Itoa(old.pid)+` err="(.*)"`, next)
	assert.Contains(t, m[1], "exited")
	assert.Contains(t, p.output(), "config refused, nothing is serving", "the new process says why")
	plain.past(t, 50)
	res, _ := fetch(t, &http.Transport{DialContext: dialAlways(old.http)}, "http://a.test/")
	assert.Equal(t, 200, res.StatusCode, "the old process serves after the failed upgrade")

	require.NoError(t, os.WriteFile(cfg, good, 0o600))
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGUSR2))
	signalled := next
	nu, _ := p.ready(next)
	assert.NotEqual(t, old.pid, nu.pid)
	assert.Equal(t, old.http, nu.http)
	p.wait(`msg="drained; exiting" pid=`+strconv.Itoa(old.pid)+``, signalled)
	require.NoError(t, p.cmd.Wait())
	plain.past(t, 50)
	ok, failed, errs := plain.end()
	t.Logf("%d ok, %d failed across a failed and a good upgrade", ok, failed)
	assert.Zero(t, failed, "errors: %q", errs)
}

// TestSystemdSocketActivation: sockets passed as LISTEN_FDS and named by
// LISTEN_FDNAMES are served instead of binding, TCP and UDP (both of the
// HTTPS port named https, as one socket unit names them), and an upgrade
// passes them on.
func TestSystemdSocketActivation(t *testing.T) {
	up := echoUpstream(t)
	cfg, pool := upgradeDoc(t, up)
	plainLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// The kernel picks the TCP port alone; another port is tried when its
	// UDP side is taken.
	var tlsLn net.Listener
	var udp net.PacketConn
	for try := 0; ; try++ {
		tlsLn, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		if udp, err = net.ListenPacket("udp", tlsLn.Addr().String()); err == nil {
			break
		}
		tlsLn.Close()
		require.Less(t, try, 15, "no port with both sides free: %v", err)
	}
	var files []*os.File
	for _, s := range []interface{ File() (*os.File, error) }{plainLn.(*net.TCPListener), tlsLn.(*net.TCPListener), udp.(*net.UDPConn)} {
		f, err := s.File()
		require.NoError(t, err)
		files = append(files, f)
	}
	p := startProc(t, []string{"-config", cfg, "-watch", "0", "-http", "127.0.0.1:1", "-https", "127.0.0.1:1", "-admin", "127.0.0.1:0", "-access-log", "off"},
		files, `LISTEN_PID=$$ LISTEN_FDS=3 LISTEN_FDNAMES=http:https:https`)
	// The daemon has its own descriptors now.
	for _, f := range files {
		f.Close()
	}
	plainLn.Close()
	tlsLn.Close()
	udp.Close()
	s, next := p.ready(0)
	assert.Equal(t, plainLn.Addr().String(), s.http)
	assert.Equal(t, tlsLn.Addr().String(), s.https)
	assert.Equal(t, 3, strings.Count(p.output(), "socket from systemd"))

	check := func() {
		t.Helper()
		res, body := fetch(t, &http.Transport{DialContext: dialAlways(s.http)}, "http://a.test/")
		assert.Equal(t, 200, res.StatusCode)
		assert.Equal(t, "ok", body)
		h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, DialContext: dialAlways(s.https)}
		defer h2.CloseIdleConnections()
		res, _ = fetch(t, h2, "https://a.test/")
		assert.Equal(t, "HTTP/2.0", res.Proto)
		h3 := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			return quic.DialAddrEarly(ctx, s.https, tc, qc)
		}}
		defer h3.Close()
		res, _ = fetch(t, h3, "https://a.test/")
		assert.Equal(t, "HTTP/3.0", res.Proto)
	}
	check()

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGUSR2))
	nu, _ := p.ready(next)
	assert.NotEqual(t, s.pid, nu.pid)
	assert.Equal(t, s.http, nu.http)
	require.NoError(t, p.cmd.Wait())
	check()
}

// TestUpgradeTimeoutKillsTheNewProcess: a new process that does not
// serve within -upgrade-timeout is killed, and the old one serves on.
func TestUpgradeTimeoutKillsTheNewProcess(t *testing.T) {
	up := echoUpstream(t)
	cfg, _ := upgradeDoc(t, up)
	// No process can start, load its config and serve in a millisecond.
	p := startProc(t, []string{"-config", cfg, "-watch", "0", "-http", "127.0.0.1:0", "-https", "off", "-admin", "off", "-access-log", "off", "-upgrade-timeout", "1ms"}, nil, "")
	old, next := p.ready(0)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGUSR2))
	m, _ := p.wait(`msg="upgrade failed; this process keeps serving" pid=`+strconv.Itoa(old.pid)+` err="(.*)"`, next)
	assert.Regexp(t, `new child pid=\d+ timed out`, m[1])
	res, body := fetch(t, &http.Transport{DialContext: dialAlways(old.http)}, "http://a.test/")
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "ok", body)
}

// TestUpgradeDrainEndsOnSIGTERM: SIGTERM to a process draining after an
// upgrade ends its drain at once, tunnels and all, and the new process
// serves on.
func TestUpgradeDrainEndsOnSIGTERM(t *testing.T) {
	up := echoUpstream(t)
	cfg, _ := upgradeDoc(t, up)
	p := startProc(t, []string{"-config", cfg, "-watch", "0", "-http", "127.0.0.1:0", "-https", "off", "-admin", "off", "-access-log", "off", "-upgrade-grace", "1m"}, nil, "")
	old, next := p.ready(0)
	ws, br := tunnelThrough(t, old.http)
	echoLine(t, ws, br, "before")
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGUSR2))
	p.wait(`msg="handed over; draining" pid=`+strconv.Itoa(old.pid), next)
	nu, _ := p.ready(next)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("the draining process did not exit on SIGTERM")
	}
	_, err := io.ReadAll(br)
	assert.NoError(t, err, "the tunnel is closed")
	res, body := fetch(t, &http.Transport{DialContext: dialAlways(nu.http)}, "http://a.test/")
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "ok", body)
}
