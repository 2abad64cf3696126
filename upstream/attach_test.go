package upstream

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/seam"
)

func TestAttachOneWinner(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "h:1")}})
	d := r.Cluster("c").Destination("a")
	require.Nil(t, d.Attached(seam.Open()))

	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			v := new(int)
			*v = i
			if d.Attach(seam.Open(), nil, v) {
				wins.Add(1)
			}
		})
	}
	within(t, time.Minute, wg.Wait)
	assert.EqualValues(t, 1, wins.Load())
	cur := d.Attached(seam.Open()).(*int)

	other := new(int)
	assert.False(t, d.Attach(seam.Open(), other, new(int)), "a stale old value does not replace")
	assert.True(t, d.Attach(seam.Open(), cur, other))
	assert.Same(t, other, d.Attached(seam.Open()))

	// The attachment stays with the object across publishes that keep it.
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "h:1"), dest("b", "h:2")}})
	assert.Same(t, other, r.Cluster("c").Destination("a").Attached(seam.Open()))
	assert.Nil(t, r.Cluster("c").Destination("b").Attached(seam.Open()))
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

// TestPlumbingNeedsTheKey: without the library's key (the zero Key is the
// only other one code outside the module can make) the plumbing methods
// do nothing.
func TestPlumbingNeedsTheKey(t *testing.T) {
	var r Registry
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "h:1")}})
	c := r.Cluster("c")
	d := c.Destination("a")
	var none seam.Key

	assert.False(t, d.Attach(none, nil, new(int)))
	assert.Nil(t, d.Attached(seam.Open()), "nothing was attached")
	v := new(int)
	require.True(t, d.Attach(seam.Open(), nil, v))
	assert.Nil(t, d.Attached(none))
	assert.Same(t, v, d.Attached(seam.Open()))

	d.SetAvailableSince(none, 5)
	assert.Zero(t, d.AvailableSince())
	d.SetAvailableSince(seam.Open(), 5)
	assert.EqualValues(t, 5, d.AvailableSince())

	var calls int
	c.OnRefresh(none, func(*Members) { calls++ })
	c.refresh()
	assert.Zero(t, calls)
	c.OnRefresh(seam.Open(), func(*Members) { calls++ })
	c.refresh()
	assert.Equal(t, 1, calls)
	c.OnRefresh(none, nil)
	c.refresh()
	assert.Equal(t, 2, calls, "nor does the zero key remove the hook")
}
