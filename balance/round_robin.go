package balance

import (
	"sync/atomic"

	"github.com/paduraksa/paduraksa/upstream"
)

// RoundRobin picks the available destinations in turn. It ignores load: a
// slow destination gets its full share.
//
// The zero value is ready to use. A RoundRobin holds a counter, so each
// cluster needs its own; it is safe for concurrent use and must not be
// copied after first use.
type RoundRobin struct {
	next atomic.Uint64
}

// Pick implements [Policy].
func (p *RoundRobin) Pick(_ Input, available []*upstream.Destination) *upstream.Destination {
	n := uint64(len(available))
	if n == 0 {
		return nil
	}
	return available[(p.next.Add(1)-1)%n]
}
