package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// named serves an upstream that answers with its name in X-Upstream and
// echoes the request's X-Rule (a request rule) in X-Rule.
func named(t testing.TB, name string) string {
	t.Helper()
	return listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Upstream", name)
		w.Header().Set("X-Rule", r.Header.Get("X-Rule"))
		w.WriteHeader(200)
	}))
}

// fleet is a registry of clusters, one destination each, by ID.
type fleet struct {
	reg      upstream.Registry
	clusters map[string]*proxy.Cluster
}

// newFleet makes a cluster per ID with the destination address addrs[i].
func newFleet(t testing.TB, ids []string, addrs []string) *fleet {
	t.Helper()
	f := &fleet{clusters: map[string]*proxy.Cluster{}}
	var cfgs []upstream.ClusterConfig
	for i, id := range ids {
		cfgs = append(cfgs, upstream.ClusterConfig{ID: id, Destinations: []upstream.DestinationConfig{{ID: "d", Scheme: "http", Host: addrs[i]}}})
	}
	f.reg.Plan(cfgs).Commit()
	for _, id := range ids {
		f.clusters[id] = &proxy.Cluster{Upstream: f.reg.Cluster(id), Transport: proxy.NewTransport(proxy.ClientConfig{}), Stats: new(proxy.Stats)}
	}
	return f
}

// route makes a Route to the cluster id with cfg's other settings.
func (f *fleet) route(t testing.TB, id string, cfg proxy.RouteConfig) *proxy.Route {
	t.Helper()
	cfg.Cluster = f.clusters[id]
	rt, err := proxy.NewRoute(cfg)
	require.NoError(t, err)
	return rt
}

// setHealth marks cluster id's destination healthy or not.
func (f *fleet) setHealth(id string, h upstream.HealthState) {
	f.clusters[id].Upstream.Members().All[0].SetActiveHealth(h)
}

// serveTarget serves a gate with host app.test whose one route hands over
// to target.
func serveTarget(t testing.TB, target gate.Target, cfg gate.Config) string {
	t.Helper()
	cfg.Hosts = append(cfg.Hosts, gate.Host{Names: []string{"app.test"}, Routes: []gate.Route{{Prefix: "/", Target: target}}})
	g, err := gate.New(cfg)
	require.NoError(t, err)
	return listen(t, g)
}

// canarySplit is a stable/canary split of the given weights over real
// upstreams, with each side's route rules from rc.
func canarySplit(t testing.TB, stable, canary int, sticky proxy.Sticky, force []proxy.Force, rc proxy.RouteConfig) (*proxy.Split, *fleet, []*proxy.SideStats) {
	t.Helper()
	f := newFleet(t, []string{"stable", "canary"}, []string{named(t, "stable"), named(t, "canary")})
	stats := []*proxy.SideStats{new(proxy.SideStats), new(proxy.SideStats)}
	s, err := proxy.NewSplit(proxy.SplitConfig{
		Sides: []proxy.SplitSide{
			{Route: f.route(t, "stable", rc), Weight: stable, Stats: stats[0]},
			{Route: f.route(t, "canary", rc), Weight: canary, Stats: stats[1]},
		},
		Sticky: sticky, Force: force,
	})
	require.NoError(t, err)
	return s, f, stats
}

// side sends one request and returns the upstream that answered.
func side(t testing.TB, addr string, header http.Header) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://app.test/x", nil)
	for k, v := range header {
		req.Header[k] = v
	}
	res, _ := do(t, addr, req)
	require.Equal(t, 200, res.StatusCode)
	return res.Header.Get("X-Upstream")
}

