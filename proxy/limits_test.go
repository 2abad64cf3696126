package proxy_test

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/upstream"
)

// countingUpstream holds every request until release is closed and
// counts, itself, the requests it holds at once and the connections it
// accepted and holds open.
type countingUpstream struct {
	addr                  string
	inFlight, maxInFlight atomic.Int64
	open, maxOpen         atomic.Int64
	accepted              atomic.Int64
	arrivals              chan struct{}
}

func raise(max *atomic.Int64, n int64) {
	for m := max.Load(); n > m && !max.CompareAndSwap(m, n); m = max.Load() {
	}
}

func startCounting(t *testing.T, release <-chan struct{}) *countingUpstream {
	t.Helper()
	u := &countingUpstream{arrivals: make(chan struct{}, 256)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u.addr = ln.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raise(&u.maxInFlight, u.inFlight.Add(1))
		defer u.inFlight.Add(-1)
		u.arrivals <- struct{}{}
		select {
		case <-release:
			w.Write([]byte("ok"))
		case <-r.Context().Done():
		}
	}), ReadHeaderTimeout: patience, ConnState: func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			u.accepted.Add(1)
			raise(&u.maxOpen, u.open.Add(1))
		case http.StateClosed, http.StateHijacked:
			u.open.Add(-1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return u
}

// outcomes errorKinds what the cluster's observer is told.
type outcomes struct {
	mu   sync.Mutex
	seen []upstream.Outcome
}

func (o *outcomes) Observe(ob upstream.Observation) {
	o.mu.Lock()
	o.seen = append(o.seen, ob.Outcome)
	o.mu.Unlock()
}

// errorKinds keeps the error kinds of the gate's errorKinds by status.
type errorKinds struct {
	mu    sync.Mutex
	kinds map[int][]string
}

func (r *errorKinds) ObserveRequest(rec *telemetry.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.kinds == nil {
		r.kinds = map[int][]string{}
	}
	r.kinds[rec.Status] = append(r.kinds[rec.Status], rec.Error)
}

// flood sends n concurrent GETs to the gateway at addr; each result is
// its status and Retry-After, and how long it took.
type answer struct {
	status     int
	retryAfter string
	took       time.Duration
}

func flood(t *testing.T, addr string, n int) <-chan answer {
	t.Helper()
	out := make(chan answer, n)
	for range n {
		go func() {
			start := time.Now()
			req := mustReq("GET", "http://"+addr+"/")
			req.Host = "app.test"
			res, err := roundTrip(t, clientTransport(t), req)
			if err != nil {
				out <- answer{took: time.Since(start)}
				return
			}
			res.Body.Close()
			out <- answer{res.StatusCode, res.Header.Get("Retry-After"), time.Since(start)}
		}()
	}
	return out
}

// TestMaxInFlightAnswers503AtOnce: a flood of 40 clients against a slow
// upstream behind maxInFlight 4: the upstream, counting itself, never
// holds more than 4; the 36 others are answered 503 with Retry-After
// while those 4 are still held, logged as overloaded, counted as trips,
// and never reported to health.
func TestMaxInFlightAnswers503AtOnce(t *testing.T) {
	const clients, limit = 40, 4
	release := make(chan struct{})
	u := startCounting(t, release)
	stats, obs, recs := new(proxy.Stats), new(outcomes), new(errorKinds)
	addr, cl := setup{stats: stats, observer: obs, cfg: gate.Config{Observer: recs},
		limits: proxy.Limits{MaxInFlight: limit}}.start(t, u.addr)
	answers := flood(t, addr, clients)
	for range clients - limit {
		a := recv(t, answers)
		assert.Equal(t, http.StatusServiceUnavailable, a.status)
		assert.Equal(t, proxy.OverloadRetryAfter, a.retryAfter)
	}
	for range limit {
		recv(t, (<-chan struct{})(u.arrivals))
	}
	assert.EqualValues(t, limit, u.inFlight.Load(), "the upstream still holds its share")
	assert.EqualValues(t, limit, stats.InFlight())
	close(release)
	for range limit {
		assert.Equal(t, http.StatusOK, recv(t, answers).status)
	}
	assert.EqualValues(t, limit, u.maxInFlight.Load(), "the upstream's own count")
	assert.EqualValues(t, clients-limit, stats.Trips(proxy.LimitInFlight))
	assert.Zero(t, stats.InFlight())
	recs.mu.Lock()
	assert.Len(t, recs.kinds[503], clients-limit)
	for _, k := range recs.kinds[503] {
		assert.Equal(t, proxy.ErrorOverloaded, k)
	}
	recs.mu.Unlock()
	obs.mu.Lock()
	assert.Equal(t, []upstream.Outcome{upstream.Success, upstream.Success, upstream.Success, upstream.Success}, obs.seen)
	obs.mu.Unlock()
	d := cl.Upstream.Destination("a")
	assert.Equal(t, upstream.Unknown, d.Health())
	assert.Zero(t, d.InFlight())
}

