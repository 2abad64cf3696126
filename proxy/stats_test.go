package proxy

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/paduraksa/paduraksa/upstream"
)

// TestStatsCountsEveryOutcome: Stats has a counter for every outcome
// upstream names, so a new outcome cannot be dropped silently.
func TestStatsCountsEveryOutcome(t *testing.T) {
	var s Stats
	names := upstream.OutcomeNames()
	for i := range names {
		for range i + 1 {
			s.add(upstream.Outcome(i))
		}
	}
	for i, n := range names {
		assert.Equal(t, uint64(i+1), s.Count(upstream.Outcome(i)), n)
	}
	s.add(upstream.Outcome(len(names)))
	assert.Zero(t, s.Count(upstream.Outcome(len(names))), "no counter for an outcome that is not one")
	var none *Stats
	none.add(upstream.Success) // a cluster without Stats counts nothing
}
