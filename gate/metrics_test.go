package gate

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/telemetry"
)

// records keeps a copy of every record it observes.
type records struct {
	mu  sync.Mutex
	all []telemetry.Record
}

func (o *records) ObserveRequest(rec *telemetry.Record) {
	o.mu.Lock()
	o.all = append(o.all, *rec)
	o.mu.Unlock()
}

func (o *records) take() []telemetry.Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	all := o.all
	o.all = nil
	return all
}

var hello = []byte("hello")

func recordGate(t *testing.T, obs, log telemetry.Observer, st *State) *Gate {
	t.Helper()
	target := TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {
		switch r.URL.Path {
		case "/early":
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, "made")
		case "/silent":
		case "/gone":
			rq.Record.Status, rq.Record.Error = 499, "clientAbort"
		default:
			w.Write(hello)
		}
	})
	g, err := New(Config{
		State:     st,
		Observer:  obs,
		AccessLog: log,
		Hosts: []Host{
			{Names: []string{"app.test", "www.app.test"}, Routes: []Route{
				{ID: "api", Prefix: "/api", Target: target},
				{Prefix: "/", Target: target},
				{Prefix: "/drop", Target: target, Policies: []PolicyUse{{Policy: dropPolicy{}}}},
			}},
			{Names: []string{"quiet.test"}, NoAccessLog: true, Routes: []Route{{Prefix: "/", Target: target}}},
			{Names: []string{"fixed.test"}, Kind: HostFixed, Fixed: Answer{Status: 410, Body: []byte("gone")}},
		},
	})
	require.NoError(t, err)
	return g
}

