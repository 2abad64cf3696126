package health

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/require"
)

func dest(id, host string) upstream.DestinationConfig {
	return upstream.DestinationConfig{ID: id, Scheme: "http", Host: host}
}

// newCluster publishes one cluster "c" and returns it.
func newCluster(t testing.TB, dests ...upstream.DestinationConfig) (*upstream.Registry, *upstream.Cluster) {
	t.Helper()
	r := new(upstream.Registry)
	r.Plan([]upstream.ClusterConfig{{ID: "c", Destinations: dests}}).Commit()
	return r, r.Cluster("c")
}

// watch subscribes to m's changes.
func watch(t testing.TB, m *Monitor) chan Change {
	ch := make(chan Change, 1000)
	cancel := m.Subscribe(func(c Change) { ch <- c })
	t.Cleanup(cancel)
	return ch
}

// await returns the first change that matches, failing the test if none
// comes within limit (a guard against hanging, not a synchronisation).
func await(t testing.TB, ch chan Change, limit time.Duration, match func(Change) bool) Change {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case c := <-ch:
			if match(c) {
				return c
			}
		case <-deadline:
			require.FailNow(t, "no matching health change")
		}
	}
}

// awaitAll waits for changes matching every predicate, in any order.
func awaitAll(t testing.TB, ch chan Change, limit time.Duration, match ...func(Change) bool) {
	t.Helper()
	deadline := time.After(limit)
	left := len(match)
	done := make([]bool, len(match))
	for left > 0 {
		select {
		case c := <-ch:
			for i, f := range match {
				if !done[i] && f(c) {
					done[i] = true
					left--
					break
				}
			}
		case <-deadline:
			require.FailNow(t, "missing health changes", "%d of %d never came", left, len(match))
		}
	}
}

func is(id string, k CheckKind, s upstream.HealthState) func(Change) bool {
	return func(c Change) bool { return c.DestinationID == id && c.Check == k && c.New == s }
}

func ids(ds []*upstream.Destination) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID())
	}
	return out
}

// logBuffer is a concurrency-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, nil))
}

func (l *logBuffer) has(s string) bool { return strings.Contains(l.String(), s) }

// countingTransport counts the round trips it forwards.
type countingTransport struct {
	base http.RoundTripper
	mu   sync.Mutex
	n    int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.base.RoundTrip(r)
}

func (c *countingTransport) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// observe tells m that an exchange with d ended with o, without a status.
func observe(m *Monitor, d *upstream.Destination, o upstream.Outcome) {
	m.Observe(upstream.Observation{Destination: d, Outcome: o})
}

// transport returns a transport of the test's own, closed when it ends.
func transport(t testing.TB) *http.Transport {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// refusedAddr returns a loopback address that refuses connections for the
// whole test: its port is the local end of an open connection, which no
// listener can bind (unlike a port whose listener was closed, which anyone
// may take again).
func refusedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	peer, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { peer.Close() })
	return c.LocalAddr().String()
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

// problems returns the path and code of each *ValidationError, and fails the
// test on an error of another type or two problems at one path, which a
// map by path would hide.
func problems(t testing.TB, errs []error) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, err := range errs {
		var v *ValidationError
		if !errors.As(err, &v) {
			t.Errorf("not a *ValidationError: %T %v", err, err)
			continue
		}
		if prev, dup := out[v.Path]; dup {
			t.Errorf("two problems at %s: %s and %s", v.Path, prev, v.Code)
		}
		out[v.Path] = v.Code
	}
	return out
}

// fakeTransport answers probes in memory with the status its function
// gives for the request's host; for tests inside a synctest bubble.
type fakeTransport func(host string) int

func (f fakeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: f(r.URL.Host), Body: http.NoBody, Request: r}, nil
}
