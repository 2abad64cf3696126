package balance

import (
	"math/rand/v2"

	"github.com/paduraksa/paduraksa/upstream"
)

// LeastRequests picks the available destination with the fewest requests in
// flight. It scans every destination, so it costs O(n) per request; ties are
// broken by starting the scan at a random position, so that an idle cluster
// is not served by its first destination alone.
//
// The zero value is ready to use and safe for concurrent use.
type LeastRequests struct{}

// Pick implements [Policy].
func (LeastRequests) Pick(_ Input, available []*upstream.Destination) *upstream.Destination {
	n := len(available)
	switch n {
	case 0:
		return nil
	case 1:
		return available[0]
	}
	start := int(rand.Uint32N(uint32(n)))
	best := available[start]
	min := best.InFlight()
	for k := 1; k < n && min > 0; k++ {
		i := start + k
		if i >= n {
			i -= n
		}
		if f := available[i].InFlight(); f < min {
			best, min = available[i], f
		}
	}
	return best
}
