package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAvailabilityPolicies(t *testing.T) {
	_, c := newCluster(t, dest("a", "h:1"), dest("b", "h:2"))
	var logs logBuffer
	m := New(Options{Logger: logs.logger()})
	// Active checks are on (so their verdicts stand) but the monitor is
	// not started: the test sets the verdicts.
	update := func(avail string) {
		require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Availability: avail, Active: ActiveConfig{Enabled: true}}}))
	}
	update("")
	for _, d := range c.Members().All {
		d.SetActiveHealth(upstream.Unhealthy)
	}
	mem := c.Members()
	assert.True(t, mem.Panic)
	assert.Equal(t, []string{"a", "b"}, ids(mem.Available), "HealthyOrPanic serves from all when none is healthy")
	assert.True(t, logs.has("panic mode"))

	update(AvailabilityHealthyAndUnknown)
	assert.Empty(t, c.Members().Available, "HealthyAndUnknown gives an empty set: 503")
	assert.False(t, c.Members().Panic)
	assert.True(t, logs.has("requests get 503"))

	c.Destination("b").SetActiveHealth(upstream.Healthy)
	assert.Equal(t, []string{"b"}, ids(c.Members().Available))
	assert.True(t, logs.has("available destinations again"))
	c.Destination("a").SetActiveHealth(upstream.Unknown) // still normal: no new record
	assert.Equal(t, 1, strings.Count(logs.String(), "panic mode"), "each mode is logged when it begins")
	assert.Equal(t, 1, strings.Count(logs.String(), "available destinations again"))

	// A registered availability policy, by name.
	m = New(Options{Availability: map[string]upstream.AvailabilityFunc{
		"Everything": func(dst, all []*upstream.Destination) ([]*upstream.Destination, bool) {
			return append(dst, all...), false
		},
	}})
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Availability: "Everything", Active: ActiveConfig{Enabled: true}}}))
	assert.Len(t, c.Members().Available, 2)
	errs, _ := Config{Availability: "Everything"}.Validate()
	assert.Equal(t, map[string]string{"availability": "health.availability.unknown"}, problems(t, errs), "unknown without the registration")
}

// TestContinuity publishes changes to a cluster's policies, health settings
// and unrelated clusters while probes run, and checks that no verdict moves.
func TestContinuity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := new(upstream.Registry)
		cfgs := []upstream.ClusterConfig{
			{ID: "c", Destinations: []upstream.DestinationConfig{dest("good", "h:1"), dest("bad", "h:2"), dest("dead", "h:3")}},
			{ID: "other", Destinations: []upstream.DestinationConfig{dest("o", "h:9")}},
		}
		reg.Plan(cfgs).Commit()
		c, other := reg.Cluster("c"), reg.Cluster("other")
		probe := fakeTransport(func(host string) int {
			if host == "h:2" {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		})
		m := New(Options{ActivePolicies: map[string]ActivePolicy{"Strict": ConsecutiveFailures{}}})
		base := Config{
			Active:  ActiveConfig{Enabled: true, Interval: time.Second},
			Passive: PassiveConfig{Enabled: true, ReactivationPeriod: time.Hour},
		}
		require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: base, Transport: probe}, ClusterHealth{Cluster: other, Transport: probe}))
		require.NoError(t, m.Start(t.Context()))
		defer m.Close()
		time.Sleep(5 * time.Second)
		synctest.Wait()
		dead := c.Destination("dead")
		for range 10 {
			observe(m, dead, upstream.ConnectError)
		}
		// "dead" answers probes but fails real traffic; keep the passive
		// verdict so that its continuity shows.
		base.Passive.KeepUntilReactivation = true
		require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: base, Transport: probe}, ClusterHealth{Cluster: other, Transport: probe}))

		type verdict struct{ active, passive upstream.HealthState }
		snapshot := func() map[string]verdict {
			out := map[string]verdict{}
			for _, cl := range []*upstream.Cluster{c, other} {
				for _, d := range cl.Members().All {
					out[d.ID()] = verdict{d.ActiveHealth(), d.PassiveHealth()}
				}
			}
			return out
		}
		want := snapshot()
		require.Equal(t, map[string]verdict{
			"good": {upstream.Healthy, upstream.Unknown},
			"bad":  {upstream.Unhealthy, upstream.Unknown},
			"dead": {upstream.Healthy, upstream.Unhealthy},
			"o":    {upstream.Unknown, upstream.Unknown},
		}, want)
		ch := watch(t, m)

		changes := []struct {
			name string
			mut  func(*Config)
		}{
			{"interval", func(c *Config) { c.Active.Interval = 2 * time.Second }},
			{"timeout and path", func(c *Config) { c.Active.Timeout = time.Second; c.Active.Path = "/ready" }},
			{"active policy", func(c *Config) { c.Active.Policy = "Strict" }},
			{"threshold", func(c *Config) { c.Metadata = map[string]string{MetadataThreshold: "5"} }},
			{"passive policy", func(c *Config) { c.Passive.Policy = PassiveFailureRateWith5xx }},
			{"passive window", func(c *Config) { c.Passive.Window = 2 * time.Minute }},
			{"availability", func(c *Config) { c.Availability = AvailabilityHealthyAndUnknown }},
		}
		cfg := base
		for _, tc := range changes {
			tc.mut(&cfg)
			require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: cfg, Transport: probe}, ClusterHealth{Cluster: other, Transport: probe}), tc.name)
			// An unrelated cluster changes, and the registry republishes
			// with new metadata.
			require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: cfg, Transport: probe},
				ClusterHealth{Cluster: other, Config: Config{Passive: PassiveConfig{Enabled: true}}, Transport: probe}))
			cfgs[0].Destinations[0].Metadata = map[string]string{"zone": tc.name}
			reg.Plan(cfgs).Commit()
			time.Sleep(10 * time.Second) // several probing rounds on the bubble's clock
			synctest.Wait()
			assert.Equal(t, want, snapshot(), "after changing the %s", tc.name)
		}
		select {
		case ev := <-ch:
			t.Errorf("unexpected health change %+v", ev)
		default:
		}
		assert.Equal(t, []string{"good"}, ids(c.Members().Available))
	})
}

