package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a log sink tests can read while the daemon writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type daemon struct {
	addr    string
	out     *syncBuffer
	logs    *syncBuffer
	reload  chan os.Signal
	done    chan error
	cancel  context.CancelFunc
	tr      *http.Transport // the daemon's clients', closed with it
	tlsAddr string          // the HTTPS address, "" when none (set before addr is)
	admin   string          // the admin API's address, "" when off (set before addr is)
}

func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{out: &syncBuffer{}, logs: &syncBuffer{}, reload: make(chan os.Signal, 1), done: make(chan error, 1), cancel: cancel,
		tr: &http.Transport{}}
	t.Cleanup(d.tr.CloseIdleConnections)
	ready := make(chan string, 1)
	go func() {
		base := []string{"-listen", "127.0.0.1:0"}
		if !slices.Contains(args, "-config") && !slices.Contains(args, "-https") {
			base = append(base, "-https", "127.0.0.1:0") // the demo's HTTPS, on a port of its own
		}
		if !slices.Contains(args, "-admin") {
			base = append(base, "-admin", "127.0.0.1:0")
		}
		d.done <- run(ctx, append(base, args...), options{
			stdout: d.out, stderr: d.logs, reload: d.reload,
			ready:      func(a string) { ready <- a },
			readyTLS:   func(a string) { d.tlsAddr = a },
			readyAdmin: func(a string) { d.admin = a },
			logger:     slog.New(slog.NewTextHandler(d.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
	}()
	select {
	case d.addr = <-ready:
	case err := <-d.done:
		t.Fatalf("daemon stopped: %v\n%s", err, d.logs)
	case <-time.After(10 * time.Second):
		t.Fatal("daemon did not start")
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-d.done:
			assert.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Error("daemon did not shut down")
		}
	})
	return d
}

func (d *daemon) get(t *testing.T, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+d.addr+path, nil)
	require.NoError(t, err)
	req.Host = host
	c := &http.Client{Transport: d.tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

func TestDaemonEmbeddedDefault(t *testing.T) {
	d := startDaemon(t)
	assert.Contains(t, d.out.String(), "curl -i http://"+d.addr+"/hello")

	status, body := d.get(t, "localhost", "/hello")
	assert.Equal(t, 200, status)
	assert.Contains(t, body, "hello from the demo upstream")
	assert.Contains(t, body, "GET /hello HTTP/1.1")
	assert.Contains(t, body, "X-Forwarded-For: 127.0.0.1")

	status, _ = d.get(t, "old.localhost", "/x")
	assert.Equal(t, 308, status)
	status, body = d.get(t, "status.localhost", "/")
	assert.Equal(t, 200, status)
	assert.Equal(t, "ok\n", body)
	status, _ = d.get(t, "unknown.example", "/")
	assert.Equal(t, 404, status)
}

// upstreamServer answers with its name.
func upstreamServer(t *testing.T, name string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, name) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func writeConfig(t *testing.T, path, upstreamAddr, hostName string) {
	doc := fmt.Sprintf(`hosts:
  - names: [%s]
    routes:
      - path: /
        upstream: app
upstreams:
  - id: app
    destinations:
      - id: one
        address: http://%s
`, hostName, upstreamAddr)
	// Write to a temporary file and rename, so a reload never reads half a file.
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(doc), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

// waitFor polls cond until it holds; the daemon's reload is an event in
// another process-like loop, observed through its answers.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestDaemonConfigFileReload(t *testing.T) {
	a, b := upstreamServer(t, "A"), upstreamServer(t, "B")
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	writeConfig(t, path, a, "app.test")
	d := startDaemon(t, "-config", path, "-watch", "20ms")

	status, body := d.get(t, "app.test", "/")
	require.Equal(t, 200, status)
	require.Equal(t, "A", body)

	// A change to the file is served.
	writeConfig(t, path, b, "app.test")
	waitFor(t, "the new upstream", func() bool { _, body := d.get(t, "app.test", "/"); return body == "B" })

	// A refused change is logged with every error; the old config keeps serving.
	require.NoError(t, os.WriteFile(path, []byte("hosts:\n  - names: [app.test]\n    routes: [{path: /, upstream: missing}]\n    bogus: 1\n"), 0o644))
	waitFor(t, "the refusal in the log", func() bool { return strings.Contains(d.logs.String(), "config refused") })
	assert.Contains(t, d.logs.String(), "document.field.unknown")
	status, body = d.get(t, "app.test", "/")
	assert.Equal(t, 200, status)
	assert.Equal(t, "B", body)

	// SIGHUP reloads too.
	writeConfig(t, path, a, "other.test")
	d.reload <- os.Interrupt // any value: the daemon only reads the event
	waitFor(t, "the renamed host", func() bool { s, _ := d.get(t, "other.test", "/"); return s == 200 })
	status, _ = d.get(t, "app.test", "/")
	assert.Equal(t, 404, status)
}

// TestDaemonLogsARefusedReloadOnce: a refused change of the file is one
// log line with every problem in it, the publisher's; the file's own
// line for it and a line per problem are not written besides.
func TestDaemonLogsARefusedReloadOnce(t *testing.T) {
	a := upstreamServer(t, "A")
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	writeConfig(t, path, a, "app.test")
	d := startDaemon(t, "-config", path, "-watch", "20ms")
	require.NoError(t, os.WriteFile(path, []byte("hosts:\n  - names: [app.test]\n    routes: [{path: /, upstream: missing}]\n    bogus: 1\n"), 0o644))
	waitFor(t, "the refusal in the log", func() bool { return strings.Contains(d.logs.String(), "config refused") })
	// The file logs its reloads in turn: once the next one is in the log,
	// the refused one's would be too.
	writeConfig(t, path, a, "other.test")
	waitFor(t, "the next reload", func() bool { return strings.Contains(d.logs.String(), "why=change revision=3 status=applied") })
	var refusals []string
	for line := range strings.SplitSeq(d.logs.String(), "\n") {
		if strings.Contains(line, "refused") || strings.Contains(line, "config problem") {
			refusals = append(refusals, line)
		}
	}
	require.Len(t, refusals, 1, "%q", refusals)
	assert.Contains(t, refusals[0], "problems=2")
	assert.Contains(t, refusals[0], "(document.field.unknown)")
	assert.Contains(t, refusals[0], "(route.upstream.unknown)")
}

// TestDaemonReloadsOnSIGHUP: with the watch off, the file is read again
// on SIGHUP alone, and SIGHUP publishes it even unchanged.
func TestDaemonReloadsOnSIGHUP(t *testing.T) {
	a := upstreamServer(t, "A")
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	writeConfig(t, path, a, "app.test")
	d := startDaemon(t, "-config", path, "-watch", "0")
	d.reload <- os.Interrupt
	waitFor(t, "the unchanged reload", func() bool {
		return strings.Contains(d.logs.String(), "why=reload revision=1 status=unchanged")
	})
	writeConfig(t, path, a, "other.test")
	d.reload <- os.Interrupt
	waitFor(t, "the renamed host", func() bool { s, _ := d.get(t, "other.test", "/"); return s == 200 })
	status, _ := d.get(t, "app.test", "/")
	assert.Equal(t, 404, status)
}

func TestDaemonRefusesBadConfigAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"hosts":[{"names":["a.test"],"routes":[{"upstream":"nope"}]}]}`), 0o644))
	var out, logs syncBuffer
	err := run(context.Background(), []string{"-config", path, "-listen", "127.0.0.1:0"}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "route.upstream.unknown")
}

func TestDaemonProxyProtocolAndDenyList(t *testing.T) {
	d := startDaemon(t, "-proxy-protocol-from", "127.0.0.0/8")
	conn, err := net.Dial("tcp", d.addr)
	require.NoError(t, err)
	defer conn.Close()
	// The load balancer says the client is 203.0.113.7; the demo upstream
	// echoes X-Forwarded-For.
	_, err = io.WriteString(conn, "PROXY TCP4 203.0.113.7 127.0.0.1 51000 80\r\nGET /pp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
	require.NoError(t, err)
	b, err := io.ReadAll(conn)
	require.NoError(t, err)
	assert.Contains(t, string(b), "200 OK")
	assert.Contains(t, string(b), "X-Forwarded-For: 203.0.113.7")

	// Without a header, a connection from a configured load balancer is refused.
	plain, err := net.Dial("tcp", d.addr)
	require.NoError(t, err)
	defer plain.Close()
	io.WriteString(plain, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	b, _ = io.ReadAll(plain)
	assert.NotContains(t, string(b), "200 OK")

	denied := startDaemon(t, "-deny", "127.0.0.0/8")
	c, err := net.Dial("tcp", denied.addr)
	require.NoError(t, err)
	defer c.Close()
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	b, _ = io.ReadAll(c)
	assert.Empty(t, b, "a denied address is closed before anything is read")
}

// TestDaemonRefusesACMEWithoutHTTP: ACME's HTTP-01 challenges are
// answered on the plain HTTP listener, so -acme-directory without -http
// is refused at start rather than ordering certificates that can never
// be validated.
func TestDaemonRefusesACMEWithoutHTTP(t *testing.T) {
	var out, logs syncBuffer
	err := run(context.Background(), []string{"-http", "", "-https", "127.0.0.1:0", "-admin", "off", "-acme-directory", "https://127.0.0.1:1/dir"}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-acme-directory needs -http")
	assert.Empty(t, out.String(), "nothing was served")
}

// TestDaemonLogsEachWarningOnce: a warning of the serving config is
// logged when it first appears, not again at every reload that keeps
// it, and again once it came back after a config without it.
func TestDaemonLogsEachWarningOnce(t *testing.T) {
	a := upstreamServer(t, "A")
	warns := func(host string) string {
		return "hosts:\n  - names: [" + host + "]\n    routes: [{path: /, upstream: app}]\n" +
			"upstreams:\n  - id: app\n    http: {version: \"2\"}\n    destinations:\n" +
			"      - {id: plain, address: \"http://" + a + "\"}\n      - {id: tls, address: \"https://127.0.0.1:1\"}\n"
	}
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	require.NoError(t, os.WriteFile(path, []byte(warns("one.test")), 0o644))
	d := startDaemon(t, "-config", path, "-watch", "0")
	count := func() int { return strings.Count(d.logs.String(), "msg=\"config warning\"") }
	require.Equal(t, 1, count(), "%s", d.logs)
	require.NoError(t, os.WriteFile(path, []byte(warns("two.test")), 0o644))
	d.reload <- os.Interrupt
	waitFor(t, "the second config", func() bool { return strings.Contains(d.logs.String(), "revision=2") })
	assert.Equal(t, 1, count(), "the same warning is not logged again")
	assert.Contains(t, d.logs.String(), "revision=2 took=")
	writeConfig(t, path, a, "three.test")
	d.reload <- os.Interrupt
	waitFor(t, "the config without it", func() bool { return strings.Contains(d.logs.String(), "revision=3") })
	require.NoError(t, os.WriteFile(path, []byte(warns("four.test")), 0o644))
	d.reload <- os.Interrupt
	waitFor(t, "the warning back", func() bool { return count() == 2 })
}
