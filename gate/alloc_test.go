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
			// Warm up: the 429 case spends the bucket's one token here.
			for range 2 {
				w.reset()
				g.ServeHTTP(w, tt.r)
			}
			require.Equal(t, tt.status, w.status)
			allocs := testing.AllocsPerRun(200, func() {
				w.reset()
				g.ServeHTTP(w, tt.r)
			})
			assert.Zero(t, allocs)
			assert.Equal(t, tt.status, w.status)
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
