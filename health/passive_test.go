package health

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/paduraksa/paduraksa/internal/clock"
	"github.com/paduraksa/paduraksa/internal/seam"
	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPassiveKilledUnderLoad kills one of three destinations while clients
// send requests, as the forwarder would: pick, count in flight, send,
// observe.
func TestPassiveKilledUnderLoad(t *testing.T) {
	var cfgs []upstream.DestinationConfig
	for _, id := range []string{"a", "b", "c"} {
		if id == "b" { // killed: nothing answers
			cfgs = append(cfgs, dest(id, refusedAddr(t)))
			continue
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, id) }))
		t.Cleanup(srv.Close)
		cfgs = append(cfgs, dest(id, srv.Listener.Addr().String()))
	}
	_, c := newCluster(t, cfgs...)
	m := New(Options{})
	defer m.Close()
	ch := watch(t, m)
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Passive: PassiveConfig{Enabled: true}}}))

	client := &http.Client{Transport: transport(t), Timeout: 30 * time.Second}
	var mu sync.Mutex
	failures := map[string]int{}
	served := 0
	var next int
	var wg sync.WaitGroup
	const workers = 8
	for range workers {
		wg.Go(func() {
			for range 50 {
				mem := c.Members()
				mu.Lock()
				next++
				d := mem.Available[next%len(mem.Available)] // round robin: the worst case for a dead destination
				mu.Unlock()
				d.Begin()
				ctx := context.Background()
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+d.Host()+"/", nil)
				resp, err := client.Do(req)
				o := upstream.Observation{Destination: d, Outcome: upstream.ClassifyRoundTrip(ctx, err)}
				if err == nil {
					o.Status = resp.StatusCode
					if _, err := io.Copy(io.Discard, resp.Body); err != nil {
						o.Outcome = upstream.BodyError
					}
					resp.Body.Close()
				}
				d.End()
				m.Observe(o)
				mu.Lock()
				if o.Outcome != upstream.Success {
					failures[d.ID()]++
				} else {
					served++
				}
				mu.Unlock()
			}
		})
	}
	within(t, time.Minute, wg.Wait)
	ev := await(t, ch, 10*time.Second, is("b", CheckPassive, upstream.Unhealthy))
	t.Logf("failures %v, served %d; %s", failures, served, ev.Reason)
	assert.Equal(t, upstream.Unhealthy, c.Destination("b").PassiveHealth())
	assert.GreaterOrEqual(t, failures["b"], DefaultMinRequests, "out after the minimum count")
	assert.LessOrEqual(t, failures["b"], DefaultMinRequests+workers, "and not much later: only requests already picked fail")
	assert.Zero(t, failures["a"]+failures["c"])
	assert.Equal(t, []string{"a", "c"}, ids(c.Members().Available))
	assert.Contains(t, ev.Reason, "reactivation in 1m0s")
}

// passiveCluster is a cluster of a and b under a monitor with passive
// checks on, made inside the caller's synctest bubble.
func passiveCluster(t *testing.T, p PassiveConfig) (*Monitor, *upstream.Cluster, chan Change) {
	_, c := newCluster(t, dest("a", "h:1"), dest("b", "h:2"))
	m := New(Options{})
	t.Cleanup(func() { m.Close() })
	p.Enabled = true
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Passive: p}}))
	return m, c, watch(t, m)
}

func TestPassiveWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, c, ch := passiveCluster(t, PassiveConfig{Window: 10 * time.Second})
		a := c.Destination("a")
		for range 9 {
			observe(m, a, upstream.ConnectError)
		}
		assert.Equal(t, upstream.Unknown, a.PassiveHealth(), "below the minimum count")

		time.Sleep(11 * time.Second) // the bubble's clock: the nine leave the window
		for range 9 {
			observe(m, a, upstream.Timeout)
		}
		assert.Equal(t, upstream.Unknown, a.PassiveHealth(), "old failures left the window")

		// The rate: 3 of 10 is not above 0.3, 4 of 11 is.
		_, c2 := newCluster(t, dest("x", "h:1"))
		require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Passive: PassiveConfig{Enabled: true, Window: 10 * time.Second}}},
			ClusterHealth{Cluster: c2, Config: Config{Passive: PassiveConfig{Enabled: true}}}))
		x := c2.Destination("x")
		for range 7 {
			observe(m, x, upstream.Success)
		}
		for range 3 {
			observe(m, x, upstream.BodyError)
		}
		assert.Equal(t, upstream.Unknown, x.PassiveHealth())
		observe(m, x, upstream.ResponseHeaderError)
		assert.Equal(t, upstream.Unhealthy, x.PassiveHealth())
		ev := await(t, ch, time.Second, is("x", CheckPassive, upstream.Unhealthy))
		assert.Contains(t, ev.Reason, "4 of 11 requests failed")

		observe(m, a, upstream.ConnectError)
		assert.Equal(t, upstream.Unhealthy, a.PassiveHealth(), "ten failures in the window")
		assert.Equal(t, []string{"b"}, ids(c.Members().Available))
	})
}

func TestPassiveReactivation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, c, ch := passiveCluster(t, PassiveConfig{Window: 10 * time.Second, ReactivationPeriod: 30 * time.Second})
		a := c.Destination("a")
		for range 10 {
			observe(m, a, upstream.ConnectError)
		}
		marked := time.Now()
		await(t, ch, time.Second, is("a", CheckPassive, upstream.Unhealthy))

		time.Sleep(30*time.Second - time.Millisecond)
		synctest.Wait()
		assert.Equal(t, upstream.Unhealthy, a.PassiveHealth(), "out for the whole period")

		ev := await(t, ch, time.Minute, is("a", CheckPassive, upstream.Unknown))
		assert.Equal(t, 30*time.Second, ev.Time.Sub(marked), "back to Unknown after the period")
		assert.Equal(t, "reactivation period elapsed", ev.Reason)
		assert.Equal(t, []string{"a", "b"}, ids(c.Members().Available))

		// The window starts over: one more failure does not mark it again.
		observe(m, a, upstream.ConnectError)
		assert.Equal(t, upstream.Unknown, a.PassiveHealth())
	})
}

// TestPassiveOnManualClock runs the window and the reactivation timer on
// a clock the test moves by hand: they read the monitor's clock, not
// package time, so nothing here waits for real time to pass.
func TestPassiveOnManualClock(t *testing.T) {
	start := time.Unix(1000, 0)
	man := clock.NewManual(start)
	_, c := newCluster(t, dest("a", "h:1"), dest("b", "h:2"))
	m := New(Options{})
	m.clock = clock.New(man)
	defer m.Close()
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Passive: PassiveConfig{
		Enabled: true, Window: 10 * time.Second, ReactivationPeriod: 30 * time.Second,
	}}}))
	ch := watch(t, m)
	a := c.Destination("a")

	for range 9 {
		observe(m, a, upstream.ConnectError)
	}
	man.Advance(11 * time.Second) // the nine leave the window
	observe(m, a, upstream.ConnectError)
	assert.Equal(t, upstream.Unknown, a.PassiveHealth(), "one failure in the window")
	for range 9 {
		observe(m, a, upstream.ConnectError)
	}
	require.Equal(t, upstream.Unhealthy, a.PassiveHealth())
	ev := await(t, ch, 10*time.Second, is("a", CheckPassive, upstream.Unhealthy))
	marked := start.Add(11 * time.Second)
	assert.Equal(t, marked, ev.Time)

	man.Advance(30*time.Second - time.Nanosecond)
	assert.Equal(t, upstream.Unhealthy, a.PassiveHealth(), "out for the whole period")
	man.Advance(time.Nanosecond) // runs the reactivation before it returns
	assert.Equal(t, upstream.Unknown, a.PassiveHealth())
	ev = await(t, ch, 10*time.Second, is("a", CheckPassive, upstream.Unknown))
	assert.Equal(t, 30*time.Second, ev.Time.Sub(marked))
	assert.Equal(t, "reactivation period elapsed", ev.Reason)
}

