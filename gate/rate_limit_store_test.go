package gate

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedStore answers with allow, or fails with err, or (block) waits
// for ctx's deadline (two seconds at most); it records the keys it was
// asked.
type scriptedStore struct {
	mu    sync.Mutex
	allow bool
	err   error
	block bool
	keys  []string
}

func (s *scriptedStore) Allow(ctx context.Context, key string, interval time.Duration, burst int) (bool, error) {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	allow, err, block := s.allow, s.err, s.block
	s.mu.Unlock()
	if block {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(2 * time.Second):
			return false, errors.New("scriptedStore: the call had no deadline")
		}
	}
	return allow, err
}

func (s *scriptedStore) set(allow bool, err error, block bool) {
	s.mu.Lock()
	s.allow, s.err, s.block = allow, err, block
	s.mu.Unlock()
}

// TestRateLimitClusterFallsBack: the store decides while it answers; a
// failure or a missed deadline hands the decision to the local bucket
// (counted, logged once when the store starts failing and once when it
// answers again), and no decision waits beyond the deadline.
func TestRateLimitClusterFallsBack(t *testing.T) {
	store := &scriptedStore{allow: false}
	var logs bytes.Buffer
	state := new(State)
	state.SetRateLimitStore(RateLimitStoreConfig{Store: store, Timeout: 20 * time.Millisecond, Prefix: "p:",
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	rl, err := state.RateLimit(RateLimitConfig{ID: "rl", Requests: 1, Period: time.Hour, Buckets: RateLimitCluster})
	require.NoError(t, err)
	rq := &Request{Client: netip.MustParseAddr("192.0.2.7")}

	d := rl.Evaluate(nil, rq)
	assert.Equal(t, Respond, d.Verdict, "the store refused")
	assert.Equal(t, reasonClusterLimited, d.Reason)
	assert.Zero(t, state.Counters().RateLimitStoreFallback.Load())
	assert.Equal(t, 1, rl.Tokens(rq.Client, nil, nil), "the local bucket is untouched while the store decides")

	store.set(false, errors.New("connection refused"), false)
	assert.Equal(t, Continue, rl.Evaluate(nil, rq).Verdict, "the local bucket's one token")
	assert.Equal(t, Respond, rl.Evaluate(nil, rq).Verdict, "the local bucket is empty")
	assert.True(t, state.RateLimitStoreFailing())
	assert.EqualValues(t, 2, state.Counters().RateLimitStoreFallback.Load())
	assert.Equal(t, 1, strings.Count(logs.String(), "store failing"), logs.String())

	// A store that does not answer: the decision waits the deadline, no
	// longer. The retry pause is skipped by clearing it.
	store.set(false, nil, true)
	state.store.Load().retryAt.Store(0)
	start := time.Now()
	assert.Equal(t, Respond, rl.Evaluate(nil, rq).Verdict)
	assert.Less(t, time.Since(start), 200*time.Millisecond, "a decision waited past the deadline")
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "the store was asked")

	store.set(true, nil, false)
	state.store.Load().retryAt.Store(0)
	d = rl.Evaluate(nil, rq)
	assert.Equal(t, Continue, d.Verdict)
	assert.Equal(t, reasonClusterAllowed, d.Reason)
	assert.False(t, state.RateLimitStoreFailing())
	assert.Equal(t, 1, strings.Count(logs.String(), "store failing"), logs.String())
	assert.Equal(t, 1, strings.Count(logs.String(), "answering again"), logs.String())

	store.mu.Lock()
	assert.Equal(t, "p:rl|192.0.2.7", store.keys[0])
	store.mu.Unlock()
}

// TestRateLimitClusterKeys: every instance names a client's bucket the
// same way: IPv4 whole (mapped or not), IPv6 by its /64, the route's key
// for a per-route limit.
func TestRateLimitClusterKeys(t *testing.T) {
	state := new(State)
	state.SetRateLimitStore(RateLimitStoreConfig{Store: &scriptedStore{}})
	shared, err := state.RateLimit(RateLimitConfig{ID: "a", Requests: 1, Period: time.Second, Buckets: RateLimitCluster})
	require.NoError(t, err)
	perRoute, err := state.RateLimit(RateLimitConfig{ID: "b", Requests: 1, Period: time.Second, Buckets: RateLimitCluster, Scope: RateLimitPerRoute})
	require.NoError(t, err)
	rt := &Route{scopeKey: 0xabc}
	assert.Equal(t, "a|192.0.2.1", shared.clusterKey("", netip.MustParseAddr("::ffff:192.0.2.1"), 0))
	assert.Equal(t, "a|2001:db8:1:2::/64", shared.clusterKey("", netip.MustParseAddr("2001:db8:1:2:3::4%eth0"), 0))
	assert.Equal(t, "a|unknown", shared.clusterKey("", netip.Addr{}, 0))
	assert.Equal(t, "b|192.0.2.1|abc", perRoute.clusterKey("", netip.MustParseAddr("192.0.2.1"), perRoute.scope(nil, rt)))

	state.SetRateLimitStore(RateLimitStoreConfig{})
	assert.Equal(t, Continue, shared.Evaluate(nil, &Request{Client: netip.MustParseAddr("192.0.2.1")}).Verdict, "a detached store: local")
	assert.EqualValues(t, 1, state.Counters().RateLimitStoreFallback.Load())
	_, err = state.RateLimit(shared.Config())
	assert.Equal(t, []string{CodeRateLimitStoreMissing + " buckets"}, codePaths(err), "an unchanged cluster limit after the store was detached")
}
