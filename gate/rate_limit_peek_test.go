package gate

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/clock"
)

// TestSimulatePeekReadsTheClientsBucket: a simulated request through a
// per-route rate limit reads the bucket the client has on that route, as
// it stands after real requests and a partial refill, and changes
// nothing: many peeks later the bucket holds what it held, a peek at a
// route or a client without a bucket reports a full one and leaves none
// behind, and real requests get exactly the tokens the peek reported.
func TestSimulatePeekReadsTheClientsBucket(t *testing.T) {
	man := clock.NewManual(time.Unix(1000, 0))
	state := &State{clock: clock.New(man)}
	rl, err := state.RateLimit(RateLimitConfig{ID: "rl", Requests: 1, Period: time.Second, Burst: 4, Scope: RateLimitPerRoute})
	require.NoError(t, err)
	uses := []PolicyUse{{Policy: rl}}
	g, err := New(Config{State: state, Hosts: []Host{{Names: []string{"app.test"}, Routes: []Route{
		{ID: "a", Prefix: "/a", Target: &forwarded{}, Policies: uses},
		{ID: "b", Prefix: "/b", Target: &forwarded{}, Policies: uses},
	}}}})
	require.NoError(t, err)
	h, _ := g.Lookup("app.test")
	a, b := &h.Routes[0], &h.Routes[1]
	require.Equal(t, "a", a.ID)
	client, other := netip.MustParseAddr("192.0.2.7"), netip.MustParseAddr("192.0.2.8")
	real := func(path string) int {
		w := newNopWriter()
		g.ServeHTTP(w, readRequest(t, "GET "+path+" HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.7:1"))
		return w.status
	}
	peek := func(path, from string) string {
		tr, steps := record()
		g.Simulate(newNopWriter(), readRequest(t, "GET "+path+" HTTP/1.1\r\nHost: app.test\r\n\r\n", from), tr)
		for _, s := range *steps {
			if s.Kind == StepPolicy {
				return s.Reason
			}
		}
		return "no policy step"
	}

	for range 3 {
		require.Equal(t, 200, real("/a/x"))
	}
	man.Advance(1500 * time.Millisecond) // one token back, half of another
	require.Equal(t, 2, rl.Tokens(client, h, a))

	for range 5 {
		assert.Equal(t, "would allow, 1 tokens left", peek("/a/x", "192.0.2.7:1"), "the bucket of route a as it stands")
		assert.Equal(t, "would allow, 3 tokens left", peek("/b/x", "192.0.2.7:1"), "route b: no bucket yet, a full one")
		assert.Equal(t, "would allow, 3 tokens left", peek("/a/x", "192.0.2.8:1"), "another client: no bucket yet")
	}
	assert.Equal(t, 2, rl.Tokens(client, h, a), "the peeks took no token and reset nothing")
	assert.Equal(t, 4, rl.Tokens(client, h, b), "and left no bucket on route b")
	assert.Equal(t, 4, rl.Tokens(other, h, a), "nor for the other client")

	assert.Equal(t, 200, real("/a/x"))
	assert.Equal(t, 200, real("/a/x"))
	assert.Equal(t, 429, real("/a/x"), "the two tokens the peek reported, no more")
	assert.Equal(t, "rate limited", peek("/a/x", "192.0.2.7:1"))
	assert.Equal(t, 200, real("/b/x"), "route b kept its full bucket")
}
