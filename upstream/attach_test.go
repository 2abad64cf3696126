package upstream

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAttachOneWinner(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "h:1")}})
	d := r.Cluster("c").Destination("a")
	require.Nil(t, d.Attached())

	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			v := new(int)
			*v = i
			if d.Attach(nil, v) {
				wins.Add(1)
			}
		})
	}
	within(t, time.Minute, wg.Wait)
	assert.EqualValues(t, 1, wins.Load())
	cur := d.Attached().(*int)

	other := new(int)
	assert.False(t, d.Attach(other, new(int)), "a stale old value does not replace")
	assert.True(t, d.Attach(cur, other))
	assert.Same(t, other, d.Attached())

	// The attachment stays with the object across publishes that keep it.
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "h:1"), dest("b", "h:2")}})
	assert.Same(t, other, r.Cluster("c").Destination("a").Attached())
	assert.Nil(t, r.Cluster("c").Destination("b").Attached())
}

func TestInitialActiveHealth(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", InitialActiveHealth: Unhealthy,
		Destinations: []DestinationConfig{dest("a", "h:1")}})
	a := r.Cluster("c").Destination("a")
	assert.Equal(t, Unhealthy, a.ActiveHealth(), "a new destination starts with the planned verdict")
	a.SetActiveHealth(Healthy)

	apply(&r, ClusterConfig{ID: "c", InitialActiveHealth: Unhealthy,
		Destinations: []DestinationConfig{dest("a", "h:1"), dest("b", "h:2")}})
	assert.Equal(t, Healthy, a.ActiveHealth(), "a kept destination keeps its verdict")
	b := r.Cluster("c").Destination("b")
	assert.Equal(t, Unhealthy, b.ActiveHealth())
	assert.Equal(t, []*Destination{a}, r.Cluster("c").Members().Available)

	apply(&r, ClusterConfig{ID: "c", InitialActiveHealth: Unhealthy,
		Destinations: []DestinationConfig{dest("a", "h:9"), dest("b", "h:2")}})
	assert.Equal(t, Unhealthy, r.Cluster("c").Destination("a").ActiveHealth(), "a changed address starts over")
}
