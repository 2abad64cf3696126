package snapshot_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// embed is the README's embedding snippet, serving on ln instead of a
// fixed address: TestReadmeSnippetIsThisCode keeps the two the same.
func embed(ctx context.Context, configBytes []byte, ln net.Listener) (snapshot.Outcome, func()) {
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	o, err := pub.PublishData(configBytes).Wait(ctx)
	if err != nil || o.Status == snapshot.Refused {
		pub.Close()
		return o, func() {}
	}
	srv := &http.Server{Handler: store, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) // reads one snapshot per request
	return o, func() { srv.Close(); pub.Close() }
}

// TestReadmeSnippetIsThisCode: every statement of the README's embedding
// snippet is in embed, so the test below runs what the README shows.
func TestReadmeSnippetIsThisCode(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)Embedding the gateway in your own server:\n\n```go\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, m, "the README has no embedding snippet")
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	for line := range strings.Lines(string(m[1])) {
		stmt := strings.TrimSpace(line)
		if i := strings.Index(stmt, "//"); i >= 0 {
			stmt = strings.TrimSpace(stmt[:i])
		}
		if stmt == "" || strings.HasPrefix(stmt, "if ") || stmt == "}" || strings.HasPrefix(stmt, "http.ListenAndServe") || strings.HasPrefix(stmt, "defer ") {
			continue
		}
		assert.Contains(t, string(src), stmt, "the README's %q is not what the test runs", stmt)
	}
	assert.Contains(t, string(m[1]), "defer pub.Close()", "the snippet stops the health checks it starts")
}

// TestReadmeSnippetTakesADeadDestinationOut: with the README's wiring (no
// health monitor of the embedder's), a document's active health checks
// run, and a destination that died leaves the rotation: every request is
// answered by the live one.
func TestReadmeSnippetTakesADeadDestinationOut(t *testing.T) {
	live := upstreamNamed(t, "live")
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	dead.Close() // nothing listens there any more: connections are refused

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	o, stop := embed(ctx, []byte(`
hosts:
  - names: [app.example]
    routes: [{path: /, upstream: app}]
upstreams:
  - id: app
    destinations:
      - {id: live, address: "http://`+live+`"}
      - {id: dead, address: "http://`+deadAddr+`"}
    health:
      active: {enabled: true, interval: 50ms, timeout: 5s}
`), ln)
	defer stop()
	require.Equal(t, snapshot.Applied, o.Status, "%v", o.Errors)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	get := func() (int, string) {
		req, err := http.NewRequest("GET", "http://"+ln.Addr().String()+"/", nil)
		require.NoError(t, err)
		req.Host = "app.example"
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b := make([]byte, 64)
		n, _ := res.Body.Read(b)
		return res.StatusCode, string(b[:n])
	}
	// The probes mark the dead destination within a few intervals; until
	// then some requests may reach it and fail. Then 50 in a row succeed.
	deadline := time.Now().Add(20 * time.Second)
	ok := 0
	for ok < 50 {
		if time.Now().After(deadline) {
			t.Fatalf("the dead destination is still in rotation after 20 s (%d good answers in a row)", ok)
		}
		if status, body := get(); status == 200 && body == "live" {
			ok++
		} else {
			ok = 0
		}
	}
}

func upstreamNamed(t *testing.T, name string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(name)) }),
		ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}