// The figure of the weights: over 100 000 requests a 90/10 split sends
// 10 % to the smaller side within 0.5 points (the Weyl sequence holds it
// within a few requests), and the weights hold over real sockets too.
func TestSplitWeights(t *testing.T) {
	s, f, stats := canarySplit(t, 90, 10, proxy.Sticky{}, nil, proxy.RouteConfig{})
	r, _ := http.NewRequest("GET", "http://app.test/", nil)
	counts := map[string]int{}
	const n = 100_000
	for range n {
		counts[s.Choose(r, netip.Addr{}).Upstream]++
		proxy.SplitAdvance(s)
	}
	share := float64(counts["canary"]) / n * 100
	t.Logf("over %d requests: %v (canary %.3f %%)", n, counts, share)
	assert.InDelta(t, 10, share, 0.5)
	assert.InDelta(t, n/10, counts["canary"], 5, "the Weyl sequence holds the share within a few requests")

	addr := serveTarget(t, s, gate.Config{})
	got := map[string]int{}
	for range 200 {
		got[side(t, addr, nil)]++
	}
	assert.InDelta(t, 20, got["canary"], 2, "over real sockets: %v", got)
	assert.Equal(t, uint64(got["canary"]), stats[1].Count(proxy.SplitWeight))
	assert.Equal(t, uint64(got["stable"]), stats[0].Count(proxy.SplitWeight))
	assert.Equal(t, uint64(got["canary"]), f.clusters["canary"].Stats.Count(upstream.Success), "each side is its own cluster")

	// Weight 0 takes none.
	s0, _, _ := canarySplit(t, 1, 0, proxy.Sticky{}, nil, proxy.RouteConfig{})
	addr0 := serveTarget(t, s0, gate.Config{})
	for range 20 {
		require.Equal(t, "stable", side(t, addr0, nil))
	}
}

// A sticky key never flips while its side is healthy: each of 300
// cookies, sent 5 times, lands on one side, the sides hold the weights
// among the keys, and a side that loses its destinations hands its keys
// to the other side and gets them back when it recovers, while the other
// side's keys never move.
func TestSplitStickyKeys(t *testing.T) {
	s, f, stats := canarySplit(t, 70, 30, proxy.Sticky{Cookie: "session"}, nil, proxy.RouteConfig{})
	addr := serveTarget(t, s, gate.Config{})
	cookie := func(k int) http.Header { return http.Header{"Cookie": {fmt.Sprintf("a=1; session=user-%d", k)}} }
	sideOf := map[int]string{}
	perSide := map[string]int{}
	for k := range 300 {
		first := side(t, addr, cookie(k))
		for range 4 {
			require.Equal(t, first, side(t, addr, cookie(k)), "key %d flipped", k)
		}
		sideOf[k] = first
		perSide[first]++
	}
	t.Logf("keys per side: %v", perSide)
	assert.InDelta(t, 90, perSide["canary"], 25, "the keys follow the weights: %v", perSide)
	assert.Equal(t, uint64(5*perSide["canary"]), stats[1].Count(proxy.SplitSticky))

	f.setHealth("canary", upstream.Unhealthy)
	for k := range 300 {
		require.Equal(t, "stable", side(t, addr, cookie(k)), "key %d: its side has no destination", k)
	}
	assert.Equal(t, uint64(perSide["canary"]), stats[0].Count(proxy.SplitFallback))
	f.setHealth("canary", upstream.Healthy)
	for k := range 300 {
		require.Equal(t, sideOf[k], side(t, addr, cookie(k)), "key %d is back on its side", k)
	}

	// A request without the key goes by the weights, and says so.
	r, _ := http.NewRequest("GET", "http://app.test/", nil)
	c := s.Choose(r, netip.Addr{})
	assert.Equal(t, proxy.SplitWeight, c.Reason)
	assert.Contains(t, c.Why, "no cookie session")
	r.Header.Set("Cookie", "session=user-1")
	assert.Equal(t, "sticky key cookie session", s.Choose(r, netip.Addr{}).Why)
}