// getStatus runs one request through g on a real server and returns the
// status the client saw (0 for a dropped connection).
func getStatus(t *testing.T, srv *httptest.Server, host, path string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
	require.NoError(t, err)
	req.Host = host
	res, err := srv.Client().Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestRecordPerRequest: every request reaches the observer once, when it
// is finished, with the status and bytes the client got, whoever wrote
// them; the access log skips the hosts that ask for it; a drop is
// recorded as one.
func TestRecordPerRequest(t *testing.T) {
	obs, log := &records{}, &records{}
	st := new(State)
	srv := httptest.NewServer(recordGate(t, obs, log, st))
	defer srv.Close()
	// No keep-alive: the client retries an idempotent request whose
	// reused connection was dropped, which would make two records.
	srv.Client().Transport.(*http.Transport).DisableKeepAlives = true

	cases := []struct {
		host, path     string
		client, status int
		route, err     string
		bytes          int64
	}{
		{"app.test", "/api/x", 200, 200, "api", "", 5},
		{"WWW.app.test", "/", 200, 200, "/", "", 5},
		{"app.test", "/early", 201, 201, "/", "", 4},
		{"app.test", "/silent", 200, 200, "/", "", 0},
		{"app.test", "/gone", 200, 499, "/", "clientAbort", 0},
		{"app.test", "/drop/x", 0, 0, "/drop", "dropped", 0},
		{"fixed.test", "/", 410, 410, "", "", 4},
		{"nobody.test", "/", 404, 404, "", "", int64(len("not found\n"))},
		{"quiet.test", "/", 200, 200, "/", "", 5},
	}
	for _, c := range cases {
		require.Equal(t, c.client, getStatus(t, srv, c.host, c.path), "%s%s", c.host, c.path)
	}
	srv.Close() // waits for the handlers: every record is in

	got := obs.take()
	require.Len(t, got, len(cases))
	for i, c := range cases {
		r := got[i]
		assert.Equal(t, c.status, r.Status, "%d %s%s", i, c.host, c.path)
		assert.Equal(t, c.err, r.Error, "%d %s%s", i, c.host, c.path)
		assert.Equal(t, c.route, r.RouteID, "%d %s%s", i, c.host, c.path)
		assert.Equal(t, c.bytes, r.BytesOut, "%d %s%s", i, c.host, c.path)
		assert.Equal(t, c.host, r.Host)
		assert.Equal(t, c.path, r.Path)
		assert.Equal(t, "HTTP/1.1", r.Proto)
		assert.True(t, r.Client.IsLoopback())
		assert.Positive(t, r.Duration)
		assert.WithinDuration(t, time.Now(), r.Start, time.Minute)
	}
	assert.Equal(t, "app.test", got[1].HostID, "a host is labelled by its first name")
	assert.Empty(t, got[7].HostID, "an unknown host has no ID")
	assert.Len(t, log.take(), len(cases)-1, "quiet.test is left out of the access log")

	g := recordGate(t, nil, nil, st) // a later gate: same State, same metrics
	counts := map[string]uint64{}
	g.EachRoute(func(host, route string, m *RouteMetrics) {
		m.Requests.Each(func(code string, n uint64) { counts[host+" "+route+" "+code] += n })
	})
	assert.Equal(t, map[string]uint64{
		"app.test api 200": 1, "app.test / 200": 2, "app.test / 201": 1, "app.test / 499": 1,
		"app.test /drop 5xx": 1, "fixed.test (none) 4xx": 1, "(unknown)  404": 1, "quiet.test / 200": 1,
	}, counts)
	var policies []string
	g.EachPolicy(func(id string, m *PolicyMetrics) {
		policies = append(policies, id)
		assert.Equal(t, uint64(1), m.Blocked.Load())
	})
	assert.Equal(t, []string{"drop"}, policies)
}

// TestRecorderStatus: the recorder keeps the first final status (1xx
// answers before it are covered by TestRecordPerRequest's /early), 200
// for a body without a header, counts bytes through Write and
// WriteString, and passes flushes on.
func TestRecorderStatus(t *testing.T) {
	w := httptest.NewRecorder()
	rw := &recorder{w: w}
	rw.WriteHeader(http.StatusOK)
	rw.WriteHeader(http.StatusTeapot) // superfluous: ignored by net/http too
	assert.Equal(t, http.StatusOK, rw.status)
	rw.Write([]byte("abc"))
	io.WriteString(rw, "de")
	assert.Equal(t, int64(5), rw.bytes)
	assert.Equal(t, "abcde", w.Body.String())
	require.NoError(t, http.NewResponseController(rw).Flush())
	assert.True(t, w.Flushed)

	rw = &recorder{w: httptest.NewRecorder()}
	rw.Write([]byte("x"))
	assert.Equal(t, http.StatusOK, rw.status)
}

// TestMetricsRetain: a State forgets the metrics of the hosts and
// policies a serving gate no longer names, and keeps the rest.
func TestMetricsRetain(t *testing.T) {
	st := new(State)
	g1 := recordGate(t, nil, nil, st)
	st.RetainMetrics(g1) // a publish before: what it kept, the next one may drop
	w := newNopWriter()
	g1.ServeHTTP(w, readRequest(t, "GET /api HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.1:1"))
	g2, err := New(Config{State: st, Hosts: []Host{{Names: []string{"app.test"}, Routes: []Route{{ID: "api", Prefix: "/api", Target: &forwarded{}}}}}})
	require.NoError(t, err)
	st.RetainMetrics(g2)
	st.mu.Lock()
	n, p := len(st.routes), len(st.policies)
	st.mu.Unlock()
	assert.Equal(t, 3, n, "app.test's api and (none), and the unknown host")
	assert.Zero(t, p)
	var api uint64
	g2.EachRoute(func(host, route string, m *RouteMetrics) {
		if route == "api" {
			api = m.Requests.Load(200)
		}
	})
	assert.Equal(t, uint64(1), api, "a kept route keeps its counts")
}

// TestObserverAllocations: an observer on the path costs no allocation
// of the gate's.
func TestObserverAllocations(t *testing.T) {
	g := recordGate(t, nopObserver{}, nopObserver{}, nil)
	r := readRequest(t, "GET /api/x HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.1:1")
	w := newNopWriter()
	assert.Zero(t, testing.AllocsPerRun(200, func() {
		w.reset()
		g.ServeHTTP(w, r)
	}))
}

type nopObserver struct{}

func (nopObserver) ObserveRequest(*telemetry.Record) {}

// TestRateLimitReadsTheRequestStart: on the real clock a served request's
// rate-limit time is the gate's start of the request, the same time the
// clock tells (no second clock read), and a request without a start (a
// policy called by hand) reads the clock.
func TestRateLimitReadsTheRequestStart(t *testing.T) {
	rl, err := NewRateLimit(RateLimitConfig{ID: "rl", Requests: 1, Period: time.Second, Burst: 1})
	require.NoError(t, err)
	rq := &Request{start: sinceEpoch()}
	byStart, byClock := rl.nowFor(rq), rl.now()
	assert.LessOrEqual(t, byStart, byClock)
	assert.Less(t, byClock-byStart, uint64(time.Second), "the same clock, read a moment apart")
	rq.start = sinceEpoch() + time.Hour
	assert.Greater(t, rl.nowFor(rq), rl.now()+uint64(59*time.Minute), "the start is what counts")
	assert.InDelta(t, float64(rl.now()), float64(rl.nowFor(&Request{})), float64(time.Second))
}

// TestPolicyCountsOfAChain: a chain whose policies all continue counts
// one pass, which each policy's Allowed holds; a chain a policy stops
// counts the policies before it one by one; an Off use counts nothing,
// a shadowed block counts WouldBlock and the chain goes on; and a
// publish that drops the chain keeps every count.
func TestPolicyCountsOfAChain(t *testing.T) {
	a, b := &stub{id: "a"}, &stub{id: "b"}
	off := &stub{id: "off"}
	no := &stub{id: "no", d: Decision{Verdict: Respond, Page: statusPage(403, nil), Reason: "no"}}
	st := new(State)
	g, err := New(Config{State: st, Hosts: []Host{{
		Names:    []string{"app.test"},
		Policies: []PolicyUse{{Policy: a}, {Policy: off, Mode: Off}, {Policy: b}},
		Routes: []Route{
			{ID: "open", Prefix: "/open", Target: &forwarded{}},
			{ID: "shut", Prefix: "/shut", Target: &forwarded{}, Policies: []PolicyUse{{Policy: a}, {Policy: no, Mode: Shadow}, {Policy: b}, {Policy: no}}},
		},
	}}})
	require.NoError(t, err)
	w := newNopWriter()
	serve := func(g *Gate, path string, n int) {
		for range n {
			w.reset()
			g.ServeHTTP(w, readRequest(t, "GET "+path+" HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.1:1"))
		}
	}
	serve(g, "/open", 3)
	serve(g, "/shut", 2)
	require.Equal(t, 403, w.status)
	counts := func(g *Gate) map[string][3]uint64 {
		m := map[string][3]uint64{}
		g.EachPolicy(func(id string, pm *PolicyMetrics) {
			m[id] = [3]uint64{pm.Allowed.Load(), pm.Blocked.Load(), pm.WouldBlock.Load()}
		})
		return m
	}
	// a and b: 5 host passes and 2 on the route each; no: 2 shadowed, 2 blocked.
	want := map[string][3]uint64{"a": {7, 0, 0}, "b": {7, 0, 0}, "off": {0, 0, 0}, "no": {0, 2, 2}}
	assert.Equal(t, want, counts(g))
	assert.Equal(t, 0, off.calls)

	g2, err := New(Config{State: st, Hosts: []Host{{Names: []string{"app.test"}, Routes: []Route{
		{ID: "open", Prefix: "/open", Target: &forwarded{}, Policies: []PolicyUse{{Policy: b}, {Policy: a}}},
		{ID: "shut", Prefix: "/shut", Target: &forwarded{}, Policies: []PolicyUse{{Policy: no}}},
	}}}})
	require.NoError(t, err)
	st.RetainMetrics(g2)
	serve(g2, "/open", 1)
	delete(want, "off")
	want["a"], want["b"] = [3]uint64{8, 0, 0}, [3]uint64{8, 0, 0}
	assert.Equal(t, want, counts(g2), "the dropped chains' passes stay counted")
	st.mu.Lock()
	assert.Len(t, st.chains, 1, "only g2's chain of two")
	st.mu.Unlock()
}