func TestTurningChecksOffResetsVerdicts(t *testing.T) {
	_, c := newCluster(t, dest("a", "h:1"))
	m := New(Options{})
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Active: ActiveConfig{Enabled: true}, Passive: PassiveConfig{Enabled: true}}}))
	a := c.Destination("a")
	a.SetActiveHealth(upstream.Unhealthy)
	for range 10 {
		observe(m, a, upstream.ConnectError)
	}
	require.Equal(t, upstream.Unhealthy, a.PassiveHealth())
	ch := watch(t, m)
	require.NoError(t, m.Update(ClusterHealth{Cluster: c}))
	assert.Equal(t, upstream.Unknown, a.ActiveHealth())
	assert.Equal(t, upstream.Unknown, a.PassiveHealth())
	awaitAll(t, ch, 10*time.Second, is("a", CheckActive, upstream.Unknown), is("a", CheckPassive, upstream.Unknown))
	m.Close()
}

// TestProbeFirst removes a destination and adds it back: with the opt-in,
// the new object stays out of rotation until its first probe passes.
func TestProbeFirst(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusServiceUnavailable)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer other.Close()

	hc := Config{Active: ActiveConfig{Enabled: true, Interval: 20 * time.Millisecond}, ProbeFirst: true}
	reg := new(upstream.Registry)
	publish := func(dests ...upstream.DestinationConfig) *upstream.Cluster {
		reg.Plan([]upstream.ClusterConfig{{ID: "c", Destinations: dests, InitialActiveHealth: hc.InitialActiveHealth()}}).Commit()
		return reg.Cluster("c")
	}
	a, b := dest("a", srv.Listener.Addr().String()), dest("b", other.Listener.Addr().String())
	c := publish(a, b)
	m := New(Options{})
	ch := watch(t, m)
	tr := transport(t)
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: hc, Transport: tr}))
	require.NoError(t, m.Start(context.Background()))
	defer m.Close()
	await(t, ch, 10*time.Second, is("b", CheckActive, upstream.Healthy))
	assert.Equal(t, []string{"b"}, ids(c.Members().Available), "a new destination waits for a passing probe")

	status.Store(http.StatusOK)
	await(t, ch, 10*time.Second, is("a", CheckActive, upstream.Healthy))
	assert.Equal(t, []string{"a", "b"}, ids(c.Members().Available))

	// Removed and re-added: a new object, out again until its probe passes.
	status.Store(http.StatusServiceUnavailable)
	c = publish(b)
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: hc, Transport: tr}))
	c = publish(a, b)
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: hc, Transport: tr}))
	assert.Equal(t, upstream.Unhealthy, c.Destination("a").ActiveHealth())
	assert.Equal(t, []string{"b"}, ids(c.Members().Available))
	status.Store(http.StatusOK)
	ev := await(t, ch, 10*time.Second, is("a", CheckActive, upstream.Healthy))
	assert.Same(t, c.Destination("a"), ev.Destination)
	assert.Equal(t, []string{"a", "b"}, ids(c.Members().Available))
}

func TestUpdateRefusesInvalidAndChangesNothing(t *testing.T) {
	_, c := newCluster(t, dest("a", "h:1"))
	m := New(Options{})
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Availability: AvailabilityHealthyAndUnknown}}))
	c.Destination("a").SetActiveHealth(upstream.Unhealthy)
	err := m.Update(ClusterHealth{Cluster: c, Config: Config{Active: ActiveConfig{Interval: -1}}})
	var v *ValidationError
	require.True(t, errors.As(err, &v))
	assert.Equal(t, "health.active.interval.invalid", v.Code)
	assert.Empty(t, c.Members().Available, "the old availability policy still applies")
	assert.EqualError(t, m.Update(ClusterHealth{}), "health: clusters[0]: nil cluster")
}

func TestSlowStartStamps(t *testing.T) {
	now := time.Unix(1000, 0)
	m := New(Options{Clock: func() time.Time { return now }})
	_, c := newCluster(t, dest("a", "h:1"), dest("b", "h:2"))
	require.NoError(t, m.Update(ClusterHealth{Cluster: c}))
	a := c.Destination("a")
	assert.Equal(t, now.UnixNano(), a.AvailableSince())

	now = now.Add(time.Minute)
	c.Destination("b").SetActiveHealth(upstream.Healthy) // a stays available: no new stamp
	assert.Equal(t, time.Unix(1000, 0).UnixNano(), a.AvailableSince())

	a.SetActiveHealth(upstream.Unhealthy)
	now = now.Add(time.Minute)
	a.SetActiveHealth(upstream.Healthy)
	assert.Equal(t, now.UnixNano(), a.AvailableSince(), "stamped again when it recovers")
}
