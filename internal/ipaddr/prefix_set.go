package ipaddr

import (
	"net/netip"
	"slices"
)

// PrefixSet is an immutable set of prefixes under the IPv4-mapped rule:
// sorted, disjoint ranges of [Num] searched by bisection. The zero
// PrefixSet is empty. Lookups allocate nothing and are safe for concurrent
// use.
type PrefixSet struct {
	r []numRange
}

type numRange struct{ first, last Num }

// NewPrefixSet builds a set of ps. Invalid prefixes are skipped: callers
// refuse them, and IPv4-mapped prefixes shorter than /96, with
// [CheckPrefix] first.
func NewPrefixSet(ps []netip.Prefix) PrefixSet {
	rs := make([]numRange, 0, len(ps)+1)
	for _, p := range ps {
		if !p.IsValid() {
			continue
		}
		f, l := prefixRange(p)
		if !p.Addr().Is4() && !f.Is4() && !mappedFirst.less(f) && !l.less(mappedLast) {
			// An IPv6 prefix around the mapped block holds no IPv4
			// address: cut the block out. (Prefixes nest or are
			// disjoint, so no other overlap with the block exists.)
			if f.less(mappedFirst) {
				rs = append(rs, numRange{f, Num{0, mappedFirst.Lo - 1}})
			}
			if mappedLast.less(l) {
				rs = append(rs, numRange{Num{0, mappedLast.Lo + 1}, l})
			}
			continue
		}
		rs = append(rs, numRange{f, l})
	}
	slices.SortFunc(rs, func(a, b numRange) int {
		switch {
		case a.first.less(b.first):
			return -1
		case b.first.less(a.first):
			return 1
		}
		return 0
	})
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 {
			// Merge a range that overlaps or touches the previous one.
			if after, ok := out[n-1].last.next(); !ok || !after.less(r.first) {
				if out[n-1].last.less(r.last) {
					out[n-1].last = r.last
				}
				continue
			}
		}
		out = append(out, r)
	}
	return PrefixSet{r: slices.Clip(out)}
}

// Empty reports whether the set holds no address.
func (s PrefixSet) Empty() bool { return len(s.r) == 0 }

// Ranges returns the number of disjoint ranges the set keeps, for tests of
// the merging.
func (s PrefixSet) Ranges() int { return len(s.r) }

// Contains reports whether a is in one of the set's prefixes. The invalid
// address is in none.
func (s PrefixSet) Contains(a netip.Addr) bool {
	if len(s.r) == 0 || !a.IsValid() {
		return false
	}
	return s.ContainsNum(num16(a))
}

// ContainsNum reports whether n, the [Num] of a valid address, is in one of
// the set's prefixes.
func (s PrefixSet) ContainsNum(n Num) bool {
	// Bisect the sorted, disjoint ranges.
	r := s.r
	for len(r) > 0 {
		m := len(r) >> 1
		switch {
		case r[m].last.less(n):
			r = r[m+1:]
		case n.less(r[m].first):
			r = r[:m]
		default:
			return true
		}
	}
	return false
}
