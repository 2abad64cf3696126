package gate

import (
	"crypto/tls"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDecisionAllocations fails if the production path allocates for the
// outcomes a gateway gives most: forwarded, redirected, 403, 404, 421 and
// 429.
func TestDecisionAllocations(t *testing.T) {
	tgt := &forwarded{}
	g := benchGate(t, tgt)
	h2 := readRequest(t, "GET / HTTP/1.1\r\nHost: h1.example\r\n\r\n", "192.0.2.10:5000")
	h2.ProtoMajor, h2.TLS = 2, &tls.ConnectionState{Version: tls.VersionTLS13}
	tests := []struct {
		name   string
		r      *http.Request
		status int
	}{
		{"forwarded", readRequest(t, "GET /api/users?id=1 HTTP/1.1\r\nHost: App.Example:8080\r\nUser-Agent: curl/8\r\n\r\n", "192.0.2.10:5000"), 200},
		{"forwarded via trusted proxy", readRequest(t, "GET /api HTTP/1.1\r\nHost: a.app.example\r\nX-Forwarded-For: 203.0.113.9, 192.0.2.44\r\n\r\n", "10.0.0.1:5000"), 200},
		{"redirected", readRequest(t, "GET / HTTP/1.1\r\nHost: plain.example\r\n\r\n", "192.0.2.10:5000"), 308},
		{"403 address", readRequest(t, "GET /api HTTP/1.1\r\nHost: app.example\r\n\r\n", "198.51.100.1:5000"), 403},
		{"403 rule", readRequest(t, "GET /wp-login.php HTTP/1.1\r\nHost: app.example\r\n\r\n", "192.0.2.10:5000"), 403},
		{"404", readRequest(t, "GET /nothing HTTP/1.1\r\nHost: app.example\r\n\r\n", "192.0.2.10:5000"), 404},
		{"404 unknown host", readRequest(t, "GET / HTTP/1.1\r\nHost: nope.example\r\n\r\n", "192.0.2.10:5000"), 404},
		{"421", h2, 421},
		{"429", readRequest(t, "GET /tight HTTP/1.1\r\nHost: app.example\r\n\r\n", "192.0.2.11:5000"), 429},
	}
	w := newNopWriter()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allocsNone(t, g, w, tt.r, tt.status)
		})
	}
}

// allocsNone fails if g allocates to answer r, after two warm-up runs
// (the 429 case spends the bucket's one token there).
func allocsNone(t *testing.T, g *Gate, w *nopWriter, r *http.Request, status int) {
	t.Helper()
	for range 2 {
		w.reset()
		g.ServeHTTP(w, r)
	}
	require.Equal(t, status, w.status)
	allocs := testing.AllocsPerRun(200, func() {
		w.reset()
		g.ServeHTTP(w, r)
	})
	assert.Zero(t, allocs)
	assert.Equal(t, status, w.status)
}

// TestRouteMatchAllocations fails if matching allocates: a host of 50
// routes with method and header matches, the trie's case-folded lookup,
// templates and their values, regular expressions on the path, on a
// header sent twice and on an escaped query value.
func TestRouteMatchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop requests, and what they keep, at random")
	}
	values := TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {
		if rq.PathValue("id") == "" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	rs := append(manyRoutes(&forwarded{}),
		Route{ID: "tmpl", Prefix: "/t/{id}/{**rest}", PathType: PathTemplate, Target: values},
		Route{ID: "regex", Prefix: `/r/[0-9]+`, PathType: PathRegex, Target: &forwarded{}},
		Route{ID: "hre", Prefix: "/h", Target: &forwarded{}, Match: RouteMatch{Headers: []HeaderMatch{{Name: "X-Role", Type: HeaderRegex, Value: `.*admin`}}}},
		Route{ID: "qre", Prefix: "/q", Target: &forwarded{}, Match: RouteMatch{Query: []QueryMatch{{Name: "id", Type: QueryRegex, Value: `[0-9 ]+`}}}},
	)
	g, err := New(Config{Hosts: []Host{{Names: []string{"m.test"}, Routes: rs}}})
	require.NoError(t, err)
	w := newNopWriter()
	for _, tt := range []struct{ name, raw string }{
		{"canary", "GET /svc17/x HTTP/1.1\r\nHost: m.test\r\nX-Canary: 1\r\n\r\n"},
		{"stable", "POST /SVC3 HTTP/1.1\r\nHost: m.test\r\nX-Canary: 1\r\n\r\n"},
		{"template", "GET /T/abc/d/e HTTP/1.1\r\nHost: m.test\r\n\r\n"},
		{"regex", "GET /r/123 HTTP/1.1\r\nHost: m.test\r\n\r\n"},
		{"header twice", "GET /h HTTP/1.1\r\nHost: m.test\r\nX-Role: user\r\nX-Role: admin\r\n\r\n"},
		{"escaped query", "GET /q?id=1%202 HTTP/1.1\r\nHost: m.test\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			allocsNone(t, g, w, readRequest(t, tt.raw, "192.0.2.10:5000"), http.StatusOK)
		})
	}
}

// TestRedirectAllocations pins the cost of the HTTPS redirect for a target
// other than "/": the Location string and its one-element header slice,
// two allocations, and nothing else. The target "/" is precomputed per
// exact host name (see TestDecisionAllocations).
func TestRedirectAllocations(t *testing.T) {
	g := benchGate(t, &forwarded{})
	r := readRequest(t, "GET /a/b?c=d HTTP/1.1\r\nHost: plain.example\r\n\r\n", "192.0.2.10:5000")
	w := newNopWriter()
	g.ServeHTTP(w, r)
	require.Equal(t, 308, w.status)
	require.Equal(t, []string{"https://plain.example/a/b?c=d"}, w.h["Location"])
	allocs := testing.AllocsPerRun(200, func() {
		w.reset()
		g.ServeHTTP(w, r)
	})
	assert.Equal(t, 2.0, allocs)
}
