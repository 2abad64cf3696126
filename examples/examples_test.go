// The programs of this directory, each built with go build and run
// against loopback for a moment: a case sends each what its README line
// shows and checks the answer, not only that it started. A directory
// without a case fails the test.
package examples_test

import (
	"bufio"
	"bytes"
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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// wait bounds every wait of the smoke test: for a line, for an answer.
const wait = 15 * time.Second

// smoke is one program's case: its flags, and what to send it once it
// printed the line start waits for.
type smoke struct {
	args  []string
	check func(t *testing.T, p *program)
}

var cases = map[string]smoke{
	"edge": {
		args: []string{"-https", "127.0.0.1:0"},
		check: func(t *testing.T, p *program) {
			addr := p.await(t, `^listening on https://(127\.0\.0\.1:\d+) `)[1]
			caFile := p.await(t, `^certificate: (.+)$`)[1]
			pemData, err := os.ReadFile(caFile)
			if err != nil {
				t.Fatalf("the certificate the program printed: %v", err)
			}
			roots := x509.NewCertPool()
			if !roots.AppendCertsFromPEM(pemData) {
				t.Fatalf("%s holds no certificate", caFile)
			}
			trust := &tls.Config{RootCAs: roots, ServerName: "localhost"}
			h2 := &http.Transport{TLSClientConfig: trust, ForceAttemptHTTP2: true}
			defer h2.CloseIdleConnections()
			h3 := &http3.Transport{TLSClientConfig: trust}
			defer h3.Close()
			for proto, rt := range map[string]http.RoundTripper{"HTTP/2.0": h2, "HTTP/3.0": h3} {
				res, body := get(t, rt, "https://"+addr+"/", "localhost")
				if res.StatusCode != 200 || res.Proto != proto || body != "hello from the edge\n" {
					t.Errorf("over %s: %s %d %q", proto, res.Proto, res.StatusCode, body)
				}
				if _, port, _ := net.SplitHostPort(addr); proto == "HTTP/2.0" && res.Header.Get("Alt-Svc") != `h3=":`+port+`"; ma=86400` {
					t.Errorf("Alt-Svc %q: not the bound port %s", res.Header.Get("Alt-Svc"), port)
				}
			}
		},
	},
	"gatehandler": {
		args: []string{"-addr", "127.0.0.1:0", "-rate", "3"},
		check: func(t *testing.T, p *program) {
			base := "http://" + p.await(t, `^listening on http://(127\.0\.0\.1:\d+)$`)[1]
			for _, c := range []struct {
				path, host string
				status     int
				body       string
			}{
				{"/", "", 200, "hello from your own handler\n"},
				{"/wp-login.php", "", 403, "403 Forbidden\n"},
				{"/", "other.example", 404, "not found\n"},
				{"/nothing", "", 404, "404 page not found\n"}, // the handler's own 404
				{"/", "", 200, "hello from your own handler\n"},
				{"/", "", 429, "429 Too Many Requests\n"}, // the fourth the rate limit counts, over -rate 3
			} {
				res, body := get(t, http.DefaultTransport, base+c.path, c.host)
				if res.StatusCode != c.status || body != c.body {
					t.Errorf("GET %s (Host %q): %d %q, want %d %q", c.path, c.host, res.StatusCode, body, c.status, c.body)
				}
			}
		},
	},
	"proxyprotocol": {
		args: []string{"-addr", "127.0.0.1:0"},
		check: func(t *testing.T, p *program) {
			addr := p.await(t, `^listening on (127\.0\.0\.1:\d+) `)[1]
			c, err := net.DialTimeout("tcp", addr, wait)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(wait))
			io.WriteString(c, "PROXY TCP4 203.0.113.7 127.0.0.1 40000 9000\r\nhello\n")
			line, err := bufio.NewReader(c).ReadString('\n')
			if line != "203.0.113.7:40000 said: hello\n" {
				t.Errorf("echo: %q, %v", line, err)
			}
			p.await(t, `^203\.0\.113\.7:40000 via 127\.0\.0\.1:\d+: PROXY v1 TCP4$`)

			// No header: refused, nothing echoed.
			c2, err := net.DialTimeout("tcp", addr, wait)
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			c2.SetDeadline(time.Now().Add(wait))
			io.WriteString(c2, "hello\n")
			if b, err := io.ReadAll(c2); len(b) != 0 || err != nil {
				t.Errorf("a connection without a header got %q, %v; want it closed", b, err)
			}
		},
	},
	"balance": {
		args: []string{"-addr", "127.0.0.1:0", "-policy", "RoundRobin"},
		check: func(t *testing.T, p *program) {
			base := "http://" + p.await(t, `^listening on http://(127\.0\.0\.1:\d+) \(RoundRobin over 3 backends\)$`)[1]
			var got []string
			for range 4 {
				res, body := get(t, http.DefaultTransport, base+"/", "")
				if res.StatusCode != 200 {
					t.Errorf("%d %q", res.StatusCode, body)
				}
				got = append(got, body)
			}
			want := []string{"blue: hello from blue\n", "green: hello from green\n", "red: hello from red\n", "blue: hello from blue\n"}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("round robin answered %q, want %q", got, want)
			}
		},
	},
	"health": {
		args: []string{"-interval", "100ms", "-flap", "1s"},
		check: func(t *testing.T, p *program) {
			p.await(t, `^demo/steady active: unknown -> healthy \(probe passed with status 200\); available: flaky steady$`)
			p.await(t, `^demo/flaky active: healthy -> unhealthy \(2 consecutive probes failed, last: .*\); available: steady$`)
			p.await(t, `^demo/flaky active: unhealthy -> healthy \(probe passed with status 200\); available: flaky steady$`)
		},
	},
	"metrics": {
		args: []string{"-addr", "127.0.0.1:0", "-metrics", "127.0.0.1:0"},
		check: func(t *testing.T, p *program) {
			gw := "http://" + p.await(t, `^listening on http://(127\.0\.0\.1:\d+)$`)[1]
			metrics := p.await(t, `^metrics on (http://127\.0\.0\.1:\d+/metrics)$`)[1]
			for range 2 {
				if res, body := get(t, http.DefaultTransport, gw+"/", ""); res.StatusCode != 200 || body != "hello, counted\n" {
					t.Errorf("gateway: %d %q", res.StatusCode, body)
				}
			}
			_, body := get(t, http.DefaultTransport, metrics, "")
			for _, series := range []string{
				`myapp_build_info{version="dev"} 1`,
				`paduraksa_requests_total{code="200",host="localhost",route="(none)"} 2`,
				`paduraksa_config_revision 1`,
				`go_goroutines `,
			} {
				if !strings.Contains(body, "\n"+series) {
					t.Errorf("/metrics has no %s", series)
				}
			}
		},
	},
	"adminmux": {
		args: []string{"-addr", "127.0.0.1:0", "-prefix", "/ops/gateway"},
		check: func(t *testing.T, p *program) {
			base := "http://" + p.await(t, `^listening on http://(127\.0\.0\.1:\d+) \(admin API under /ops/gateway/\)$`)[1]
			if res, body := get(t, http.DefaultTransport, base+"/", ""); res.StatusCode != 200 || body != "hello, from the first document\n" {
				t.Errorf("before the push: %d %q", res.StatusCode, body)
			}
			doc := "hosts:\n  - names: [localhost, 127.0.0.1]\n    kind: fixed\n    fixed: {status: 200, body: \"hello, pushed\\n\"}\n"
			req, _ := http.NewRequest("PUT", base+"/ops/gateway/config", strings.NewReader(doc))
			res, body := do(t, http.DefaultTransport, req)
			if res.StatusCode != 200 || !strings.Contains(body, `"status": "applied"`) {
				t.Errorf("PUT /ops/gateway/config: %d %s", res.StatusCode, body)
			}
			if res, body := get(t, http.DefaultTransport, base+"/", ""); res.StatusCode != 200 || body != "hello, pushed\n" {
				t.Errorf("after the push: %d %q", res.StatusCode, body)
			}
			if res, body := get(t, http.DefaultTransport, base+"/version", ""); res.StatusCode != 200 || body != "myapp dev\n" {
				t.Errorf("the program's own handler: %d %q", res.StatusCode, body)
			}
		},
	},
	"paduraksad": {
		args: []string{"-http", "127.0.0.1:0", "-https", "off", "-admin", "off", "-access-log", "off"},
		check: func(t *testing.T, p *program) {
			base := "http://" + p.await(t, `^paduraksad listening on http://(127\.0\.0\.1:\d+)$`)[1]
			res, body := get(t, http.DefaultTransport, base+"/hello", "")
			if res.StatusCode != 200 || !strings.HasPrefix(body, "hello from the demo upstream\n") {
				t.Errorf("GET /hello: %d %q", res.StatusCode, body)
			}
		},
	},
}

