package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/upstream"
)

// copyOf is what a mirror upstream received.
type copyOf struct {
	method, uri, host, body, rule, xff, te string
}

// mirrorSink serves an upstream that sends every request it gets on the
// returned channel and answers 500 with a header the client must never
// see; hold, when not nil, is waited on before answering.
func mirrorSink(t testing.TB, hold <-chan struct{}) (string, <-chan copyOf) {
	t.Helper()
	ch := make(chan copyOf, 64)
	addr := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- copyOf{r.Method, r.RequestURI, r.Host, string(b), r.Header.Get("X-Rule"), r.Header.Get("X-Forwarded-For"), r.Header.Get("Te")}
		if hold != nil {
			<-hold
		}
		w.Header().Set("X-Mirror", "leaked")
		w.WriteHeader(500)
	}))
	return addr, ch
}

// chanObserver sends each observation on its channel.
type chanObserver chan upstream.Observation

func (c chanObserver) Observe(o upstream.Observation) { c <- o }

// recordObserver keeps the records of finished requests.
type recordObserver struct {
	mu   sync.Mutex
	recs []telemetry.Record
}

func (o *recordObserver) ObserveRequest(rec *telemetry.Record) {
	o.mu.Lock()
	o.recs = append(o.recs, *rec)
	o.mu.Unlock()
}

func (o *recordObserver) last() telemetry.Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.recs[len(o.recs)-1]
}

// mirrored is a gateway whose one route forwards to "primary" (an upstream
// that reads the body and answers with its length) and mirrors to the
// sink at sinkAddr as mc says.
type mirrored struct {
	addr    string
	fleet   *fleet
	mirror  *proxy.Mirror
	records *recordObserver
}

func newMirrored(t testing.TB, sinkAddr string, mc proxy.MirrorConfig, rc proxy.RouteConfig) *mirrored {
	t.Helper()
	primary := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Upstream", "primary")
		w.Header().Set("X-Rule", r.Header.Get("X-Rule"))
		io.WriteString(w, "got "+strings.Repeat("+", min(len(b), 3)))
	}))
	f := newFleet(t, []string{"primary", "shadow"}, []string{primary, sinkAddr})
	mc.Cluster = f.clusters["shadow"]
	m, err := proxy.NewMirror(mc)
	require.NoError(t, err)
	rc.Mirror = m
	rt := f.route(t, "primary", rc)
	records := new(recordObserver)
	return &mirrored{addr: serveTarget(t, rt, gate.Config{Observer: records}), fleet: f, mirror: m, records: records}
}

// send sends a request with body (nil for none; chunked when unknown)
// and returns the answer and its body.
func (m *mirrored) send(t testing.TB, method, target string, body io.Reader, length int64) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://app.test"+target, body)
	require.NoError(t, err)
	req.ContentLength = length
	return do(t, m.addr, req)
}

// The copy carries the request as forwarded: method, rewritten path and
// query, the route's request rules, the forwarding headers, the body, and
// the mirror's Host; the client gets the primary's answer only, and the
// access log record says "sent".
func TestMirrorCopiesTheRequest(t *testing.T) {
	sink, copies := mirrorSink(t, nil)
	m := newMirrored(t, sink, proxy.MirrorConfig{Percent: 100, HostName: "shadow.internal"}, proxy.RouteConfig{
		Rewrite:         proxy.Rewrite{AddPrefix: "/v2"},
		RequestHeaders:  []proxy.HeaderRule{{Name: "X-Rule", Value: "on"}},
		ResponseHeaders: []proxy.HeaderRule{{Name: "X-Resp", Value: "r"}},
	})
	res, body := m.send(t, "POST", "/items?a=1", strings.NewReader("hello"), 5)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "got +++", body)
	assert.Equal(t, "r", res.Header.Get("X-Resp"))
	assert.Empty(t, res.Header.Get("X-Mirror"), "the mirror's answer is dropped")
	c := recv(t, copies)
	assert.Equal(t, copyOf{method: "POST", uri: "/v2/items?a=1", host: "shadow.internal", body: "hello", rule: "on", xff: "127.0.0.1"}, c)
	assert.Equal(t, "sent", m.records.last().Mirror)

	// Chunked, of unknown length, within the limit: copied once it ends.
	res, _ = m.send(t, "PUT", "/up", io.MultiReader(strings.NewReader("ab"), strings.NewReader("cd")), -1)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "abcd", recv(t, copies).body)

	// Without hostName the copy takes the primary's Host.
	m2 := newMirrored(t, sink, proxy.MirrorConfig{Percent: 100}, proxy.RouteConfig{HostHeader: proxy.HostCustom, HostName: "api.internal"})
	m2.send(t, "GET", "/", nil, 0)
	c = recv(t, copies)
	assert.Equal(t, "api.internal", c.host)
	assert.Equal(t, "GET", c.method)
	assert.Empty(t, c.body)
}

