package balance

import (
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/internal/seam"
	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
)

func TestSlowStartRamps(t *testing.T) {
	c := nDests(t, 2)
	av := c.Members().Available
	old, fresh := av[0], av[1]
	start := time.Unix(1000, 0)
	old.SetAvailableSince(seam.Open(), start.Add(-time.Hour).UnixNano())
	fresh.SetAvailableSince(seam.Open(), start.UnixNano())
	s := &SlowStart{Window: 10 * time.Second, Policy: new(RoundRobin)}

	share := func(at time.Duration) float64 {
		n := 0
		for range 4000 {
			if s.Pick(Input{Now: start.Add(at)}, av) == fresh {
				n++
			}
		}
		return float64(n) / 4000
	}
	s0, s1, s5, s10 := share(0), share(time.Second), share(5*time.Second), share(10*time.Second)
	t.Logf("share of the fresh destination at 0, 1, 5, 10 s: %.3f %.3f %.3f %.3f", s0, s1, s5, s10)
	assert.Less(t, s0, 0.02, "a destination that just became available gets almost nothing")
	assert.Less(t, s1, s5)
	assert.Less(t, s5, s10)
	assert.InDelta(t, 0.5, s10, 0.03, "after the window it has its full share")

	// The clock is used when the input has no time.
	s.Clock = func() time.Time { return start.Add(time.Hour) }
	n := 0
	for range 1000 {
		if s.Pick(Input{}, av) == fresh {
			n++
		}
	}
	assert.InDelta(t, 500, n, 30)

	// A lone destination takes everything whatever its age.
	one := []*upstream.Destination{fresh}
	assert.Same(t, fresh, s.Pick(Input{Now: start}, one))
}
