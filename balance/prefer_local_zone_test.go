package balance

import (
	"testing"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
)

func zoneCluster(t *testing.T) *upstream.Cluster {
	t.Helper()
	return cluster(t, dest("a1", "h:1", "a"), dest("a2", "h:2", "a"), dest("b1", "h:3", "b"), dest("b2", "h:4", "b"))
}

func zoneOf(picks map[*upstream.Destination]int) map[string]int {
	z := map[string]int{}
	for d, n := range picks {
		z[d.Zone()] += n
	}
	return z
}

func TestPreferLocalZone(t *testing.T) {
	t.Run("stays in zone while local destinations are available", func(t *testing.T) {
		c := zoneCluster(t)
		p := &PreferLocalZone{Zone: "a", Spillover: 10}
		picks := map[*upstream.Destination]int{}
		for range 1000 {
			d := p.Pick(Input{}, c.Members().Available)
			picks[d]++
			d.Begin() // load builds up, but stays under the threshold
			if d.InFlight() > 5 {
				d.End()
			}
		}
		assert.Equal(t, map[string]int{"a": 1000}, zoneOf(picks))
		assert.Greater(t, count(picks, "a1"), 100)
		assert.Greater(t, count(picks, "a2"), 100)
	})
	t.Run("spills over when both local candidates are busy", func(t *testing.T) {
		c := zoneCluster(t)
		p := &PreferLocalZone{Zone: "a", Spillover: 10}
		av := c.Members().Available
		for range 11 {
			av[0].Begin()
			av[1].Begin()
		}
		picks := map[*upstream.Destination]int{}
		for range 100 {
			picks[p.Pick(Input{}, av)]++
		}
		assert.Equal(t, map[string]int{"b": 100}, zoneOf(picks), "idle remote destinations take the overflow")

		// Once the remote ones are as busy, local wins again.
		for range 12 {
			av[2].Begin()
			av[3].Begin()
		}
		picks = map[*upstream.Destination]int{}
		for range 100 {
			picks[p.Pick(Input{}, av)]++
		}
		assert.Equal(t, map[string]int{"a": 100}, zoneOf(picks))

		// Without spillover, busy local destinations keep everything.
		c = zoneCluster(t)
		av = c.Members().Available
		for range 50 {
			av[0].Begin()
			av[1].Begin()
		}
		picks = map[*upstream.Destination]int{}
		for range 100 {
			picks[(&PreferLocalZone{Zone: "a"}).Pick(Input{}, av)]++
		}
		assert.Equal(t, map[string]int{"a": 100}, zoneOf(picks))
	})
	t.Run("moves out when the zone is down", func(t *testing.T) {
		c := zoneCluster(t)
		p := &PreferLocalZone{Zone: "a"}
		c.Destination("a1").SetActiveHealth(upstream.Unhealthy)
		picks := map[*upstream.Destination]int{}
		for range 100 {
			picks[p.Pick(Input{}, c.Members().Available)]++
		}
		assert.Equal(t, 100, count(picks, "a2"), "one local destination left takes all")

		c.Destination("a2").SetPassiveHealth(upstream.Unhealthy)
		picks = map[*upstream.Destination]int{}
		for range 1000 {
			picks[p.Pick(Input{}, c.Members().Available)]++
		}
		assert.Equal(t, map[string]int{"b": 1000}, zoneOf(picks))
		assert.Greater(t, count(picks, "b1"), 300)

		c.Destination("a1").SetActiveHealth(upstream.Healthy)
		assert.Equal(t, "a1", p.Pick(Input{}, c.Members().Available).ID(), "and back when it recovers")
	})
	t.Run("table-free fallback agrees", func(t *testing.T) {
		c := zoneCluster(t)
		p := &PreferLocalZone{Zone: "b"}
		for range 100 {
			assert.Equal(t, "b", p.pickScan(c.Members().Available).Zone())
		}
		assert.Equal(t, "a", (&PreferLocalZone{Zone: "x"}).pickScan(c.Members().Available[:2]).Zone())
	})
}
