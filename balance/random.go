package balance

import (
	"math/rand/v2"

	"github.com/paduraksa/paduraksa/upstream"
)

// Random picks an available destination uniformly at random from the
// process's per-thread generator (seeded per process). It ignores load.
//
// The zero value is ready to use and safe for concurrent use.
type Random struct{}

// Pick implements [Policy].
func (Random) Pick(_ Input, available []*upstream.Destination) *upstream.Destination {
	switch len(available) {
	case 0:
		return nil
	case 1:
		return available[0]
	}
	return available[rand.Uint32N(uint32(len(available)))]
}
