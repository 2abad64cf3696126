package upstream

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ids(ds []*Destination) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID())
	}
	return out
}

// TestDrain: a drained destination leaves the available set (and panic
// mode never brings it back) while it stays a member with its state; the
// document's drain changes without a new object; the operator's lasts
// across plans that keep the destination and goes with its address; the
// document's wins over an operator's undrain.
func TestDrain(t *testing.T) {
	var r Registry
	a, b := dest("a", "127.0.0.1:1"), dest("b", "127.0.0.1:2")
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{a, b}})
	c := r.Cluster("c")
	da := c.Destination("a")
	da.Begin()

	require.True(t, da.SetDrain(true))
	assert.False(t, da.SetDrain(true), "no change")
	assert.True(t, da.Draining())
	assert.Equal(t, []string{"b"}, ids(c.Members().Available))
	assert.Equal(t, []string{"a", "b"}, ids(c.Members().All))

	c.Destination("b").SetActiveHealth(Unhealthy)
	m := c.Members()
	assert.Equal(t, []string{"b"}, ids(m.Available), "panic mode is among the undrained")
	assert.True(t, m.Panic)
	c.Destination("b").SetActiveHealth(Healthy)

	// A plan that keeps a keeps the operator's drain and the state.
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{a, b, dest("x", "127.0.0.1:3")}})
	require.Same(t, da, c.Destination("a"))
	assert.True(t, da.Draining())
	assert.Equal(t, []string{"b", "x"}, ids(c.Members().Available))

	// The document's drain: same object, in-flight kept; it wins.
	a.Drain = true
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{a, b}})
	require.Same(t, da, c.Destination("a"))
	assert.EqualValues(t, 1, da.InFlight())
	require.True(t, da.SetDrain(false))
	doc, op := da.DrainedBy()
	assert.True(t, doc)
	assert.False(t, op)
	assert.True(t, da.Draining(), "the document's drain wins")
	assert.Equal(t, []string{"b"}, ids(c.Members().Available))
	a.Drain = false
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{a, b}})
	assert.False(t, da.Draining())
	assert.Equal(t, []string{"a", "b"}, ids(c.Members().Available))

	// A new address is a new destination: the operator's drain is gone.
	da.SetDrain(true)
	apply(&r, ClusterConfig{ID: "c", Destinations: []DestinationConfig{dest("a", "127.0.0.1:9"), b}})
	assert.False(t, c.Destination("a").Draining())

	// All drained: nothing is available, not even in panic mode.
	c.Destination("a").SetDrain(true)
	c.Destination("b").SetDrain(true)
	m = c.Members()
	assert.Empty(t, m.Available)
	assert.False(t, m.Panic)
}