// The same key on another Split of the same weights (a publish that
// keeps them) lands on the same side; a client-address key follows the
// address the gate resolved.
func TestSplitStickyAcrossBuilds(t *testing.T) {
	a, _, _ := canarySplit(t, 50, 50, proxy.Sticky{Header: "x-user"}, nil, proxy.RouteConfig{})
	b, _, _ := canarySplit(t, 50, 50, proxy.Sticky{Header: "X-User"}, nil, proxy.RouteConfig{})
	r, _ := http.NewRequest("GET", "http://app.test/", nil)
	for k := range 100 {
		r.Header.Set("X-User", fmt.Sprint("u", k))
		ca, cb := a.Choose(r, netip.Addr{}), b.Choose(r, netip.Addr{})
		require.Equal(t, ca.Side, cb.Side)
		require.Equal(t, proxy.SplitSticky, ca.Reason)
	}
	c, _, _ := canarySplit(t, 50, 50, proxy.Sticky{Client: true}, nil, proxy.RouteConfig{})
	sides := map[int]bool{}
	for k := range 50 {
		addr := netip.AddrFrom4([4]byte{10, 0, 0, byte(k)})
		first := c.Choose(r, addr)
		require.Equal(t, proxy.SplitSticky, first.Reason)
		require.Equal(t, first.Side, c.Choose(r, addr).Side)
		sides[first.Side] = true
	}
	assert.Len(t, sides, 2, "client addresses spread over both sides")
}

// Forcing wins over the weights and the key, on a side of weight 0 too;
// a header sent twice is compared on its joined values; a cookie forces
// as well; a forced side whose destinations are all unhealthy still takes
// the request (its cluster's availability policy decides, here its panic
// fallback) rather than the request being served elsewhere.
func TestSplitForced(t *testing.T) {
	force := []proxy.Force{{Header: "x-canary", Value: "always", Side: 1}, {Cookie: "canary", Value: "yes", Side: 1}}
	s, f, stats := canarySplit(t, 100, 0, proxy.Sticky{Cookie: "session"}, force, proxy.RouteConfig{})
	addr := serveTarget(t, s, gate.Config{})
	for range 10 {
		assert.Equal(t, "canary", side(t, addr, http.Header{"X-Canary": {"always"}, "Cookie": {"session=u1"}}))
		assert.Equal(t, "canary", side(t, addr, http.Header{"Cookie": {"x=1; canary=yes"}}))
		assert.Equal(t, "stable", side(t, addr, http.Header{"X-Canary": {"never", "always"}}), "joined: \"never, always\"")
		assert.Equal(t, "stable", side(t, addr, http.Header{"X-Canary": {"Always"}}), "values compare exactly")
	}
	assert.Equal(t, uint64(20), stats[1].Count(proxy.SplitForced))

	r, _ := http.NewRequest("GET", "http://app.test/", nil)
	r.Header["X-Canary"] = []string{"always"}
	assert.Equal(t, "forced by header X-Canary: always", s.Choose(r, netip.Addr{}).Why)
	r.Header["X-Canary"] = []string{"al", "ways"}
	assert.Equal(t, proxy.SplitWeight, s.Choose(r, netip.Addr{}).Reason, "\"al, ways\" is not \"always\"")

	f.setHealth("canary", upstream.Unhealthy)
	assert.Equal(t, "canary", side(t, addr, http.Header{"X-Canary": {"always"}}), "forced always wins, even to an unhealthy side")
	assert.Equal(t, "stable", side(t, addr, nil))
}

// Every side gets the route's request rules and the client the response
// rules whichever side answered; the gate's own answers for the route
// carry them too.
func TestSplitHeaderRules(t *testing.T) {
	rc := proxy.RouteConfig{
		RequestHeaders:  []proxy.HeaderRule{{Name: "X-Rule", Value: "on"}},
		ResponseHeaders: []proxy.HeaderRule{{Name: "X-Resp", Value: "r"}},
	}
	s, _, _ := canarySplit(t, 1, 1, proxy.Sticky{}, nil, rc)
	addr := serveTarget(t, s, gate.Config{})
	seen := map[string]bool{}
	for range 4 {
		req, _ := http.NewRequest("GET", "http://app.test/x", nil)
		res, _ := do(t, addr, req)
		require.Equal(t, 200, res.StatusCode)
		seen[res.Header.Get("X-Upstream")] = true
		assert.Equal(t, "on", res.Header.Get("X-Rule"), "the side's upstream got the request rule")
		assert.Equal(t, "r", res.Header.Get("X-Resp"))
	}
	assert.Len(t, seen, 2)
	h := http.Header{}
	s.SetAnswerHeaders(h, httpRequest(t))
	assert.Equal(t, "r", h.Get("X-Resp"))
}