func TestExamples(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "testdata" {
			dirs = append(dirs, e.Name())
			if _, ok := cases[e.Name()]; !ok {
				t.Errorf("examples/%s has no case in examples_test.go", e.Name())
			}
		}
	}
	for name := range cases {
		if _, err := os.Stat(filepath.Join(name, "main.go")); err != nil {
			t.Errorf("case %s names no program: %v", name, err)
		}
	}
	if t.Failed() {
		return
	}

	bin := t.TempDir()
	// One go build for all, without symbols: linking is most of the time.
	build := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin+string(filepath.Separator))
	for _, d := range dirs {
		build.Args = append(build.Args, "./"+d)
	}
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(build.Args, " "), err, out)
	}
	for _, d := range dirs {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			p := start(t, filepath.Join(bin, d), cases[d].args...)
			cases[d].check(t, p)
		})
	}
}

// program is a running example: the lines it printed on stdout, and
// stderr kept for failure messages.
type program struct {
	lines  chan string
	seen   []string
	mu     sync.Mutex
	stderr bytes.Buffer
}

// start runs bin with args until the test ends, then interrupts it and
// waits for it to exit.
func start(t *testing.T, bin string, args ...string) *program {
	t.Helper()
	p := &program{lines: make(chan string, 256)}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.stderr}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(wait):
			cmd.Process.Kill()
			<-done
			t.Errorf("%s did not exit within %v of an interrupt", filepath.Base(bin), wait)
		}
		if t.Failed() {
			p.mu.Lock()
			t.Logf("stdout:\n%s\nstderr:\n%s", strings.Join(p.seen, "\n"), p.stderr.String())
			p.mu.Unlock()
		}
	})
	return p
}

// await reads the program's lines until one matches pattern and returns
// its submatches; it fails the test when none does within wait.
func (p *program) await(t *testing.T, pattern string) []string {
	t.Helper()
	re := regexp.MustCompile(pattern)
	deadline := time.After(wait)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("the program's output ended without a line matching %s", pattern)
			}
			p.mu.Lock()
			p.seen = append(p.seen, line)
			p.mu.Unlock()
			if m := re.FindStringSubmatch(line); m != nil {
				return m
			}
		case <-deadline:
			t.Fatalf("no line matching %s within %v", pattern, wait)
		}
	}
}

// get sends GET url, with the Host header host when not empty, and
// returns the response and its body.
func get(t *testing.T, rt http.RoundTripper, url, host string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	return do(t, rt, req)
}

func do(t *testing.T, rt http.RoundTripper, req *http.Request) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	res, err := (&http.Client{Transport: rt}).Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// lockedWriter serialises the writes of a process's stderr with the
// reads of the failure message.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