func TestPassiveReactivationWarning(t *testing.T) {
	cfg := Config{Passive: PassiveConfig{Enabled: true, ReactivationPeriod: 10 * time.Second}}
	errs, warns := cfg.Validate()
	assert.Empty(t, errs)
	require.Len(t, warns, 1)
	var v *ValidationError
	require.ErrorAs(t, warns[0], &v)
	assert.Equal(t, "health.passive.reactivationPeriod.raised", v.Code)
	assert.Equal(t, "passive.reactivationPeriod", v.Path)
	assert.Contains(t, v.Msg, "destinations return after 1m0s")

	// And the warning tells the truth: the destination is out for the window.
	synctest.Test(t, func(t *testing.T) {
		m, c, ch := passiveCluster(t, cfg.Passive)
		a := c.Destination("a")
		for range 10 {
			observe(m, a, upstream.TLSError)
		}
		start := time.Now()
		await(t, ch, time.Second, is("a", CheckPassive, upstream.Unhealthy))
		ev := await(t, ch, 2*time.Minute, is("a", CheckPassive, upstream.Unknown))
		assert.Equal(t, time.Minute, ev.Time.Sub(start))
	})

	// A window short enough removes the warning.
	cfg.Passive.Window = 10 * time.Second
	_, warns = cfg.Validate()
	assert.Empty(t, warns)
}

func TestPassive5xxOptIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, c, _ := passiveCluster(t, PassiveConfig{})
		a := c.Destination("a")
		for range 50 {
			m.Observe(upstream.Observation{Destination: a, Status: http.StatusServiceUnavailable})
		}
		assert.Equal(t, upstream.Unknown, a.PassiveHealth(), "TransportFailureRate ignores 5xx")

		m5, c5, _ := passiveCluster(t, PassiveConfig{Policy: PassiveFailureRateWith5xx})
		b := c5.Destination("a")
		for range 50 {
			m5.Observe(upstream.Observation{Destination: b, Status: http.StatusTooManyRequests})
		}
		assert.Equal(t, upstream.Unknown, b.PassiveHealth(), "a 4xx is never a failure")
		for range 21 {
			m5.Observe(upstream.Observation{Destination: b, Status: http.StatusInternalServerError})
		}
		assert.Equal(t, upstream.Unknown, b.PassiveHealth(), "21 of 71 is not above 0.3")
		m5.Observe(upstream.Observation{Destination: b, Status: http.StatusInternalServerError})
		assert.Equal(t, upstream.Unhealthy, b.PassiveHealth(), "22 of 72 is: the opt-in counts 5xx")
	})
}

// TestPassiveClientSideNeverCounts: an exchange the client ended is not
// the destination's doing, in any policy, whatever status came with it.
func TestPassiveClientSideNeverCounts(t *testing.T) {
	for _, policy := range []string{PassiveTransportFailureRate, PassiveFailureRateWith5xx} {
		for _, o := range []upstream.Outcome{upstream.ClientAbort, upstream.ClientBodyError} {
			synctest.Test(t, func(t *testing.T) {
				m, c, _ := passiveCluster(t, PassiveConfig{Policy: policy})
				a := c.Destination("a")
				for range 100 {
					m.Observe(upstream.Observation{Destination: a, Outcome: o, Status: http.StatusBadGateway})
				}
				st := a.Attached(seam.Open()).(*destState)
				req, fail := st.ring.Load().sum(time.Now().UnixNano())
				assert.Zero(t, req+fail, "%v under %s is not even a request", o, policy)
				for range 9 {
					observe(m, a, upstream.ConnectError)
				}
				assert.Equal(t, upstream.Unknown, a.PassiveHealth())
			})
		}
	}
}

