package ipaddr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Num is an address as a 128-bit number in the IPv6 space: an IPv6
// address as it is, an IPv4 address at its IPv4-mapped place
// (::ffff:a.b.c.d), so an IPv4 address and its IPv4-mapped form are one
// Num. The zero Num is ::.
type Num struct{ Hi, Lo uint64 }

// NumOf returns the Num of a; the zone is ignored. The invalid address
// gives the zero Num, which is also ::'s: check a.IsValid first where it
// matters.
func NumOf(a netip.Addr) Num {
	if a.Is4() {
		b := a.As4()
		return Num{0, mappedLo | uint64(binary.BigEndian.Uint32(b[:]))}
	}
	if !a.IsValid() {
		return Num{}
	}
	return num16(a)
}

// num16 is NumOf through a's 16-byte form, in which an IPv4 address is
// already IPv4-mapped (and the invalid address is ::). It is small enough
// to inline, which PrefixSet.Contains relies on; NumOf's branches make it
// faster where it is called once for several lookups (connlimit).
func num16(a netip.Addr) Num {
	b := a.As16()
	return Num{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// Is4 reports whether n is an IPv4 address: one in ::ffff:0:0/96.
func (n Num) Is4() bool { return n.Hi == 0 && n.Lo>>32 == 0xffff }

func (n Num) less(m Num) bool { return n.Hi < m.Hi || n.Hi == m.Hi && n.Lo < m.Lo }

// next returns n+1, and false when n is the last address.
func (n Num) next() (Num, bool) {
	if n.Lo != ^uint64(0) {
		return Num{n.Hi, n.Lo + 1}, true
	}
	if n.Hi == ^uint64(0) {
		return Num{}, false
	}
	return Num{n.Hi + 1, 0}, true
}

// The IPv4-mapped block ::ffff:0:0/96, where the IPv4 addresses are.
const mappedLo = 0xffff << 32

var (
	mappedFirst = Num{0, mappedLo}
	mappedLast  = Num{0, mappedLo | 0xffff_ffff}
)

// Errors of [UnmapPrefix] and [CheckPrefix].
var (
	ErrInvalidPrefix        = errors.New("invalid prefix")
	ErrMappedPrefixTooShort = errors.New("an IPv4-mapped prefix must be /96 or longer (::ffff:0:0/96 is all of IPv4)")
)

// UnmapPrefix returns p under the IPv4-mapped rule: an IPv4-mapped prefix
// of /96 or longer as the IPv4 prefix of its length minus 96, any other
// prefix as it is. Bits set after the length stay set (p.Masked drops
// them). It refuses an invalid prefix with [ErrInvalidPrefix] and an
// IPv4-mapped prefix shorter than /96 with [ErrMappedPrefixTooShort].
func UnmapPrefix(p netip.Prefix) (netip.Prefix, error) {
	if !p.IsValid() {
		return netip.Prefix{}, ErrInvalidPrefix
	}
	a := p.Addr()
	if !a.Is4In6() {
		return p, nil
	}
	if p.Bits() < 96 {
		return netip.Prefix{}, ErrMappedPrefixTooShort
	}
	return netip.PrefixFrom(a.Unmap(), p.Bits()-96), nil
}

// CheckPrefix reports whether a prefix from config can go into a set: nil,
// or the error of [UnmapPrefix].
func CheckPrefix(p netip.Prefix) error {
	_, err := UnmapPrefix(p)
	return err
}

// prefixRange returns the first and last Num of p, which is valid.
func prefixRange(p netip.Prefix) (first, last Num) {
	p = p.Masked()
	bits := p.Bits()
	if p.Addr().Is4() {
		bits += 96
	}
	first = NumOf(p.Addr())
	last = first
	switch {
	case bits == 0:
		last = Num{^uint64(0), ^uint64(0)}
	case bits <= 64:
		last.Hi |= ^uint64(0) >> bits
		last.Lo = ^uint64(0)
	case bits < 128:
		last.Lo |= ^uint64(0) >> (bits - 64)
	}
	return first, last
}

// Errors of [ParsePrefix], beside those of [UnmapPrefix].
var (
	ErrNotPrefix = errors.New("not an IP address or CIDR prefix")
	ErrHostBits  = errors.New("bits set after the prefix length")
)

// ParsePrefix parses an IP address or a CIDR prefix as config spells the
// members of a prefix set (trusted proxies, access and deny lists, probe
// sources), under the IPv4-mapped rule: an address alone is the prefix of
// its full length; an IPv4-mapped address or prefix is its IPv4 one, and
// one shorter than /96 is refused ([ErrMappedPrefixTooShort]); a zone is
// refused, and so is a prefix with bits set after its length
// ("10.0.0.1/8", most often a typo: the error, [ErrHostBits], says the
// prefix it masks to). Anything else that is no address or prefix is
// [ErrNotPrefix].
func ParsePrefix(s string) (netip.Prefix, error) {
	if strings.IndexByte(s, '/') < 0 {
		ip, err := netip.ParseAddr(s)
		if err != nil || ip.Zone() != "" {
			return netip.Prefix{}, ErrNotPrefix
		}
		ip = ip.Unmap()
		return netip.PrefixFrom(ip, ip.BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, ErrNotPrefix
	}
	if p, err = UnmapPrefix(p); err != nil {
		return netip.Prefix{}, err
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, fmt.Errorf("%w; did you mean %s?", ErrHostBits, m)
	}
	return p, nil
}
