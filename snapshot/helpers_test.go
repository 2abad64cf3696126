package snapshot

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/problem/problemtest"
	"github.com/stretchr/testify/require"
)

// backend is a real upstream server on loopback that names itself in
// every answer.
type backend struct {
	name string
	addr string
	hits atomic.Int64
	srv  *http.Server
}

func startBackend(t testing.TB, name string) *backend {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b := &backend{name: name, addr: ln.Addr().String()}
	b.srv = &http.Server{Handler: http.HandlerFunc(b.serve), ReadHeaderTimeout: 10 * time.Second}
	go b.srv.Serve(ln)
	t.Cleanup(func() { b.srv.Close() })
	return b
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	b.hits.Add(1)
	io.Copy(io.Discard, r.Body)
	w.Header().Set("X-Backend", b.name)
	fmt.Fprintf(w, "%s %s", b.name, r.URL.Path)
}

// fleet builds a document of n hosts h<i>.test, each with one route to its
// own upstream u<i> whose destinations point at the given backends.
func fleet(n int, backends ...*backend) *config.Document {
	doc := &config.Document{}
	for i := range n {
		doc.Hosts = append(doc.Hosts, config.Host{
			Names:  []string{fmt.Sprintf("h%d.test", i)},
			Routes: []config.Route{{ID: "r", Path: "/", Upstream: fmt.Sprintf("u%d", i)}},
		})
		u := config.Upstream{ID: fmt.Sprintf("u%d", i)}
		for j := range 2 {
			b := backends[(i+j)%len(backends)]
			u.Destinations = append(u.Destinations, config.Destination{ID: fmt.Sprintf("d%d", j), Address: "http://" + b.addr})
		}
		doc.Upstreams = append(doc.Upstreams, u)
	}
	return doc
}

// clone deep-copies the parts of a document the tests change.
func clone(d *config.Document) *config.Document {
	c := *d
	c.Hosts = append([]config.Host(nil), d.Hosts...)
	for i := range c.Hosts {
		c.Hosts[i].Routes = append([]config.Route(nil), c.Hosts[i].Routes...)
	}
	c.Upstreams = append([]config.Upstream(nil), d.Upstreams...)
	for i := range c.Upstreams {
		c.Upstreams[i].Destinations = append([]config.Destination(nil), c.Upstreams[i].Destinations...)
	}
	return &c
}

// serve starts a real HTTP server on loopback in front of h (a store or a
// snapshot).
func serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// newClient returns a client with its own transport, closed when the test
// ends, and a timeout that bounds every request and body read.
func newClient(t testing.TB) *http.Client {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 128, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// testContext returns a context that ends a minute after it was made or
// with the test, so that a publish that never completes fails its test.
func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// within runs f and fails the test when it has not returned after limit.
func within(t testing.TB, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("still waiting after %v", limit)
	}
}

// receive returns the next value from ch, failing the test when none comes
// within limit.
func receive[T any](t testing.TB, ch <-chan T, limit time.Duration) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(limit):
		t.Fatalf("nothing received within %v", limit)
	}
	var zero T
	return zero
}

// get sends a request for host through the proxy and returns status and body.
func get(t testing.TB, c *http.Client, proxy, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+proxy+path, nil)
	require.NoError(t, err)
	req.Host = host
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, strings.TrimSpace(string(body))
}

// The tests' readings of problems (problemtest): "code path" for each,
// failing on an error that is no problem.
var (
	problemList    = problemtest.List
	strictProblems = problemtest.Problems
	codePaths      = problemtest.CodePaths
)
