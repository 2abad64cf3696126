package redislimit_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9/logging"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/fleet/internal/redistest"
	"github.com/paduraksa/paduraksa/fleet/redislimit"
	"github.com/paduraksa/paduraksa/gate"
)

// instance is one gateway of a fleet: its own gate state, its own store
// (own pool) on the shared Redis, a cluster rate limit, and a real
// listener serving its gate.
type instance struct {
	state *gate.State
	store *redislimit.Store
	limit *gate.RateLimit
	srv   *httptest.Server
	logs  *syncBuffer
}

func newInstance(t *testing.T, url string, timeout time.Duration, cfg gate.RateLimitConfig) *instance {
	t.Helper()
	store, err := redislimit.New(redislimit.Config{URL: url, Timeout: timeout})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	in := &instance{state: new(gate.State), store: store, logs: new(syncBuffer)}
	in.state.SetRateLimitStore(gate.RateLimitStoreConfig{Store: store, Timeout: timeout, Prefix: t.Name() + "|",
		Logger: slog.New(slog.NewTextHandler(in.logs, nil))})
	cfg.Buckets = gate.RateLimitCluster
	in.limit, err = in.state.RateLimit(cfg)
	require.NoError(t, err)
	ok := gate.TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *gate.Request) { w.WriteHeader(http.StatusNoContent) })
	g, err := gate.New(gate.Config{State: in.state, Hosts: []gate.Host{{
		Names:    []string{"fleet.example"},
		Policies: []gate.PolicyUse{{Policy: in.limit}},
		Routes:   []gate.Route{{Prefix: "/", Target: ok}},
	}}})
	require.NoError(t, err)
	in.srv = httptest.NewServer(g)
	t.Cleanup(in.srv.Close)
	return in
}