func httpRequest(t testing.TB) *http.Request {
	t.Helper()
	r, err := http.NewRequest("GET", "http://app.test/", nil)
	require.NoError(t, err)
	return r
}

func TestNewSplitEveryProblemAtOnce(t *testing.T) {
	f := newFleet(t, []string{"a"}, []string{"127.0.0.1:1"})
	rt := f.route(t, "a", proxy.RouteConfig{})
	_, err := proxy.NewSplit(proxy.SplitConfig{
		Sides:  []proxy.SplitSide{{Route: rt, Weight: -1}, {Weight: 2}, {Route: new(proxy.Route), Weight: proxy.MaxSplitWeight + 1}},
		Sticky: proxy.Sticky{Cookie: "a", Client: true},
		Force:  []proxy.Force{{Header: "a", Cookie: "b", Value: "v"}, {Header: "bad name", Side: 3}, {}},
	})
	assert.Equal(t, []string{
		proxy.CodeSplitWeightInvalid + " sides[0].weight",
		proxy.CodeSplitSideRouteMissing + " sides[1].route",
		proxy.CodeRouteClusterMissing + " sides[2].route.cluster",
		proxy.CodeSplitWeightInvalid + " sides[2].weight",
		proxy.CodeSplitStickyConflict + " sticky",
		proxy.CodeSplitForceKeyInvalid + " force[0]",
		proxy.CodeSplitForceNameInvalid + " force[1].header",
		proxy.CodeSplitForceValueMissing + " force[1].value",
		proxy.CodeSplitForceSideInvalid + " force[1].side",
		proxy.CodeSplitForceKeyInvalid + " force[2]",
		proxy.CodeSplitForceValueMissing + " force[2].value",
	}, problemsOf(err))

	_, err = proxy.NewSplit(proxy.SplitConfig{Sides: []proxy.SplitSide{{Route: rt}, {Route: rt}}})
	assert.Equal(t, []string{proxy.CodeSplitWeightsZero + " sides"}, problemsOf(err))
	_, err = proxy.NewSplit(proxy.SplitConfig{Sides: []proxy.SplitSide{{Route: rt, Weight: 1}}, Sticky: proxy.Sticky{Header: "no good"}})
	assert.Equal(t, []string{proxy.CodeSplitStickyNameInvalid + " sticky.header"}, problemsOf(err))
	_, err = proxy.NewSplit(proxy.SplitConfig{})
	assert.Equal(t, []string{proxy.CodeSplitSidesMissing + " sides"}, problemsOf(err))
	_, err = proxy.NewSplit(proxy.SplitConfig{Sides: make([]proxy.SplitSide, proxy.MaxSplitSides+1)})
	assert.Contains(t, problemsOf(err), proxy.CodeSplitSidesTooMany+" sides")

	assert.Equal(t, []string{proxy.CodeSplitSidesMissing + " sides"}, problemsOf(new(proxy.Split).CheckTarget()))
	_, err = gate.New(gate.Config{Hosts: []gate.Host{{Names: []string{"a.test"}, Routes: []gate.Route{{Target: new(proxy.Split)}}}}})
	assert.Error(t, err, "the gate refuses the zero Split")
}

// A split adds no allocation to the forward: Split.Forward over two
// sides costs what Route.Forward does.
func TestSplitAllocations(t *testing.T) {
	limit := 2.0
	if raceEnabled {
		limit = 8
	}
	for _, sticky := range []proxy.Sticky{{}, {Cookie: "session"}, {Client: true}} {
		f := forwardSplit(t, sticky)
		f()
		if n := testing.AllocsPerRun(200, f); n > limit {
			t.Errorf("Split.Forward (sticky %+v) allocates %.1f times per request, want at most %v", sticky, n, limit)
		}
	}
}

