package gate

import (
	"net/http"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/paduraksa/paduraksa/internal/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stub is a policy with a fixed decision that counts its calls.
type stub struct {
	id    string
	d     Decision
	calls int
}

func (s *stub) ID() string                                { return s.id }
func (s *stub) Evaluate(*http.Request, *Request) Decision { s.calls++; return s.d }

func record() (*Tracer, *[]Step) {
	var steps []Step
	return &Tracer{OnStep: func(s Step) { steps = append(steps, s) }}, &steps
}

func TestChainOrder(t *testing.T) {
	first := &stub{id: "first"}
	block := &stub{id: "block", d: Decision{Verdict: Respond, Page: statusPage(403, nil), Reason: "no"}}
	never := &stub{id: "never"}
	routeP := &stub{id: "route"}
	tr, steps := record()
	g, err := New(Config{Tracer: tr, Hosts: []Host{
		{Names: []string{"a.test"}, Policies: []PolicyUse{{Policy: first}, {Policy: block}, {Policy: never}},
			Routes: []Route{{Prefix: "/", Target: &forwarded{}, Policies: []PolicyUse{{Policy: routeP}}}}},
		{Names: []string{"b.test"}, Policies: []PolicyUse{{Policy: first}},
			Routes: []Route{{ID: "r", Prefix: "/", Target: &forwarded{}, Policies: []PolicyUse{{Policy: routeP}}}}},
	}})
	require.NoError(t, err)
	w := newNopWriter()
	g.ServeHTTP(w, readRequest(t, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", "192.0.2.1:1"))
	assert.Equal(t, 403, w.status)
	assert.Equal(t, 1, first.calls)
	assert.Equal(t, 1, block.calls)
	assert.Zero(t, never.calls)
	assert.Zero(t, routeP.calls)

	var got []string
	for _, s := range *steps {
		if s.Kind == StepPolicy {
			got = append(got, s.Scope.String()+":"+s.Name+":"+s.Verdict.String())
		}
	}
	assert.Equal(t, []string{"host:first:continue", "host:block:respond"}, got)

	*steps = nil
	w.reset()
	g.ServeHTTP(w, readRequest(t, "GET /x HTTP/1.1\r\nHost: b.test\r\n\r\n", "192.0.2.1:1"))
	assert.Equal(t, 200, w.status)
	var kinds []string
	for _, s := range *steps {
		kinds = append(kinds, s.Kind.String())
	}
	assert.Equal(t, []string{"client", "host", "headers", "policy", "route", "policy", "hand-over"}, kinds)
	assert.Equal(t, "/x", (*steps)[4].Path)
	assert.Equal(t, ScopeRoute, (*steps)[5].Scope)
}

func TestDropAborts(t *testing.T) {
	drop := &stub{id: "drop", d: Decision{Verdict: Drop, Reason: "bot"}}
	state := new(State)
	g, err := New(Config{State: state, Hosts: []Host{{Names: []string{"a.test"}, Policies: []PolicyUse{{Policy: drop}}, Routes: []Route{{Prefix: "/", Target: &forwarded{}}}}}})
	require.NoError(t, err)
	r := readRequest(t, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", "192.0.2.1:1")
	assert.PanicsWithValue(t, http.ErrAbortHandler, func() { g.ServeHTTP(newNopWriter(), r) })
	assert.EqualValues(t, 1, state.Counters().Dropped.Load())

	tr, steps := record()
	g.Simulate(newNopWriter(), r, tr)
	assert.Equal(t, StepDrop, (*steps)[len(*steps)-1].Kind)
	assert.EqualValues(t, 1, state.Counters().Dropped.Load())
}

func TestRateLimitIPv6Slash64(t *testing.T) {
	rl, err := NewRateLimit(RateLimitConfig{ID: "rl", Requests: 2, Period: time.Hour})
	require.NoError(t, err)
	get := func(a string) int {
		rq := &Request{Client: netip.MustParseAddr(a)}
		d := rl.Evaluate(nil, rq)
		return d.status()
	}
	assert.Zero(t, get("2001:db8:1:2::1"))
	assert.Zero(t, get("2001:db8:1:2:ffff::9")) // same /64: shares the bucket
	assert.Equal(t, 429, get("2001:db8:1:2::77"))
	assert.Zero(t, get("2001:db8:1:3::1")) // another /64
	assert.Zero(t, get("192.0.2.1"))
	assert.Zero(t, get("::ffff:192.0.2.1")) // the same IPv4 client
	assert.Equal(t, 429, get("192.0.2.1"))
	assert.Zero(t, get("192.0.2.2"))
}

func TestRateLimitRefill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rl, err := NewRateLimit(RateLimitConfig{ID: "rl", Requests: 1, Period: time.Second, Burst: 2})
		require.NoError(t, err)
		rq := &Request{Client: netip.MustParseAddr("192.0.2.1")}
		assert.Equal(t, Continue, rl.Evaluate(nil, rq).Verdict)
		assert.Equal(t, Continue, rl.Evaluate(nil, rq).Verdict)
		assert.Equal(t, Respond, rl.Evaluate(nil, rq).Verdict)
		time.Sleep(999 * time.Millisecond)
		assert.Equal(t, Respond, rl.Evaluate(nil, rq).Verdict)
		time.Sleep(time.Millisecond)
		assert.Equal(t, Continue, rl.Evaluate(nil, rq).Verdict)
		assert.Equal(t, Respond, rl.Evaluate(nil, rq).Verdict)
		time.Sleep(10 * time.Second) // refills to the burst, not beyond
		assert.Equal(t, 2, rl.Tokens(rq.Client, nil, nil))
	})
}

// TestRateLimitOnManualClock runs a State's rate limit on a clock the
// test moves by hand: the buckets read the State's clock, not package
// time.
func TestRateLimitOnManualClock(t *testing.T) {
	man := clock.NewManual(time.Unix(1000, 0))
	state := &State{clock: clock.New(man)}
	rl, err := state.RateLimit(RateLimitConfig{ID: "rl", Requests: 2, Period: time.Second})
	require.NoError(t, err)
	rq := &Request{Client: netip.MustParseAddr("2001:db8::1")}
	assert.Equal(t, 2, rl.Tokens(rq.Client, nil, nil))
	assert.Equal(t, Continue, rl.Evaluate(nil, rq).Verdict)
	assert.Equal(t, Continue, rl.Evaluate(nil, rq).Verdict)
	assert.Equal(t, Respond, rl.Evaluate(nil, rq).Verdict)
	man.Advance(499 * time.Millisecond)
	assert.Equal(t, Respond, rl.Evaluate(nil, rq).Verdict, "one token takes 500 ms")
	man.Advance(time.Millisecond)
	assert.Equal(t, Continue, rl.Evaluate(nil, rq).Verdict)
	assert.Zero(t, rl.Tokens(rq.Client, nil, nil))
	man.Advance(time.Hour)
	assert.Equal(t, 2, rl.Tokens(rq.Client, nil, nil), "refills to the burst, not beyond")
}

func TestRateLimitDryRunAndScope(t *testing.T) {
	shared, err := NewRateLimit(RateLimitConfig{ID: "s", Requests: 1, Period: time.Hour})
	require.NoError(t, err)
	perRoute, err := NewRateLimit(RateLimitConfig{ID: "p", Requests: 1, Period: time.Hour, Scope: RateLimitPerRoute})
	require.NoError(t, err)
	r1, r2 := &Route{scopeKey: scopeKeyOf("a", "1")}, &Route{scopeKey: scopeKeyOf("a", "2")}
	c := netip.MustParseAddr("192.0.2.1")

	dry := &Request{Client: c, Route: r1, DryRun: true}
	for range 3 {
		d := shared.Evaluate(nil, dry)
		assert.Equal(t, Continue, d.Verdict)
		assert.Equal(t, "would allow, 0 tokens left", d.Reason)
	}
	assert.Equal(t, Continue, shared.Evaluate(nil, &Request{Client: c, Route: r1}).Verdict)
	assert.Equal(t, Respond, shared.Evaluate(nil, &Request{Client: c, Route: r2}).Verdict, "shared across routes")
	assert.Equal(t, Respond, shared.Evaluate(nil, dry).Verdict)

	assert.Equal(t, Continue, perRoute.Evaluate(nil, &Request{Client: c, Route: r1}).Verdict)
	assert.Equal(t, Continue, perRoute.Evaluate(nil, &Request{Client: c, Route: r2}).Verdict, "own bucket per route")
	assert.Equal(t, Respond, perRoute.Evaluate(nil, &Request{Client: c, Route: r2}).Verdict)
}

func TestRateLimitProbesAndFullTable(t *testing.T) {
	counters := new(Counters)
	rl, err := newRateLimit(RateLimitConfig{ID: "rl", Requests: 1, Period: time.Hour, TableSize: 8, ExemptProbes: true}, counters, clock.Clock{}, nil)
	require.NoError(t, err)
	probe := &Request{Client: netip.MustParseAddr("10.0.0.1"), Probe: true}
	for range 5 {
		assert.Equal(t, Continue, rl.Evaluate(nil, probe).Verdict)
	}
	// Eight clients fill the eight buckets; the ninth is let through.
	for i := range 8 {
		rq := &Request{Client: netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})}
		assert.Equal(t, Continue, rl.Evaluate(nil, rq).Verdict)
	}
	assert.Zero(t, counters.RateLimitTableFull.Load())
	rq := &Request{Client: netip.MustParseAddr("198.51.100.1")}
	d := rl.Evaluate(nil, rq)
	assert.Equal(t, Continue, d.Verdict)
	assert.Equal(t, "table full: fail-open", d.Reason)
	assert.EqualValues(t, 1, counters.RateLimitTableFull.Load())
}