// A mirror that hangs never delays the client: every answer comes at once
// while the copies wait; beyond maxInFlight copies are dropped and
// counted, and the places come back when the copies end.
func TestMirrorNeverDelaysTheClient(t *testing.T) {
	hold := make(chan struct{})
	sink, copies := mirrorSink(t, hold)
	ends := make(chanObserver, 16)
	m := newMirrored(t, sink, proxy.MirrorConfig{Percent: 100, MaxInFlight: 2}, proxy.RouteConfig{})
	m.fleet.clusters["shadow"].Observer = ends // read by the copies, written before the first
	for i := range 5 {
		res, body := m.send(t, "POST", "/x", strings.NewReader("body"), 4)
		require.Equal(t, 200, res.StatusCode, "request %d", i)
		require.Equal(t, "got +++", body)
	}
	recv(t, copies)
	recv(t, copies)
	st := m.mirror.Stats()
	assert.Equal(t, uint64(2), st.Count(proxy.MirrorSent))
	assert.Equal(t, uint64(3), st.Count(proxy.MirrorDropped))
	assert.Equal(t, int64(2), st.InFlight())
	assert.Equal(t, "dropped", m.records.last().Mirror)
	close(hold)
	for range 2 {
		o := recv(t, ends)
		assert.Equal(t, upstream.Success, o.Outcome)
		assert.Equal(t, 500, o.Status)
	}
	assert.Equal(t, uint64(2), st.Outcome(upstream.Success))
	res, _ := m.send(t, "GET", "/x", nil, 0)
	assert.Equal(t, 200, res.StatusCode)
	recv(t, copies)
	assert.Equal(t, uint64(3), st.Count(proxy.MirrorSent), "the places came back")
}

// A body over maxBodyBytes is not mirrored, whether its length is
// declared or found while it streams, and the primary gets all of it.
func TestMirrorSkipsLargeBodies(t *testing.T) {
	sink, copies := mirrorSink(t, nil)
	m := newMirrored(t, sink, proxy.MirrorConfig{Percent: 100, MaxBodyBytes: 8}, proxy.RouteConfig{})
	res, body := m.send(t, "POST", "/x", strings.NewReader(strings.Repeat("a", 9)), 9)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "got +++", body)
	assert.Equal(t, "tooLarge", m.records.last().Mirror)
	res, _ = m.send(t, "POST", "/x", io.MultiReader(strings.NewReader("aaaaa"), strings.NewReader("aaaaa")), -1)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "tooLarge", m.records.last().Mirror)
	st := m.mirror.Stats()
	assert.Equal(t, uint64(2), st.Count(proxy.MirrorTooLarge))
	assert.Zero(t, st.InFlight())
	// One of exactly the limit is copied.
	m.send(t, "POST", "/x", strings.NewReader(strings.Repeat("b", 8)), 8)
	assert.Equal(t, strings.Repeat("b", 8), recv(t, copies).body)
	assert.Equal(t, uint64(1), st.Count(proxy.MirrorSent))
}

// A failing mirror is its own cluster's business: the primary's passive
// health sees only the primary's exchanges, the mirror's observer the
// copy's failure.
func TestMirrorNeverFeedsThePrimarysHealth(t *testing.T) {
	m := newMirrored(t, "127.0.0.1:1", proxy.MirrorConfig{Percent: 100}, proxy.RouteConfig{})
	primary, shadow := make(chanObserver, 4), make(chanObserver, 4)
	m.fleet.clusters["primary"].Observer = primary
	m.fleet.clusters["shadow"].Observer = shadow
	res, _ := m.send(t, "GET", "/", nil, 0)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, upstream.Success, recv(t, primary).Outcome)
	o := recv(t, shadow)
	assert.Equal(t, upstream.ConnectError, o.Outcome)
	assert.Equal(t, "shadow", o.Destination.Cluster().ID())
	assert.Empty(t, primary, "no observation of the copy reached the primary's observer")
	assert.Equal(t, uint64(1), m.mirror.Stats().Outcome(upstream.ConnectError))
}