// forwardSplit is forwardOwn through a 90/10 split of two canned routes
// whose requests carry a session cookie and an X-Canary header that
// forces nothing.
func forwardSplit(tb testing.TB, sticky proxy.Sticky) func() {
	tb.Helper()
	canned, r, w := ownExchange(tb)
	r.Header["Cookie"] = []string{"theme=dark; session=abc"}
	r.Header["X-Canary"] = []string{"no"}
	f := newFleet(tb, []string{"a", "b"}, []string{"127.0.0.1:1", "127.0.0.1:2"})
	for _, c := range f.clusters {
		c.Transport = canned
	}
	s, err := proxy.NewSplit(proxy.SplitConfig{
		Sides:  []proxy.SplitSide{{Route: f.route(tb, "a", proxy.RouteConfig{}), Weight: 90, Stats: new(proxy.SideStats)}, {Route: f.route(tb, "b", proxy.RouteConfig{}), Weight: 10}},
		Sticky: sticky,
		Force:  []proxy.Force{{Header: "X-Canary", Value: "always", Side: 1}, {Cookie: "canary", Value: "1", Side: 1}},
	})
	if err != nil {
		tb.Fatal(err)
	}
	rq := &gate.Request{Client: netip.MustParseAddr("192.0.2.10"), Scheme: "http"}
	return func() {
		clear(w.h)
		s.Forward(w, r, rq)
	}
}

// BenchmarkForwardOwnSplit is BenchmarkForwardOwn through a 90/10 split
// with force rules that do not match and no sticky key.
func BenchmarkForwardOwnSplit(b *testing.B) {
	f := forwardSplit(b, proxy.Sticky{})
	b.ReportAllocs()
	for b.Loop() {
		f()
	}
}

// A force rule reads the request as the gate forwards it, over a raw
// socket in several spellings: the name in any case and with spaces
// around the value forces; an underscore spelling (dropped by the gate)
// or a value sent twice (read joined, "always, always") does not; a
// cookie forces by its exact name only.
func TestSplitForceSpellingsOverARawSocket(t *testing.T) {
	force := []proxy.Force{{Header: "X-Canary", Value: "always", Side: 1}, {Cookie: "canary", Value: "yes", Side: 1}}
	s, _, _ := canarySplit(t, 1, 0, proxy.Sticky{}, force, proxy.RouteConfig{})
	addr := serveTarget(t, s, gate.Config{})
	for _, tc := range []struct {
		name, fields, want string
	}{
		{"canonical", "X-Canary: always\r\n", "canary"},
		{"lower case", "x-canary: always\r\n", "canary"},
		{"upper case", "X-CANARY: always\r\n", "canary"},
		{"spaces around the value", "X-Canary:   always  \r\n", "canary"},
		{"underscore", "X_Canary: always\r\n", "stable"},
		{"sent twice", "X-Canary: always\r\nX-Canary: always\r\n", "stable"},
		{"value in another case", "X-Canary: Always\r\n", "stable"},
		{"cookie", "Cookie: a=1; canary=yes\r\n", "canary"},
		{"cookie name in another case", "Cookie: Canary=yes\r\n", "stable"},
		{"cookie value quoted", "Cookie: canary=\"yes\"\r\n", "canary"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.DialTimeout("tcp", addr, 10*time.Second)
			require.NoError(t, err)
			defer c.Close()
			require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
			_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: app.test\r\n"+tc.fields+"Connection: close\r\n\r\n")
			require.NoError(t, err)
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			require.NoError(t, err)
			res.Body.Close()
			require.Equal(t, 200, res.StatusCode)
			assert.Equal(t, tc.want, res.Header.Get("X-Upstream"))
		})
	}
}
