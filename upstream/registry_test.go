package upstream

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func dest(id, host string) DestinationConfig {
	return DestinationConfig{ID: id, Scheme: "http", Host: host}
}

func apply(r *Registry, cfgs ...ClusterConfig) {
	r.Plan(cfgs).Commit()
}

// within runs f and fails the test when it has not returned after limit.
func within(t testing.TB, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("still waiting after %v", limit)
	}
}

func TestRegistryKeepsStateForSameAddress(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:1"), dest("b", "127.0.0.1:2")}})
	c := r.Cluster("c")
	a := c.Destination("a")
	a.SetActiveHealth(Unhealthy)
	a.SetPassiveHealth(Healthy)
	a.Begin()

	// Metadata changes, order changes, another destination is added.
	cfg := dest("a", "127.0.0.1:1")
	cfg.Metadata = map[string]string{"zone": "z1"}
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("c", "127.0.0.1:3"), cfg, dest("b", "127.0.0.1:2")}})

	require.Same(t, c, r.Cluster("c"))
	got := c.Destination("a")
	require.Same(t, a, got, "a destination at the same address keeps its object")
	assert.Equal(t, Unhealthy, got.ActiveHealth())
	assert.Equal(t, Healthy, got.PassiveHealth())
	assert.EqualValues(t, 1, got.InFlight())
	assert.Equal(t, "z1", got.Zone())
	assert.Len(t, c.Members().All, 3)
}

func TestRegistryAddressChangeResetsState(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:1")}})
	old := r.Cluster("c").Destination("a")
	old.SetActiveHealth(Unhealthy)

	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:9")}})
	fresh := r.Cluster("c").Destination("a")
	require.NotSame(t, old, fresh)
	assert.Equal(t, Unknown, fresh.ActiveHealth(), "a verdict about the old address must not carry over")
	assert.True(t, old.Removed())

	// And back: the verdict about the new address does not return to the old one either.
	fresh.SetActiveHealth(Healthy)
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:1")}})
	back := r.Cluster("c").Destination("a")
	require.NotSame(t, old, back)
	require.NotSame(t, fresh, back)
	assert.Equal(t, Unknown, back.ActiveHealth())

	// A health address change is an address change too.
	cfg := dest("a", "127.0.0.1:1")
	cfg.HealthHost = "127.0.0.1:7"
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{cfg}})
	assert.NotSame(t, back, r.Cluster("c").Destination("a"))
}

func TestRegistryRemoveAndReAddIsNew(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:1"), dest("b", "127.0.0.1:2")}})
	a := r.Cluster("c").Destination("a")
	a.SetActiveHealth(Unhealthy)
	a.Begin()

	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("b", "127.0.0.1:2")}})
	assert.True(t, a.Removed())
	assert.Nil(t, r.Cluster("c").Destination("a"))
	a.End() // the in-flight request finishes on the removed destination
	assert.EqualValues(t, 0, a.InFlight())

	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:1"), dest("b", "127.0.0.1:2")}})
	re := r.Cluster("c").Destination("a")
	require.NotSame(t, a, re)
	assert.Equal(t, Unknown, re.ActiveHealth())
	assert.False(t, re.Removed())
}

func TestRegistryRemovedCluster(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:1")}})
	c := r.Cluster("c")
	apply(&r)
	assert.Nil(t, r.Cluster("c"))
	assert.True(t, c.Members().All[0].Removed())
	assert.Len(t, c.Members().Available, 1, "requests holding the old cluster still find its members")

	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:1")}})
	assert.NotSame(t, c, r.Cluster("c"), "a re-added cluster starts fresh")
}

func TestPlanDiscardedChangesNothing(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:1")}})
	c := r.Cluster("c")
	before := c.Members()

	cfg := dest("a", "127.0.0.1:1")
	cfg.Metadata = map[string]string{"zone": "z9"}
	p := r.Plan([]ClusterConfig{{ID: "c", Destinations: []DestinationConfig{cfg, dest("b", "127.0.0.1:2")}}, {ID: "d"}})
	require.NotNil(t, p.Cluster("d"))
	// Not committed.
	assert.Same(t, before, c.Members())
	assert.Nil(t, r.Cluster("d"))
	assert.Equal(t, "", c.Destination("a").Zone())
}

