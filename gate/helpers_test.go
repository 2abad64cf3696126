package gate

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

// patience bounds every wait of a test, so that a regression fails that
// test in seconds rather than hanging the package.
const patience = 10 * time.Second

// nopWriter is a ResponseWriter that keeps its header map across requests
// (cleared by reset) and remembers the status.
type nopWriter struct {
	h      http.Header
	status int
	n      int
}

func newNopWriter() *nopWriter { return &nopWriter{h: make(http.Header, 8)} }

func (w *nopWriter) Header() http.Header { return w.h }
func (w *nopWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
}
func (w *nopWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = 200
	}
	w.n += len(b)
	return len(b), nil
}
func (w *nopWriter) reset() { clear(w.h); w.status, w.n = 0, 0 }

// readRequest parses a raw HTTP/1.1 request as a server would.
func readRequest(t testing.TB, raw, remote string) *http.Request {
	t.Helper()
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	require.NoError(t, err)
	r.RemoteAddr = remote
	return r
}

// forwarded is a Target that records that it ran.
type forwarded struct{ n int }

func (f *forwarded) Forward(w http.ResponseWriter, r *http.Request, rq *Request) {
	f.n++
	w.WriteHeader(http.StatusOK)
}

func mustPrefix(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, v := range s {
		out[i] = netip.MustParsePrefix(v)
	}
	return out
}

// benchGate is the gate of the decision benchmark and the allocation
// tests: a proxy host with an allow list, a rule set and a rate limit, a
// redirecting plain-HTTP host, and an HTTP/1.1-only host.
func benchGate(t testing.TB, target Target) *Gate {
	t.Helper()
	al, err := NewAccessList(AccessListConfig{ID: "office", Allow: mustPrefix("10.0.0.0/8", "192.0.2.0/24"), Deny: mustPrefix("10.9.9.9/32")})
	require.NoError(t, err)
	rs, err := NewRuleSet(RuleSetConfig{ID: "waf", Rules: []Rule{
		{PathPrefix: "/wp-", Action: RuleDeny},
		{UserAgentContains: "badbot", Action: RuleDeny},
		{PathExact: "/admin", Methods: []string{"DELETE"}, Action: RuleDeny},
	}})
	require.NoError(t, err)
	rl, err := NewRateLimit(RateLimitConfig{ID: "rl", Requests: 1 << 30, Period: time.Second, Burst: 1 << 20, TableSize: 1024})
	require.NoError(t, err)
	tight, err := NewRateLimit(RateLimitConfig{ID: "tight", Requests: 1, Period: time.Hour, Burst: 1, TableSize: 64})
	require.NoError(t, err)
	g, err := New(Config{
		TrustedProxies: mustPrefix("10.0.0.1/32"),
		Hosts: []Host{
			{
				Names:    []string{"app.example", "*.app.example"},
				Policies: []PolicyUse{{Policy: al}, {Policy: rs}, {Policy: rl}},
				Routes: []Route{
					{ID: "api", Prefix: "/api", Target: target},
					{ID: "tight", Prefix: "/tight", Target: target, Policies: []PolicyUse{{Policy: tight}}},
				},
				HSTS: HSTS{MaxAge: 365 * 24 * time.Hour},
			},
			{Names: []string{"plain.example"}, HTTPSRedirect: HTTPSRedirect{Enabled: true}, Routes: []Route{{Prefix: "/", Target: target}}},
			{Names: []string{"h1.example"}, TLS: TLSPolicy{HTTP1Only: true}, Routes: []Route{{Prefix: "/", Target: target}}},
		},
	})
	require.NoError(t, err)
	return g
}

// manyRoutes are 50 routes on one host, as a gateway in front of 25
// services has them: each service's stable route takes GET, HEAD and
// POST, and its canary route GET with X-Canary: 1.
func manyRoutes(target Target) []Route {
	var rs []Route
	for i := range 25 {
		p := "/svc" + strconv.Itoa(i)
		rs = append(rs,
			Route{ID: "svc" + strconv.Itoa(i), Prefix: p, Target: target, Match: RouteMatch{Methods: []string{"GET", "HEAD", "POST"}}},
			Route{ID: "svc" + strconv.Itoa(i) + "-canary", Prefix: p, Target: target, Match: RouteMatch{
				Methods: []string{"GET"}, Headers: []HeaderMatch{{Name: "X-Canary", Value: "1"}}}})
	}
	return rs
}

// benchGateMany is benchGate's proxy host, policies and all, with the 50
// routes of manyRoutes in place of its two.
func benchGateMany(t testing.TB, target Target) *Gate {
	t.Helper()
	g := benchGate(t, target)
	h := *g.Host(0)
	g2, err := New(Config{
		TrustedProxies: mustPrefix("10.0.0.1/32"),
		Hosts:          []Host{{Names: h.Names, Policies: h.Policies, HSTS: h.HSTS, Routes: manyRoutes(target)}},
	})
	require.NoError(t, err)
	return g2
}

func bcryptHash(t testing.TB, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	require.NoError(t, err)
	return string(h)
}

func basic(user, password string) http.Header {
	return http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}}
}

func tlsState(version uint16) *tls.ConnectionState {
	return &tls.ConnectionState{Version: version, HandshakeComplete: true}
}