// TestMaxConnsPerDestinationObservedByUpstream: twelve concurrent
// requests through a cluster bounded to 3 connections per destination
// all get their answer, over at most 3 connections the upstream
// accepted.
func TestMaxConnsPerDestinationObservedByUpstream(t *testing.T) {
	const clients, limit = 12, 3
	release := make(chan struct{})
	u := startCounting(t, release)
	addr, cl := setup{stats: new(proxy.Stats), client: proxy.ClientConfig{MaxConnsPerDestination: limit}}.start(t, u.addr)
	answers := flood(t, addr, clients)
	for range limit {
		recv(t, (<-chan struct{})(u.arrivals))
	}
	if proxy.DefaultHTTP1() == proxy.HTTP1Direct {
		// net/http's client keeps its waiting to itself.
		tr := cl.Transport.(*proxy.Transport)
		require.Eventually(t, func() bool { return tr.Pending() == clients-limit }, patience, time.Millisecond)
	}
	close(release)
	for range clients {
		assert.Equal(t, http.StatusOK, recv(t, answers).status)
	}
	assert.EqualValues(t, limit, u.maxOpen.Load(), "connections the upstream held at once")
	assert.EqualValues(t, limit, u.accepted.Load(), "connections the upstream accepted")
	assert.EqualValues(t, limit, u.maxInFlight.Load())
}

// TestMaxPendingAnswers503AtOnce: with one connection per destination and
// two requests allowed to wait for it, a flood gets 503 at once past
// those, counted as maxPending trips; the held one and the two waiting
// are answered once the upstream answers. Only the direct client counts
// requests waiting for a connection (see ClientConfig.MaxPending).
func TestMaxPendingAnswers503AtOnce(t *testing.T) {
	if proxy.DefaultHTTP1() != proxy.HTTP1Direct {
		t.Skip("the pending count is the direct client's")
	}
	const clients = 10
	release := make(chan struct{})
	u := startCounting(t, release)
	stats := new(proxy.Stats)
	addr, _ := setup{stats: stats, observer: new(outcomes),
		client: proxy.ClientConfig{MaxConnsPerDestination: 1, MaxPending: 2}}.start(t, u.addr)
	// The first holds the connection (its dial waited too, so the
	// flood starts once it arrived).
	first := flood(t, addr, 1)
	recv(t, (<-chan struct{})(u.arrivals))
	answers := flood(t, addr, clients-1)
	for range clients - 3 {
		a := recv(t, answers)
		assert.Equal(t, http.StatusServiceUnavailable, a.status)
		assert.Equal(t, proxy.OverloadRetryAfter, a.retryAfter)
	}
	close(release)
	assert.Equal(t, http.StatusOK, recv(t, first).status)
	for range 2 {
		assert.Equal(t, http.StatusOK, recv(t, answers).status)
	}
	assert.EqualValues(t, clients-3, stats.Trips(proxy.LimitPending))
	assert.EqualValues(t, 1, u.accepted.Load())
}

// TestMaxRetriesInFlight: with one retry allowed in flight, of five
// requests refused by their first destination one is retried (and
// answered by the second once it answers), the four others get the
// refusal's 502 without a retry, counted as trips.
func TestMaxRetriesInFlight(t *testing.T) {
	const clients = 5
	release := make(chan struct{})
	u := startCounting(t, release)
	dead := closedPort(t)
	stats := new(proxy.Stats)
	addr, _ := setup{stats: stats, route: proxy.RouteConfig{Retry: proxy.Retry{Attempts: 1}},
		limits: proxy.Limits{MaxRetriesInFlight: 1}}.start(t, dead, u.addr)
	answers := flood(t, addr, clients)
	recv(t, (<-chan struct{})(u.arrivals))
	for range clients - 1 {
		assert.Equal(t, http.StatusBadGateway, recv(t, answers).status)
	}
	assert.EqualValues(t, 1, stats.RetriesInFlight())
	close(release)
	assert.Equal(t, http.StatusOK, recv(t, answers).status)
	assert.EqualValues(t, clients-1, stats.Trips(proxy.LimitRetries))
	assert.EqualValues(t, 1, stats.Retries())
	assert.Zero(t, stats.RetriesInFlight())
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestLimitsAreChecked: a negative or too large threshold is refused at
// its path, and so are limits without Stats to count them.
func TestLimitsAreChecked(t *testing.T) {
	assert.Equal(t, []string{proxy.CodeLimitInvalid + " maxInFlight", proxy.CodeLimitInvalid + " maxRetriesInFlight"},
		problemsOf(proxy.CheckLimits(proxy.Limits{MaxInFlight: -1, MaxRetriesInFlight: proxy.MaxLimit + 1})))
	assert.Equal(t, []string{proxy.CodeLimitInvalid + " maxConnsPerDestination", proxy.CodeLimitInvalid + " maxPending"},
		problemsOf(proxy.ClientConfig{MaxConnsPerDestination: -2, MaxPending: -1}.Validate()))
	var reg upstream.Registry
	reg.Plan([]upstream.ClusterConfig{{ID: "c"}}).Commit()
	_, err := proxy.NewRoute(proxy.RouteConfig{Cluster: &proxy.Cluster{Upstream: reg.Cluster("c"),
		Transport: proxy.NewTransport(proxy.ClientConfig{}), Limits: proxy.Limits{MaxInFlight: 1}}})
	assert.Equal(t, []string{proxy.CodeLimitsStatsMissing + " cluster.stats"}, problemsOf(err))
	assert.Equal(t, []string{"maxInFlight", "maxPending", "maxRetriesInFlight", "maxConnectionsPerDestination"}, proxy.LimitNames())
}