func TestAvailability(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "h:1"), dest("b", "h:2"), dest("c", "h:3")}})
	c := r.Cluster("c")
	ids := func(ds []*Destination) (out []string) {
		for _, d := range ds {
			out = append(out, d.ID())
		}
		return out
	}
	assert.Equal(t, []string{"a", "b", "c"}, ids(c.Members().Available))

	c.Destination("b").SetActiveHealth(Unhealthy)
	assert.Equal(t, []string{"a", "c"}, ids(c.Members().Available))
	c.Destination("a").SetPassiveHealth(Unhealthy)
	c.Destination("c").SetActiveHealth(Unhealthy)
	m := c.Members()
	assert.True(t, m.Panic, "HealthyOrPanic falls back to all")
	assert.Equal(t, []string{"a", "b", "c"}, ids(m.Available))

	c.SetAvailability(HealthyAndUnknown)
	assert.Empty(t, c.Members().Available)
	assert.False(t, c.Members().Panic)

	c.Destination("c").SetActiveHealth(Healthy)
	assert.Equal(t, []string{"c"}, ids(c.Members().Available))
}

func TestHealthCombined(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "h:1")}})
	d := r.Cluster("c").Destination("a")
	for _, tc := range []struct{ active, passive, want HealthState }{
		{Unknown, Unknown, Unknown},
		{Healthy, Unknown, Healthy},
		{Unknown, Healthy, Healthy},
		{Healthy, Unhealthy, Unhealthy},
		{Unhealthy, Healthy, Unhealthy},
	} {
		d.SetActiveHealth(tc.active)
		d.SetPassiveHealth(tc.passive)
		assert.Equal(t, tc.want, d.Health(), "%v/%v", tc.active, tc.passive)
	}
}

func TestConcurrentVerdictsAndPublishes(t *testing.T) {
	var r Registry
	cfg := ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "h:1"), dest("b", "h:2")}}
	apply(&r, cfg)
	c := r.Cluster("c")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 1000 {
				m := c.Members()
				for _, d := range m.Available {
					d.Begin()
					d.SetActiveHealth(HealthState(i % 3))
					d.End()
				}
			}
		})
	}
	for range 200 {
		apply(&r, cfg)
	}
	within(t, time.Minute, wg.Wait)
	for _, d := range c.Members().All {
		assert.EqualValues(t, 0, d.InFlight())
	}
}

func TestPlanKeepsUnchangedMembersView(t *testing.T) {
	var r Registry
	cfg := ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("b", "h:2"), dest("a", "h:1")}}
	apply(&r, cfg)
	c := r.Cluster("c")
	view := c.Members()

	// Same destinations in another order: the view is kept as it is.
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "h:1"), dest("b", "h:2")}})
	assert.Same(t, view, c.Members())

	// Any difference installs a new view.
	changed := dest("a", "h:1")
	changed.Metadata = map[string]string{"zone": "z"}
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{changed, dest("b", "h:2")}})
	assert.NotSame(t, view, c.Members())
	assert.Equal(t, "z", c.Destination("a").Zone())

	// Metadata compares by its entries: the same map, or another map with
	// the same entries, keeps the view; another value does not.
	view = c.Members()
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{changed, dest("b", "h:2")}})
	assert.Same(t, view, c.Members(), "the same map")
	again := dest("a", "h:1")
	again.Metadata = map[string]string{"zone": "z"}
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("b", "h:2"), again}})
	assert.Same(t, view, c.Members(), "an equal map")
	other := dest("a", "h:1")
	other.Metadata = map[string]string{"zone": "y"}
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{other, dest("b", "h:2")}})
	assert.NotSame(t, view, c.Members(), "a map of the same size with another value")
	assert.Equal(t, "y", c.Destination("a").Zone())
}

// BenchmarkPlanUnchanged measures a plan of 2000 clusters of two
// destinations each that all equal what the registry holds: the compare
// that keeps an unchanged cluster's members view, which a publish pays
// for every upstream it did not touch.
func BenchmarkPlanUnchanged(b *testing.B) {
	var r Registry
	cfgs := make([]ClusterConfig, 2000)
	for i := range cfgs {
		id := strconv.Itoa(i)
		cfgs[i] = ClusterConfig{ID: "u" + id, Destinations: []DestinationConfig{
			{ID: "d0", Scheme: "http", Host: "10.0.0.1:" + id, Metadata: map[string]string{"zone": "a"}},
			{ID: "d1", Scheme: "http", Host: "10.0.0.2:" + id},
		}}
	}
	apply(&r, cfgs...)
	before := r.Cluster("u0").Members()
	b.ReportAllocs()
	for b.Loop() {
		r.Plan(cfgs).Commit()
	}
	if r.Cluster("u0").Members() != before {
		b.Fatal("an unchanged cluster got a new members view")
	}
}
