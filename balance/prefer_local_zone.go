package balance

import "github.com/paduraksa/paduraksa/upstream"

// PreferLocalZone prefers destinations in the gateway's own zone (their
// "zone" metadata equals Zone) and picks among them by power of two choices.
// Destinations in other zones take requests only when no local one is
// available, or, with Spillover set, when both local candidates have more
// than Spillover requests in flight and the best remote candidate has fewer
// than the best local one.
//
// A PreferLocalZone keeps the zone split of the last available set it saw,
// built on the first Pick after the set changes (the only Pick that
// allocates). Use one per cluster; it is safe for concurrent use. Set the
// fields before first use; the zero PreferLocalZone prefers destinations
// without a zone, with no spillover.
type PreferLocalZone struct {
	// Zone is the gateway's zone. Empty matches destinations without a
	// zone.
	Zone string
	// Spillover is the in-flight count above which both local candidates
	// count as busy and other zones may take the request; 0 turns spillover
	// off.
	Spillover int64

	split view[zoneSplit]
}

type zoneSplit struct {
	local, remote []int32 // indices into the available slice
}

// Pick implements [Policy].
func (z *PreferLocalZone) Pick(_ Input, available []*upstream.Destination) *upstream.Destination {
	if len(available) == 0 {
		return nil
	}
	s := z.split.load(available)
	if s == nil {
		if s = z.split.build(available, z.splitOf); s == nil {
			return z.pickScan(available)
		}
	}
	if len(s.local) == 0 {
		return PowerOfTwoChoices{}.Pick(Input{}, available)
	}
	best, busy := pickIndexed(available, s.local, z.Spillover)
	if busy && len(s.remote) > 0 {
		if r, _ := pickIndexed(available, s.remote, 0); r.InFlight() < best.InFlight() {
			return r
		}
	}
	return best
}

func (z *PreferLocalZone) splitOf(available []*upstream.Destination) *zoneSplit {
	s := &zoneSplit{}
	for i, d := range available {
		if d.Zone() == z.Zone {
			s.local = append(s.local, int32(i))
		} else {
			s.remote = append(s.remote, int32(i))
		}
	}
	return s
}

// pickIndexed applies power of two choices to available[idx...] and reports
// whether every candidate has more than threshold requests in flight
// (never, when threshold is 0).
func pickIndexed(available []*upstream.Destination, idx []int32, threshold int64) (*upstream.Destination, bool) {
	if len(idx) == 1 {
		d := available[idx[0]]
		return d, threshold > 0 && d.InFlight() > threshold
	}
	i, j := twoDistinct(len(idx))
	a, b := available[idx[i]], available[idx[j]]
	fa, fb := a.InFlight(), b.InFlight()
	busy := threshold > 0 && fa > threshold && fb > threshold
	if fb < fa {
		return b, busy
	}
	return a, busy
}

// pickScan is the table-free pick used while another goroutine builds the
// split: power of two choices among local destinations found by scanning,
// without spillover.
func (z *PreferLocalZone) pickScan(available []*upstream.Destination) *upstream.Destination {
	k := 0
	for _, d := range available {
		if d.Zone() == z.Zone {
			k++
		}
	}
	switch k {
	case 0:
		return PowerOfTwoChoices{}.Pick(Input{}, available)
	case 1:
		return z.nthLocal(available, 0)
	}
	i, j := twoDistinct(k)
	return lesser(z.nthLocal(available, i), z.nthLocal(available, j))
}

func (z *PreferLocalZone) nthLocal(available []*upstream.Destination, n int) *upstream.Destination {
	for _, d := range available {
		if d.Zone() == z.Zone {
			if n == 0 {
				return d
			}
			n--
		}
	}
	return nil
}
