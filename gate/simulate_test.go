package gate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A simulated request through a rate limit takes no token: the trace says
// how many are left, the bucket is as it was, and a real request after it
// still gets the same answer as without the simulation.
func TestSimulateRateLimitPeeks(t *testing.T) {
	rl, err := NewRateLimit(RateLimitConfig{ID: "rl", Requests: 2, Period: time.Hour, Burst: 2, TableSize: 64})
	require.NoError(t, err)
	target := &forwarded{}
	g, err := New(Config{Hosts: []Host{{Names: []string{"app.test"}, Policies: []PolicyUse{{Policy: rl}}, Routes: []Route{{Prefix: "/", Target: target}}}}})
	require.NoError(t, err)
	client := netip.MustParseAddr("192.0.2.7")
	raw := "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n"

	g.ServeHTTP(newNopWriter(), readRequest(t, raw, "192.0.2.7:1"))
	require.Equal(t, 1, rl.Tokens(client, nil, nil), "one real request took one of two tokens")

	for range 3 {
		tr, steps := record()
		g.Simulate(newNopWriter(), readRequest(t, raw, "192.0.2.7:1"), tr)
		var reasons []string
		for _, s := range *steps {
			if s.Kind == StepPolicy {
				reasons = append(reasons, s.Reason)
			}
		}
		assert.Equal(t, []string{"would allow, 0 tokens left"}, reasons)
	}
	assert.Equal(t, 1, rl.Tokens(client, nil, nil), "simulations took no token")
	assert.Equal(t, 1, target.n, "the target ran only for the real request")

	w := newNopWriter()
	g.ServeHTTP(w, readRequest(t, raw, "192.0.2.7:1"))
	assert.Equal(t, 200, w.status, "the second real request still has its token")
	w.reset()
	g.ServeHTTP(w, readRequest(t, raw, "192.0.2.7:1"))
	assert.Equal(t, 429, w.status)
}

// A simulated forward-auth calls nothing: the auth server counts zero
// requests, where a real request costs one.
func TestSimulateForwardAuthCallsNothing(t *testing.T) {
	var calls atomic.Int64
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(auth.Close)
	fa, err := NewForwardAuth(ForwardAuthConfig{ID: "auth", URL: auth.URL + "/check", Client: authClient(t)})
	require.NoError(t, err)
	target := &forwarded{}
	g, err := New(Config{Hosts: []Host{{Names: []string{"app.test"}, Policies: []PolicyUse{{Policy: fa}}, Routes: []Route{{ID: "all", Prefix: "/", Target: target}}}}})
	require.NoError(t, err)
	raw := "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n"

	tr, steps := record()
	g.Simulate(newNopWriter(), readRequest(t, raw, "192.0.2.7:1"), tr)
	assert.Zero(t, calls.Load(), "the auth server saw no request")
	var policy Step
	for _, s := range *steps {
		if s.Kind == StepPolicy {
			policy = s
		}
	}
	assert.Equal(t, Defer, policy.Verdict)
	assert.Equal(t, "would call "+auth.URL+"/check", policy.Reason)
	last := (*steps)[len(*steps)-1]
	assert.Equal(t, StepHandOver, last.Kind)
	require.NotNil(t, last.Route, "the hand-over names the route and so its target")
	assert.Equal(t, "all", last.Route.ID)
	assert.Same(t, target, last.Route.Target.(*forwarded))
	assert.Zero(t, target.n)

	w := newNopWriter()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	g.ServeHTTP(w, readRequest(t, raw, "192.0.2.7:1").WithContext(ctx))
	assert.Equal(t, int64(1), calls.Load(), "a real request calls the auth server")
	assert.Equal(t, 1, target.n)
}

// Counters do not move in a simulation: a shadowed refusal, a fallback
// from a trusted proxy without X-Forwarded-For, a drop.
func TestSimulateCountersStill(t *testing.T) {
	deny, err := NewRuleSet(RuleSetConfig{ID: "waf", Rules: []Rule{{PathPrefix: "/x"}}})
	require.NoError(t, err)
	drop := dropPolicy{}
	g, err := New(Config{TrustedProxies: mustPrefix("10.0.0.1/32"), Hosts: []Host{{
		Names:    []string{"app.test"},
		Policies: []PolicyUse{{Policy: deny, Mode: Shadow}, {Policy: drop}},
		Routes:   []Route{{Prefix: "/", Target: &forwarded{}}},
	}}})
	require.NoError(t, err)
	tr, steps := record()
	w := newNopWriter()
	g.Simulate(w, readRequest(t, "GET /x HTTP/1.1\r\nHost: app.test\r\n\r\n", "10.0.0.1:1"), tr)
	c := g.State().Counters()
	assert.Zero(t, c.ShadowWouldBlock.Load())
	assert.Zero(t, c.HeaderFallback.Load())
	assert.Zero(t, c.Dropped.Load())
	assert.Zero(t, w.status, "nothing written for a drop")
	assert.Equal(t, StepDrop, (*steps)[len(*steps)-1].Kind)
}

// The headers step names each header the gate decides and why an absent
// one is absent.
func TestSimulateHeadersStep(t *testing.T) {
	g, err := New(Config{Hosts: []Host{
		{Names: []string{"app.test"}, HSTS: HSTS{MaxAge: time.Hour}, TLS: TLSPolicy{HTTP3: true}, Routes: []Route{{Prefix: "/", Target: &forwarded{}}}},
		{Names: []string{"plain.test"}, Routes: []Route{{Prefix: "/", Target: &forwarded{}}}},
	}})
	require.NoError(t, err)
	headers := func(raw string, tls bool) map[string]string {
		t.Helper()
		r := readRequest(t, raw, "192.0.2.7:1")
		if tls {
			r.TLS = tlsState(0x0304)
		}
		tr, steps := record()
		g.Simulate(newNopWriter(), r, tr)
		out := map[string]string{}
		for _, s := range *steps {
			for _, f := range s.Headers {
				out[f.Name] = f.Value + "|" + f.Absent
			}
		}
		return out
	}
	assert.Equal(t, map[string]string{
		"Server": "Paduraksa|", "Alt-Svc": `h3=":443"; ma=86400|`, "Strict-Transport-Security": "max-age=3600|",
	}, headers("GET / HTTP/1.1\r\nHost: app.test\r\n\r\n", true))
	assert.Equal(t, map[string]string{
		"Server": "Paduraksa|", "Alt-Svc": "|plain HTTP", "Strict-Transport-Security": "|plain HTTP",
	}, headers("GET / HTTP/1.1\r\nHost: app.test\r\n\r\n", false))
	assert.Equal(t, map[string]string{
		"Server": "Paduraksa|", "Alt-Svc": "|no HTTP/3", "Strict-Transport-Security": "|off",
	}, headers("GET / HTTP/1.1\r\nHost: plain.test\r\n\r\n", true))
}

type dropPolicy struct{}

func (dropPolicy) ID() string { return "drop" }
func (dropPolicy) Evaluate(*http.Request, *Request) Decision {
	return Decision{Verdict: Drop, Reason: "dropped"}
}