func TestActiveSuccessEndsPassiveVerdict(t *testing.T) {
	for _, keep := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			_, c := newCluster(t, dest("a", "h:1"), dest("b", "h:2"))
			m := New(Options{})
			ch := watch(t, m)
			require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: fakeTransport(func(string) int { return 200 }), Config: Config{
				Active:  ActiveConfig{Enabled: true, Interval: time.Second},
				Passive: PassiveConfig{Enabled: true, KeepUntilReactivation: keep},
			}}))
			require.NoError(t, m.Start(t.Context()))
			defer m.Close()
			time.Sleep(time.Millisecond)
			synctest.Wait() // the first round passed
			a := c.Destination("a")
			for range 10 {
				observe(m, a, upstream.ConnectError)
			}
			require.Equal(t, upstream.Unhealthy, a.PassiveHealth())
			marked := time.Now()

			if keep {
				time.Sleep(59 * time.Second)
				synctest.Wait()
				assert.Equal(t, upstream.Unhealthy, a.PassiveHealth(), "kept for the whole period")
				return
			}
			ev := await(t, ch, time.Minute, is("a", CheckPassive, upstream.Unknown))
			assert.Equal(t, "active probe passed", ev.Reason)
			assert.LessOrEqual(t, ev.Time.Sub(marked), time.Second, "the next passing probe ends it")
		})
	}
}

func TestObserveAllocatesNothing(t *testing.T) {
	_, c := newCluster(t, dest("a", "h:1"))
	m := New(Options{})
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Passive: PassiveConfig{Enabled: true, FailureRate: 0.9}}}))
	a := c.Destination("a")
	ok := upstream.Observation{Destination: a, Status: http.StatusOK}
	for _, o := range []upstream.Observation{
		ok,
		{Destination: a, Outcome: upstream.ConnectError},
		{Destination: a, Status: http.StatusServiceUnavailable},
		{Destination: a, Outcome: upstream.ClientAbort},
	} {
		allocs := testing.AllocsPerRun(500, func() {
			m.Observe(ok)
			m.Observe(o)
		})
		assert.Zero(t, allocs, "%v %d", o.Outcome, o.Status)
	}
	assert.Equal(t, upstream.Unknown, a.PassiveHealth())
	// Also once the verdict is in.
	_, c2 := newCluster(t, dest("b", "h:2"))
	require.NoError(t, m.Update(ClusterHealth{Cluster: c2, Config: Config{Passive: PassiveConfig{Enabled: true}}}))
	b := c2.Destination("b")
	failed := upstream.Observation{Destination: b, Outcome: upstream.ConnectError}
	for range 10 {
		m.Observe(failed)
	}
	require.Equal(t, upstream.Unhealthy, b.PassiveHealth())
	assert.Zero(t, testing.AllocsPerRun(500, func() { m.Observe(failed) }))
}

func BenchmarkPassiveObserve(b *testing.B) {
	_, c := newCluster(b, dest("a", "h:1"))
	m := New(Options{})
	if err := m.Update(ClusterHealth{Cluster: c, Config: Config{Passive: PassiveConfig{Enabled: true}}}); err != nil {
		b.Fatal(err)
	}
	d := c.Destination("a")
	ok := upstream.Observation{Destination: d, Status: http.StatusOK}
	b.Run("outcome=success", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Observe(ok)
		}
	})
	b.Run("outcome=mixed", func(b *testing.B) {
		b.ReportAllocs()
		failed := upstream.Observation{Destination: d, Outcome: upstream.ConnectError}
		i := 0
		for b.Loop() {
			o := ok
			if i++; i%8 == 0 {
				o = failed // 12.5 %: evaluated, never marks
			}
			m.Observe(o)
		}
	})
	b.Run("outcome=success/parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Observe(ok)
			}
		})
	})
}