// get sends one request through the instance's listener and returns the
// status.
func (in *instance) get(t *testing.T, c *http.Client) int {
	req, err := http.NewRequest(http.MethodGet, in.srv.URL+"/", nil)
	require.NoError(t, err)
	req.Host = "fleet.example"
	resp, err := c.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// decide asks the instance's limit for client directly, returning the
// decision and how long it took.
func (in *instance) decide(client netip.Addr) (gate.Decision, time.Duration) {
	start := time.Now()
	d := in.limit.Evaluate(nil, &gate.Request{Client: client})
	return d, time.Since(start)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestClusterLimitHoldsTheRateAcrossThreeGates: three gateways on one
// Redis, each hammered over real HTTP by its own client, let through
// burst + rate × elapsed requests in total (the GCRA's reference count),
// within 5 %, where three local limits would let three times that
// through.
func TestClusterLimitHoldsTheRateAcrossThreeGates(t *testing.T) {
	redis := redistest.Start(t)
	// A burst that covers a pause of 250 ms in which no client asks (a
	// starved machine): tokens not asked for are lost only beyond it.
	const rate, burst = 400, 100
	cfg := gate.RateLimitConfig{ID: "api", Requests: rate, Period: time.Second, Burst: burst}
	fleet := make([]*instance, 3)
	for i := range fleet {
		// A deadline no load spike reaches: this test is about the
		// script's count, the next about the deadline.
		fleet[i] = newInstance(t, redis.URL, time.Second, cfg)
	}
	// Ten seconds, the span the limit's accuracy is stated over.
	const run = 10 * time.Second
	var allowed, limited, other atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for _, in := range fleet {
		wg.Go(func() {
			c := &http.Client{Timeout: 5 * time.Second}
			defer c.CloseIdleConnections()
			for time.Since(start) < run {
				switch in.get(t, c) {
				case http.StatusNoContent:
					allowed.Add(1)
				case http.StatusTooManyRequests:
					limited.Add(1)
				default:
					other.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	want := float64(burst) + rate*elapsed.Seconds()
	got := float64(allowed.Load())
	t.Logf("%d allowed, %d limited in %v: reference %.0f, off by %+.2f %%", allowed.Load(), limited.Load(), elapsed, want, 100*(got-want)/want)
	assert.Zero(t, other.Load())
	assert.Greater(t, limited.Load(), allowed.Load(), "the clients asked for more than the rate")
	assert.InDelta(t, want, got, 0.05*want)
	for _, in := range fleet {
		assert.Zero(t, in.state.Counters().RateLimitStoreFallback.Load(), "a decision fell back")
	}
}

// sharedBurst sends 60 decisions for one client, round robin across the
// fleet, as fast as they go, and returns how many were allowed. A burst
// in which a decision fell back to a local bucket (a load spike past the
// deadline on a busy machine) says nothing about sharing: it is sent
// again for another client, up to five times.
func sharedBurst(t *testing.T, fleet []*instance, clients netip.Addr) int {
	t.Helper()
	fallbacks := func() (n uint64) {
		for _, in := range fleet {
			n += in.state.Counters().RateLimitStoreFallback.Load()
		}
		return n
	}
	for range 5 {
		before, allowed := fallbacks(), 0
		for i := range 60 {
			if d, _ := fleet[i%len(fleet)].decide(clients); d.Verdict == gate.Continue {
				allowed++
			}
		}
		if fallbacks() == before {
			return allowed
		}
		t.Logf("a decision of the burst for %v fell back to a local bucket: again", clients)
		clients = clients.Next()
		time.Sleep(200 * time.Millisecond) // past the gate's retry pause: time, not an event
	}
	t.Fatal("every burst had a decision fall back to a local bucket")
	return 0
}

// TestRedisStoppedFallsBackAndComesBack: while Redis runs, a burst across
// three gateways is one bucket; Redis frozen (SIGSTOP), then killed
// mid-run, every decision is taken by the local bucket within the
// deadline (each decision timed), counted and logged once; Redis back,
// the fleet shares one bucket again, logged once.
func TestRedisStoppedFallsBackAndComesBack(t *testing.T) {
	redis := redistest.Start(t)
	const timeout = 10 * time.Millisecond
	// The slack a loaded two-core machine may add to a decision beyond
	// the deadline: scheduling, not waiting.
	const slack = 15 * time.Millisecond
	const burst = 10
	cfg := gate.RateLimitConfig{ID: "api", Requests: 1, Period: time.Minute, Burst: burst}
	fleet := make([]*instance, 3)
	for i := range fleet {
		fleet[i] = newInstance(t, redis.URL, timeout, cfg)
	}
	assert.Equal(t, burst, sharedBurst(t, fleet, netip.MustParseAddr("192.0.2.10")), "one bucket for the fleet")
	before := make([]uint64, len(fleet))
	logged := make([]int, len(fleet))
	for i, in := range fleet {
		before[i] = in.state.Counters().RateLimitStoreFallback.Load()
		logged[i] = len(in.logs.String())
	}
	since := func(i int) string { return fleet[i].logs.String()[logged[i]:] }

	var worst time.Duration
	waited := 0 // decisions that waited for the deadline
	decideAll := func(client netip.Addr, n int) (allowed int) {
		for i := range n {
			d, took := fleet[i%len(fleet)].decide(client)
			worst = max(worst, took)
			if took >= timeout {
				waited++
			}
			assert.LessOrEqual(t, took, timeout+slack, "a decision waited past the deadline: %s", d.Reason)
			if d.Verdict == gate.Continue {
				allowed++
			}
		}
		return allowed
	}

	// Frozen: connections open, nothing answered. Each instance waits
	// the deadline once, then decides locally without asking until its
	// retry pause is over.
	redis.Pause()
	frozen := netip.MustParseAddr("192.0.2.5")
	assert.Equal(t, 3*burst, decideAll(frozen, 60), "the local buckets decide")
	for i, in := range fleet {
		assert.True(t, in.state.RateLimitStoreFailing(), "instance %d", i)
	}
	t.Logf("slowest decision with Redis frozen: %v (deadline %v)", worst, timeout)
	assert.GreaterOrEqual(t, worst, timeout, "a decision waited for the frozen Redis, up to the deadline")
	// Once per instance, then its retry pause; twice on a machine so
	// slow that the pause passed within these 60 decisions.
	assert.LessOrEqual(t, waited, 2*len(fleet), "decisions waited for a store known to fail")
	redis.Resume()
	waitShared(t, fleet, netip.MustParseAddr("192.0.2.6"))
	for i, in := range fleet {
		before[i] = in.state.Counters().RateLimitStoreFallback.Load()
		logged[i] = len(in.logs.String())
	}

	worst = 0
	redis.Stop()
	b := netip.MustParseAddr("192.0.2.1")
	// Each instance's local bucket: burst each, three times the fleet's.
	assert.Equal(t, 3*burst, decideAll(b, 300), "the local buckets decide")
	for i, in := range fleet {
		assert.True(t, in.state.RateLimitStoreFailing(), "instance %d", i)
		assert.EqualValues(t, 100, in.state.Counters().RateLimitStoreFallback.Load()-before[i], "instance %d", i)
		assert.Equal(t, 1, strings.Count(since(i), "store failing"), "instance %d: %s", i, since(i))
	}
	t.Logf("slowest decision with Redis down: %v (deadline %v)", worst, timeout)

	redis.Start()
	waitShared(t, fleet, netip.MustParseAddr("192.0.2.2"))
	assert.Equal(t, burst, sharedBurst(t, fleet, netip.MustParseAddr("192.0.2.20")), "one bucket for the fleet again")
	for i, in := range fleet {
		assert.False(t, in.state.RateLimitStoreFailing(), "instance %d", i)
		assert.Equal(t, 1, strings.Count(since(i), "answering again"), "instance %d: %s", i, since(i))
	}
}

// waitShared polls the fleet (each poll a decision for client) until
// every instance's decision came from Redis again: back within the gate's
// retry pause and a reconnect.
func waitShared(t *testing.T, fleet []*instance, client netip.Addr) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		back := 0
		for _, in := range fleet {
			if d, _ := in.decide(client); d.Reason == "allowed by the cluster store" {
				back++
			}
		}
		if back == len(fleet) {
			return
		}
		require.False(t, time.Now().After(deadline), "the fleet did not share Redis again within 5s")
		time.Sleep(20 * time.Millisecond) // the gate's retry pause is time, not an event
	}
}

// TestStoreAllowIsGCRA: the script's answers for one key against the
// GCRA's: burst at once, then one more per interval.
func TestStoreAllowIsGCRA(t *testing.T) {
	redis := redistest.Start(t)
	store, err := redislimit.New(redislimit.Config{URL: redis.URL, Timeout: time.Second})
	require.NoError(t, err)
	defer store.Close()
	ctx := context.Background()
	const interval = 200 * time.Millisecond
	for i := range 3 {
		ok, err := store.Allow(ctx, "k", interval, 3)
		require.NoError(t, err)
		assert.True(t, ok, "token %d of the burst", i)
	}
	ok, err := store.Allow(ctx, "k", interval, 3)
	require.NoError(t, err)
	assert.False(t, ok, "the burst is spent")
	ok, _ = store.Allow(ctx, "other", interval, 3)
	assert.True(t, ok, "another key has its own bucket")
	time.Sleep(interval + 20*time.Millisecond) // the bucket refills with time: nothing else to wait for
	ok, _ = store.Allow(ctx, "k", interval, 3)
	assert.True(t, ok, "one token came back")
	ok, _ = store.Allow(ctx, "k", interval, 3)
	assert.False(t, ok, "only one")

	// Idle for far longer than a refill: the bucket holds its burst, no
	// more.
	const short = 20 * time.Millisecond
	for range 2 {
		store.Allow(ctx, "idle", short, 2)
	}
	time.Sleep(10 * short) // the bucket refills with time: nothing else to wait for
	allowed := 0
	for range 5 {
		if ok, _ := store.Allow(ctx, "idle", short, 2); ok {
			allowed++
		}
	}
	assert.Equal(t, 2, allowed, "a full bucket is burst tokens")
}

func TestMain(m *testing.M) {
	// The gate logs the store's state changes; the client's own line per
	// failed dial is noise here.
	logging.Disable()
	os.Exit(m.Run())
}

func TestNewProblems(t *testing.T) {
	_, err := redislimit.New(redislimit.Config{URL: "http://x", Timeout: -1, PoolSize: -1})
	require.Error(t, err)
	var codes []string
	for _, line := range strings.Split(err.Error(), "\n") {
		codes = append(codes, line[strings.LastIndex(line, "(")+1:len(line)-1])
	}
	assert.Equal(t, []string{redislimit.CodeURLInvalid, redislimit.CodeTimeoutInvalid, redislimit.CodePoolSizeInvalid}, codes)
}
