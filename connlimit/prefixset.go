package connlimit

import (
	"encoding/binary"
	"net/netip"
	"slices"
)

// u128 is an IPv6 address (or an IPv4 address in its IPv4-mapped form) as
// a 128-bit number.
type u128 struct{ hi, lo uint64 }

func (a u128) less(b u128) bool { return a.hi < b.hi || a.hi == b.hi && a.lo < b.lo }

func (a u128) next() (u128, bool) {
	lo := a.lo + 1
	hi := a.hi
	if lo == 0 {
		hi++
		if hi == 0 {
			return u128{}, false
		}
	}
	return u128{hi, lo}, true
}

// toU128 maps addr into the IPv6 space; an IPv4 address and its
// IPv4-mapped form give the same number. The zone is ignored.
func toU128(addr netip.Addr) u128 {
	if addr.Is4() {
		b := addr.As4()
		return u128{0, 0xffff<<32 | uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := addr.As16()
	return u128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// prefixRange returns the first and last address of p in the IPv6 space.
func prefixRange(p netip.Prefix) (first, last u128) {
	p = p.Masked()
	bits := p.Bits()
	if p.Addr().Is4() {
		bits += 96
	}
	first = toU128(p.Addr())
	last = first
	switch {
	case bits == 0:
		last = u128{^uint64(0), ^uint64(0)}
	case bits <= 64:
		last.hi |= ^uint64(0) >> bits
		last.lo = ^uint64(0)
	case bits < 128:
		last.lo |= ^uint64(0) >> (bits - 64)
	}
	return first, last
}

// The IPv4-mapped block ::ffff:0:0/96, where toU128 puts the IPv4
// addresses.
var (
	mappedFirst = u128{0, 0xffff << 32}
	mappedLast  = u128{0, 0xffff<<32 | 0xffff_ffff}
)

// prefixSet is an immutable set of prefixes: sorted, disjoint address
// ranges searched by bisection. It follows the IPv4-mapped rule: an
// IPv4-mapped address is its IPv4 address, an IPv4-mapped prefix of /96 or
// longer is the IPv4 prefix it maps, and an IPv6 prefix holds no IPv4
// address (::/0 is all of IPv6, not all addresses). Lookups allocate
// nothing and are safe for concurrent use.
type prefixSet struct {
	first, last []u128
}

// newPrefixSet builds a set from valid prefixes; invalid ones are skipped
// (Config.Validate refuses them first).
func newPrefixSet(ps []netip.Prefix) prefixSet {
	type rng struct{ first, last u128 }
	rs := make([]rng, 0, len(ps))
	for _, p := range ps {
		if !p.IsValid() {
			continue
		}
		f, l := prefixRange(p)
		if v6 := !p.Addr().Is4() && !p.Masked().Addr().Is4In6(); v6 && !mappedFirst.less(f) && !l.less(mappedLast) {
			// An IPv6 prefix around the mapped block: cut the block out.
			// (Prefixes nest or are disjoint, so no other overlap exists.)
			if f.less(mappedFirst) {
				rs = append(rs, rng{f, u128{0, mappedFirst.lo - 1}})
			}
			if mappedLast.less(l) {
				rs = append(rs, rng{u128{0, mappedLast.lo + 1}, l})
			}
			continue
		}
		rs = append(rs, rng{f, l})
	}
	slices.SortFunc(rs, func(a, b rng) int {
		switch {
		case a.first.less(b.first):
			return -1
		case b.first.less(a.first):
			return 1
		}
		return 0
	})
	var s prefixSet
	for _, r := range rs {
		if n := len(s.last); n > 0 {
			// Merge a range that overlaps or touches the previous one.
			after, ok := s.last[n-1].next()
			if !ok || !after.less(r.first) {
				if s.last[n-1].less(r.last) {
					s.last[n-1] = r.last
				}
				continue
			}
		}
		s.first = append(s.first, r.first)
		s.last = append(s.last, r.last)
	}
	return s
}

// contains reports whether addr is in one of the set's prefixes.
func (s *prefixSet) contains(addr netip.Addr) bool {
	if len(s.first) == 0 || !addr.IsValid() {
		return false
	}
	return s.containsU128(toU128(addr))
}

// containsU128 reports whether a, an address as toU128 returns it, is in
// one of the set's prefixes.
func (s *prefixSet) containsU128(a u128) bool {
	// Find the last range whose first address is <= a.
	lo, hi := 0, len(s.first)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if a.less(s.first[m]) {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo > 0 && !s.last[lo-1].less(a)
}