func TestStateKeepsRateLimitAcrossGates(t *testing.T) {
	state := new(State)
	cfg := RateLimitConfig{ID: "rl", Requests: 1, Period: time.Hour}
	a, err := state.RateLimit(cfg)
	require.NoError(t, err)
	b, err := state.RateLimit(cfg)
	require.NoError(t, err)
	assert.Same(t, a, b, "unchanged config keeps its buckets")
	cfg.Requests = 2
	c, err := state.RateLimit(cfg)
	require.NoError(t, err)
	assert.NotSame(t, a, c)
	state.Retain(func(id string) bool { return false })
	d, err := state.RateLimit(cfg)
	require.NoError(t, err)
	assert.NotSame(t, c, d)

	// Through two gates: the second publish keeps the spent token.
	build := func() *Gate {
		rl, err := state.RateLimit(RateLimitConfig{ID: "x", Requests: 1, Period: time.Hour})
		require.NoError(t, err)
		g, err := New(Config{State: state, Hosts: []Host{{Names: []string{"a.test"}, Policies: []PolicyUse{{Policy: rl}}, Routes: []Route{{Prefix: "/", Target: &forwarded{}}}}}})
		require.NoError(t, err)
		return g
	}
	r := readRequest(t, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", "192.0.2.1:1")
	w := newNopWriter()
	build().ServeHTTP(w, r)
	assert.Equal(t, 200, w.status)
	w.reset()
	build().ServeHTTP(w, r)
	assert.Equal(t, 429, w.status)
}

type countries map[netip.Addr]string

func (c countries) Country(a netip.Addr) string { return c[a] }

func TestAccessList(t *testing.T) {
	geo := countries{netip.MustParseAddr("192.0.2.1"): "DE", netip.MustParseAddr("192.0.2.2"): "FR"}
	al, err := NewAccessList(AccessListConfig{
		ID: "l", Allow: mustPrefix("192.0.2.0/24", "::ffff:198.51.100.0/120", "2001:db8::/32"), Deny: mustPrefix("192.0.2.128/25"),
		DenyCountries: []string{"fr"}, Countries: geo,
	})
	require.NoError(t, err)
	for a, want := range map[string]string{
		"192.0.2.1": "allowed", "192.0.2.2": "country denied", "192.0.2.3": "allowed", "192.0.2.200": "address denied",
		"198.51.100.7": "allowed", "::ffff:198.51.100.7": "allowed", "203.0.113.1": "address not allowed",
		"2001:db8::1": "allowed", "2001:db9::1": "address not allowed",
	} {
		d := al.Evaluate(&http.Request{Header: http.Header{}}, &Request{Client: netip.MustParseAddr(a)})
		assert.Equal(t, want, d.Reason, a)
	}
	only, err := NewAccessList(AccessListConfig{ID: "de", AllowCountries: []string{"DE"}, Countries: geo})
	require.NoError(t, err)
	assert.Equal(t, "allowed", only.Evaluate(nil, &Request{Client: netip.MustParseAddr("192.0.2.1")}).Reason)
	assert.Equal(t, "country not allowed", only.Evaluate(nil, &Request{Client: netip.MustParseAddr("192.0.2.9")}).Reason)
	_, err = NewAccessList(AccessListConfig{ID: "x", AllowCountries: []string{"DE"}})
	assert.Error(t, err)
	_, err = NewAccessList(AccessListConfig{ID: "x", Users: []BasicUser{{Name: "a", Hash: "plain"}}})
	assert.Error(t, err)
}

// TestIPv4MappedPrefixes: the gate's prefixes follow the library's rule
// (internal/ipaddr). An IPv4-mapped prefix shorter than /96 has no one
// meaning and is refused where it is configured; it used to be read as
// all of IPv4.
func TestIPv4MappedPrefixes(t *testing.T) {
	short := mustPrefix("::ffff:0:0/64")
	hosts := []Host{{Names: []string{"a.test"}, Routes: []Route{{Prefix: "/", Target: &forwarded{}}}}}
	_, err := New(Config{TrustedProxies: short, ProbeSources: short, Hosts: hosts})
	assert.Equal(t, []string{CodePrefixInvalid + " trustedProxies[0]", CodePrefixInvalid + " probeSources[0]"}, problemsOf(t, err))
	assert.ErrorContains(t, err, "an IPv4-mapped prefix must be /96 or longer")
	_, err = NewAccessList(AccessListConfig{ID: "l", Deny: short})
	assert.Equal(t, []string{CodePrefixInvalid + " deny[0]"}, problemsOf(t, err))

	g, err := New(Config{TrustedProxies: mustPrefix("::/0", "::ffff:10.0.0.0/104"), ProbeSources: mustPrefix("::ffff:0:0/96"), Hosts: hosts})
	require.NoError(t, err)
	assert.False(t, g.trusted.Contains(netip.MustParseAddr("127.0.0.1")), "an IPv6 prefix holds no IPv4 peer")
	assert.True(t, g.trusted.Contains(netip.MustParseAddr("10.1.2.3")))
	assert.True(t, g.trusted.Contains(netip.MustParseAddr("2001:db8::1")))
	assert.True(t, g.probes.Contains(netip.MustParseAddr("192.0.2.1")), "::ffff:0:0/96 is all of IPv4")
	assert.False(t, g.probes.Contains(netip.MustParseAddr("2001:db8::1")))

	al, err := NewAccessList(AccessListConfig{ID: "v6", Deny: mustPrefix("::/0")})
	require.NoError(t, err)
	for a, want := range map[string]string{"192.0.2.1": "allowed", "::ffff:192.0.2.1": "allowed", "2001:db8::1": "address denied"} {
		assert.Equal(t, want, al.Evaluate(&http.Request{Header: http.Header{}}, &Request{Client: netip.MustParseAddr(a)}).Reason, a)
	}
}

func TestBasicAuthCacheAllocations(t *testing.T) {
	al, err := NewAccessList(AccessListConfig{ID: "u", Users: []BasicUser{{Name: "ann", Hash: bcryptHash(t, "pw")}}})
	require.NoError(t, err)
	r := &http.Request{Header: basic("ann", "pw")}
	rq := &Request{Client: netip.MustParseAddr("192.0.2.1")}
	require.Equal(t, "authenticated", al.Evaluate(r, rq).Reason)
	allocs := testing.AllocsPerRun(100, func() { al.Evaluate(r, rq) })
	assert.Zero(t, allocs, "a cached verification skips bcrypt and allocates nothing")
	assert.Equal(t, "wrong credentials", al.Evaluate(&http.Request{Header: basic("ann", "px")}, rq).Reason)
}

func TestRuleSet(t *testing.T) {
	rs, err := NewRuleSet(RuleSetConfig{ID: "r", Rules: []Rule{
		{PathPrefix: "/public", Action: RuleAllow},
		{UserAgentContains: "BadBot", Action: RuleDeny},
		{PathExact: "/admin", Methods: []string{"POST", "DELETE"}, Action: RuleRespond, Status: 405, Body: []byte("no\n")},
		{PathPrefix: "/", Methods: []string{"TRACE"}, Action: RuleDeny},
	}})
	require.NoError(t, err)
	tests := []struct {
		method, path, ua string
		verdict          Verdict
		status           int
	}{
		{"GET", "/public/x", "badbot/1", Continue, 0},
		{"GET", "/x", "Mozilla BADBOT", Respond, 403},
		{"POST", "/admin", "", Respond, 405},
		{"GET", "/admin", "", Continue, 0},
		{"TRACE", "/a", "", Respond, 403},
	}
	for _, tt := range tests {
		r := &http.Request{Method: tt.method, Header: http.Header{}}
		if tt.ua != "" {
			r.Header["User-Agent"] = []string{tt.ua}
		}
		d := rs.Evaluate(r, &Request{Path: tt.path})
		assert.Equal(t, tt.verdict, d.Verdict, "%v", tt)
		assert.Equal(t, tt.status, d.status(), "%v", tt)
	}
	_, err = NewRuleSet(RuleSetConfig{Rules: []Rule{{Action: RuleRespond}}})
	assert.Error(t, err)
}

func TestHSTSAndAltSvc(t *testing.T) {
	g, err := New(Config{Hosts: []Host{{
		Names: []string{"a.test", "localhost", "127.0.0.1", "::1"}, HSTS: HSTS{MaxAge: time.Hour, IncludeSubdomains: true},
		TLS:    TLSPolicy{HTTP3: true},
		Routes: []Route{{Prefix: "/", Target: &forwarded{}}},
	}}})
	require.NoError(t, err)
	for host, want := range map[string]bool{"a.test": true, "A.TEST:443": true, "localhost": false, "127.0.0.1:443": false, "[::1]:443": false} {
		r := readRequest(t, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n", "192.0.2.1:1")
		r.TLS = tlsState(0x0304)
		w := newNopWriter()
		g.ServeHTTP(w, r)
		assert.Equal(t, want, w.h.Get("Strict-Transport-Security") == "max-age=3600; includeSubDomains", host)
		assert.Equal(t, `h3=":443"; ma=86400`, w.h.Get("Alt-Svc"), host)
	}
	r := readRequest(t, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", "192.0.2.1:1")
	w := newNopWriter()
	g.ServeHTTP(w, r)
	assert.Empty(t, w.h.Get("Strict-Transport-Security"), "plain HTTP")
	assert.Empty(t, w.h.Get("Alt-Svc"), "plain HTTP")
}

// problemsOf returns "code path" of every problem err joins, failing on an
// error of another type.
func problemsOf(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, e := range unjoin(err) {
		var ve *ValidationError
		require.ErrorAs(t, e, &ve)
		out = append(out, ve.Code+" "+ve.Path)
	}
	return out
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
