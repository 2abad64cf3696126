package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/promtest"
)

// heldBackend holds every request until release is closed, counting
// itself the requests it holds at once and the connections it accepted.
type heldBackend struct {
	addr                  string
	inFlight, maxInFlight atomic.Int64
	accepted              atomic.Int64
	arrived               chan struct{}
}

func raiseTo(max *atomic.Int64, n int64) {
	for m := max.Load(); n > m && !max.CompareAndSwap(m, n); m = max.Load() {
	}
}

func startHeldBackend(t *testing.T, release <-chan struct{}) *heldBackend {
	t.Helper()
	b := &heldBackend{arrived: make(chan struct{}, 256)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raiseTo(&b.maxInFlight, b.inFlight.Add(1))
		defer b.inFlight.Add(-1)
		b.arrived <- struct{}{}
		select {
		case <-release:
			io.WriteString(w, "ok")
		case <-r.Context().Done():
		}
	}), ReadHeaderTimeout: 10 * time.Second, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			b.accepted.Add(1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

type limitAnswer struct {
	status     int
	retryAfter string
}

// TestDaemonCircuitBreakers: 30 concurrent clients against a slow
// upstream with maxInFlight 5 and maxConnectionsPerDestination 3: the
// upstream, counting itself, holds at most 3 requests over at most 3
// connections; 25 clients get 503 with Retry-After: 1 while the upstream
// still holds its share, logged as overloaded and counted as trips; the
// 5 admitted are answered once it answers, and the destination's health
// never changed.
func TestDaemonCircuitBreakers(t *testing.T) {
	const clients = 30
	release := make(chan struct{})
	b := startHeldBackend(t, release)
	up := upstreamOf("slow", b.addr)
	up.Limits = config.UpstreamLimits{MaxInFlight: 5, MaxConnectionsPerDestination: 3}
	doc := config.Document{
		Hosts:     []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{ID: "web", Path: "/", Upstream: "slow"}}}},
		Upstreams: []config.Upstream{up},
	}
	file := filepath.Join(t.TempDir(), "access.log")
	d := startWithDoc(t, doc, "-access-log", file)

	answers := make(chan limitAnswer, clients)
	client := &http.Client{Transport: d.tr, Timeout: 10 * time.Second}
	for range clients {
		go func() {
			req, err := http.NewRequest("GET", "http://"+d.addr+"/", nil)
			if err != nil {
				answers <- limitAnswer{}
				return
			}
			req.Host = "app.test"
			res, err := client.Do(req)
			if err != nil {
				answers <- limitAnswer{}
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			answers <- limitAnswer{res.StatusCode, res.Header.Get("Retry-After")}
		}()
	}
	next := func() limitAnswer {
		select {
		case a := <-answers:
			return a
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		return limitAnswer{}
	}
	for range clients - 5 {
		a := next()
		assert.Equal(t, http.StatusServiceUnavailable, a.status)
		assert.Equal(t, "1", a.retryAfter)
	}
	for range 3 {
		<-b.arrived
	}
	assert.EqualValues(t, 3, b.inFlight.Load(), "the upstream holds its share while the others are refused")
	f := d.scrape(t)
	v, _ := promtest.Value(f, "paduraksa_upstream_limit_trips_total", "upstream", "slow", "limit", "maxInFlight")
	assert.EqualValues(t, clients-5, v)
	v, _ = promtest.Value(f, "paduraksa_upstream_limit_current", "upstream", "slow", "limit", "maxPending")
	assert.EqualValues(t, 2, v, "two wait for a connection")
	close(release)
	for range 5 {
		assert.Equal(t, http.StatusOK, next().status)
	}
	assert.EqualValues(t, 3, b.maxInFlight.Load(), "the upstream's own count of requests at once")
	assert.EqualValues(t, 3, b.accepted.Load(), "the upstream's own count of connections")
	f = d.scrape(t)
	v, _ = promtest.Value(f, "paduraksa_destination_health_changes_total", "upstream", "slow", "destination", "d0")
	assert.Zero(t, v)

	var overloaded int
	waitFor(t, "the access-log records", func() bool {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		recs := accessRecords(t, string(data))
		overloaded = 0
		for _, r := range recs {
			if r["error"] == "overloaded" {
				overloaded++
				assert.EqualValues(t, 503, r["status"])
			}
		}
		return len(recs) >= clients
	})
	assert.Equal(t, clients-5, overloaded)
}