// Percent samples: 0 copies nothing, and a share lands near its percent.
func TestMirrorPercent(t *testing.T) {
	sink, _ := mirrorSink(t, nil)
	m := newMirrored(t, sink, proxy.MirrorConfig{Percent: 0}, proxy.RouteConfig{})
	for range 50 {
		m.send(t, "GET", "/", nil, 0)
	}
	assert.Zero(t, m.mirror.Stats().Count(proxy.MirrorSent))
	assert.Empty(t, m.records.last().Mirror, "a request not sampled has no mirror field")

	m = newMirrored(t, sink, proxy.MirrorConfig{Percent: 25, MaxInFlight: proxy.MaxMirrorInFlight}, proxy.RouteConfig{})
	for range 400 {
		m.send(t, "GET", "/", nil, 0)
	}
	n := m.mirror.Stats().Count(proxy.MirrorSent)
	t.Logf("25 %% of 400: %d sent", n)
	assert.InDelta(t, 100, n, 40)
}

// The sides of a split share one mirror: whichever side serves, the copy
// carries the route's request rules.
func TestMirrorWithASplit(t *testing.T) {
	sink, copies := mirrorSink(t, nil)
	f := newFleet(t, []string{"stable", "canary", "shadow"}, []string{named(t, "stable"), named(t, "canary"), sink})
	m, err := proxy.NewMirror(proxy.MirrorConfig{Cluster: f.clusters["shadow"], Percent: 100})
	require.NoError(t, err)
	rc := proxy.RouteConfig{RequestHeaders: []proxy.HeaderRule{{Name: "X-Rule", Value: "on"}}, Mirror: m}
	s, err := proxy.NewSplit(proxy.SplitConfig{Sides: []proxy.SplitSide{{Route: f.route(t, "stable", rc), Weight: 1}, {Route: f.route(t, "canary", rc), Weight: 1}}})
	require.NoError(t, err)
	addr := serveTarget(t, s, gate.Config{})
	seen := map[string]bool{}
	for range 4 {
		seen[side(t, addr, nil)] = true
		assert.Equal(t, "on", recv(t, copies).rule)
	}
	assert.Len(t, seen, 2)
	assert.Equal(t, uint64(4), m.Stats().Count(proxy.MirrorSent))
}

func TestNewMirrorEveryProblemAtOnce(t *testing.T) {
	_, err := proxy.NewMirror(proxy.MirrorConfig{Percent: 101, MaxBodyBytes: -1, MaxInFlight: proxy.MaxMirrorInFlight + 1, HostName: "a b", Timeout: -1})
	assert.Equal(t, []string{
		proxy.CodeRouteClusterMissing + " cluster",
		proxy.CodeMirrorPercentInvalid + " percent",
		proxy.CodeMirrorMaxBodyBytesInvalid + " maxBodyBytes",
		proxy.CodeMirrorMaxInFlightInvalid + " maxInFlight",
		proxy.CodeMirrorHostNameInvalid + " hostName",
		proxy.CodeMirrorTimeoutInvalid + " timeout",
	}, problemsOf(err))

	f := newFleet(t, []string{"a", "b"}, []string{"127.0.0.1:1", "127.0.0.1:2"})
	self, err := proxy.NewMirror(proxy.MirrorConfig{Cluster: f.clusters["a"], Percent: 5})
	require.NoError(t, err)
	assert.Equal(t, proxy.DefaultMirrorMaxBodyBytes, int(self.Config().MaxBodyBytes))
	assert.Equal(t, "a", self.Upstream())
	_, err = proxy.NewRoute(proxy.RouteConfig{Cluster: f.clusters["a"], Mirror: self})
	assert.Equal(t, []string{proxy.CodeRouteMirrorSelf + " mirror"}, problemsOf(err))
	_, err = proxy.NewRoute(proxy.RouteConfig{Cluster: f.clusters["b"], Mirror: new(proxy.Mirror)})
	assert.Equal(t, []string{proxy.CodeRouteMirrorInvalid + " mirror"}, problemsOf(err))
}

// A mirror that samples nothing adds no allocation to the forward.
func TestMirrorAllocations(t *testing.T) {
	limit := 2.0
	if raceEnabled {
		limit = 8
	}
	canned, r, w := ownExchange(t)
	f := newFleet(t, []string{"a", "b"}, []string{"127.0.0.1:1", "127.0.0.1:2"})
	f.clusters["a"].Transport = canned
	m, err := proxy.NewMirror(proxy.MirrorConfig{Cluster: f.clusters["b"], Percent: 0})
	require.NoError(t, err)
	rt := f.route(t, "a", proxy.RouteConfig{Mirror: m})
	rq := new(gate.Request)
	fwd := func() {
		clear(w.h)
		rt.Forward(w, r, rq)
	}
	fwd()
	if n := testing.AllocsPerRun(200, fwd); n > limit {
		t.Errorf("Route.Forward with a mirror that samples nothing allocates %.1f times per request, want at most %v", n, limit)
	}
}
