package gate

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTokensPerRoute: Tokens reads the bucket of the route it is given,
// the one Evaluate took from, and a shared limit's one bucket with nil.
func TestTokensPerRoute(t *testing.T) {
	per, err := NewRateLimit(RateLimitConfig{ID: "per", Requests: 1, Period: time.Hour, Burst: 3, Scope: RateLimitPerRoute})
	require.NoError(t, err)
	shared, err := NewRateLimit(RateLimitConfig{ID: "shared", Requests: 1, Period: time.Hour, Burst: 3})
	require.NoError(t, err)
	uses := []PolicyUse{{Policy: per}, {Policy: shared}}
	g, err := New(Config{Hosts: []Host{{Names: []string{"app.test"}, Routes: []Route{
		{ID: "a", Prefix: "/a", Target: &forwarded{}, Policies: uses},
		{ID: "b", Prefix: "/b", Target: &forwarded{}, Policies: uses},
	}}}})
	require.NoError(t, err)
	w := newNopWriter()
	for range 2 {
		w.reset()
		g.ServeHTTP(w, readRequest(t, "GET /a HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.1:1"))
		require.Equal(t, 200, w.status)
	}
	h, _ := g.Lookup("app.test")
	a, b := &h.Routes[0], &h.Routes[1]
	require.Equal(t, "a", a.ID)
	client := netip.MustParseAddr("192.0.2.1")
	assert.Equal(t, 1, per.Tokens(client, h, a), "route a spent two of three")
	assert.Equal(t, 3, per.Tokens(client, h, b), "route b has its own bucket")
	assert.Equal(t, 1, shared.Tokens(client, nil, nil), "one bucket for both routes")
	assert.Equal(t, 1, shared.Tokens(client, h, b), "a shared limit ignores the route")
}
