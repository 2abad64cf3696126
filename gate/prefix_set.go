package gate

import (
	"cmp"
	"net/netip"
	"slices"
)

// prefixSet is an immutable set of address prefixes, kept as sorted,
// merged ranges per family and searched by bisection. IPv4-mapped IPv6
// prefixes and addresses are treated as IPv4. Lookups allocate nothing.
type prefixSet struct {
	v4 []range4
	v6 []range6
}

type range4 struct{ lo, hi uint32 }

type u128 struct{ hi, lo uint64 }

type range6 struct{ lo, hi u128 }

func (a u128) cmp(b u128) int {
	if c := cmp.Compare(a.hi, b.hi); c != 0 {
		return c
	}
	return cmp.Compare(a.lo, b.lo)
}

func (a u128) next() u128 {
	if a.lo == ^uint64(0) {
		return u128{a.hi + 1, 0}
	}
	return u128{a.hi, a.lo + 1}
}

func toU128(a netip.Addr) u128 {
	b := a.As16()
	var x u128
	for i := 0; i < 8; i++ {
		x.hi = x.hi<<8 | uint64(b[i])
		x.lo = x.lo<<8 | uint64(b[i+8])
	}
	return x
}

func toU32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// newPrefixSet builds a set; invalid prefixes are skipped (callers
// validate).
func newPrefixSet(ps []netip.Prefix) prefixSet {
	var s prefixSet
	for _, p := range ps {
		if !p.IsValid() {
			continue
		}
		p = unmapPrefix(p)
		if p.Addr().Is4() {
			lo := toU32(p.Addr())
			hi := lo
			if bits := p.Bits(); bits < 32 {
				hi = lo | (1<<(32-bits) - 1)
			}
			s.v4 = append(s.v4, range4{lo, hi})
			continue
		}
		lo := toU128(p.Addr())
		hi := lo
		if bits := p.Bits(); bits < 64 {
			hi.hi |= 1<<(64-bits) - 1
			hi.lo = ^uint64(0)
		} else if bits < 128 {
			hi.lo |= 1<<(128-bits) - 1
		}
		s.v6 = append(s.v6, range6{lo, hi})
	}
	slices.SortFunc(s.v4, func(a, b range4) int { return cmp.Compare(a.lo, b.lo) })
	slices.SortFunc(s.v6, func(a, b range6) int { return a.lo.cmp(b.lo) })
	s.v4 = merge4(s.v4)
	s.v6 = merge6(s.v6)
	return s
}

func merge4(rs []range4) []range4 {
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && (out[n-1].hi == ^uint32(0) || r.lo <= out[n-1].hi+1) {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

func merge6(rs []range6) []range6 {
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && (out[n-1].hi == u128{^uint64(0), ^uint64(0)} || r.lo.cmp(out[n-1].hi.next()) <= 0) {
			if r.hi.cmp(out[n-1].hi) > 0 {
				out[n-1].hi = r.hi
			}
			continue
		}
		out = append(out, r)
	}
	return slices.Clip(out)
}

// empty reports whether the set has no prefix.
func (s *prefixSet) empty() bool { return len(s.v4) == 0 && len(s.v6) == 0 }

// contains reports whether a is in the set.
func (s *prefixSet) contains(a netip.Addr) bool {
	if a.Is4In6() {
		a = a.Unmap()
	}
	if a.Is4() {
		x := toU32(a)
		rs := s.v4
		lo, hi := 0, len(rs)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if rs[m].hi < x {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo < len(rs) && rs[lo].lo <= x
	}
	if !a.Is6() {
		return false
	}
	x := toU128(a)
	rs := s.v6
	lo, hi := 0, len(rs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rs[m].hi.cmp(x) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo < len(rs) && rs[lo].lo.cmp(x) <= 0
}
