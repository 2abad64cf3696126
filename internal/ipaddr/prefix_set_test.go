package ipaddr

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ap(s string) netip.Addr { return netip.MustParseAddr(s) }

func set(prefixes ...string) PrefixSet {
	var ps []netip.Prefix
	for _, p := range prefixes {
		ps = append(ps, netip.MustParsePrefix(p))
	}
	return NewPrefixSet(ps)
}

func TestPrefixSet(t *testing.T) {
	s := set("10.0.0.0/8",
		"10.1.0.0/16", // inside the first
		"11.0.0.0/8",  // touches the first
		"192.0.2.1/32",
		"2001:db8::/32",
		"::ffff:198.51.100.0/120")
	assert.Equal(t, 4, s.Ranges(), "overlapping and touching ranges merge")
	for a, want := range map[string]bool{
		"10.0.0.0": true, "11.255.255.255": true, "12.0.0.0": false, "9.255.255.255": false,
		"192.0.2.1": true, "192.0.2.2": false, "::ffff:10.2.3.4": true,
		"2001:db8:ffff::1": true, "2001:db9::": false, "198.51.100.9": true, "::": false,
		"2001:db8::1%eth0": true, // zones are ignored
	} {
		assert.Equal(t, want, s.Contains(ap(a)), a)
	}
	assert.False(t, s.Contains(netip.Addr{}))

	var zero PrefixSet
	assert.True(t, zero.Empty())
	assert.False(t, zero.Contains(ap("192.0.2.1")))
	assert.False(t, s.Empty())

	all := set("::/0", "0.0.0.0/0")
	assert.Equal(t, 1, all.Ranges(), "IPv6 around the mapped block and IPv4 in it are one range")
	for _, a := range []string{"::", "255.255.255.255", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"} {
		assert.True(t, all.Contains(ap(a)), a)
	}
	assert.False(t, all.Contains(netip.Addr{}))
	assert.False(t, set("0.0.0.0/0").Contains(ap("2001:db8::1")))
}

// TestIPv4MappedRule is the package doc's rule, prefix by prefix: an
// IPv4-mapped address is its IPv4 address, an IPv4-mapped prefix of /96
// or longer is an IPv4 prefix, and an IPv6 prefix holds no IPv4 address,
// however wide it is.
func TestIPv4MappedRule(t *testing.T) {
	for _, tc := range []struct {
		prefix  string
		in, out []string
	}{
		{"::/0", []string{"::", "::1", "2001:db8::1", "::fffe:ffff:ffff", "::1:0:0:0", "ffff::1"}, []string{"1.2.3.4", "::ffff:1.2.3.4", "0.0.0.0", "255.255.255.255"}},
		{"::/64", []string{"::2", "::ffff:0:0:1"}, []string{"192.0.2.1", "::ffff:192.0.2.1"}},
		{"::/80", []string{"::ffff"}, []string{"192.0.2.1"}},
		{"::fffe:0:0/95", []string{"::fffe:1:2"}, []string{"192.0.2.1", "::ffff:192.0.2.1"}},
		{"::ffff:0:0/96", []string{"0.0.0.0", "255.255.255.255", "::ffff:10.0.0.1"}, []string{"::fffe:ffff:ffff", "::1:0:0:0"}},
		{"::ffff:192.0.2.0/120", []string{"192.0.2.9", "::ffff:192.0.2.9"}, []string{"192.0.3.9", "::c000:209"}},
		{"192.0.2.0/24", []string{"192.0.2.9", "::ffff:192.0.2.9"}, []string{"::c000:209", "192.0.3.0"}},
		// Refused by CheckPrefix; a set given one anyway reads it as the
		// IPv6 prefix it masks to (::/64), never as all of IPv4.
		{"::ffff:0:0/64", []string{"::1"}, []string{"0.0.0.0", "192.0.2.1", "::ffff:192.0.2.1"}},
	} {
		s := set(tc.prefix)
		for _, a := range tc.in {
			assert.True(t, s.Contains(ap(a)), "%s holds %s", tc.prefix, a)
		}
		for _, a := range tc.out {
			assert.False(t, s.Contains(ap(a)), "%s does not hold %s", tc.prefix, a)
		}
	}
}

func TestUnmapPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"::ffff:192.0.2.0/120": "192.0.2.0/24",
		"::ffff:192.0.2.7/128": "192.0.2.7/32",
		"::ffff:0.0.0.0/96":    "0.0.0.0/0",
		"::ffff:10.1.2.3/104":  "10.1.2.3/8", // bits after the length stay
		"10.0.0.0/8":           "10.0.0.0/8",
		"::/0":                 "::/0",
		"::fffe:0:0/95":        "::fffe:0:0/95",
		"2001:db8::/32":        "2001:db8::/32",
	} {
		got, err := UnmapPrefix(netip.MustParsePrefix(in))
		require.NoError(t, err, in)
		assert.Equal(t, want, got.String(), in)
		assert.NoError(t, CheckPrefix(netip.MustParsePrefix(in)))
	}
	for _, in := range []string{"::ffff:0:0/95", "::ffff:0:0/64", "::ffff:10.0.0.0/88", "::ffff:0:0/0"} {
		_, err := UnmapPrefix(netip.MustParsePrefix(in))
		assert.ErrorIs(t, err, ErrMappedPrefixTooShort, in)
		assert.ErrorIs(t, CheckPrefix(netip.MustParsePrefix(in)), ErrMappedPrefixTooShort, in)
	}
	_, err := UnmapPrefix(netip.Prefix{})
	assert.ErrorIs(t, err, ErrInvalidPrefix)
	assert.ErrorIs(t, CheckPrefix(netip.PrefixFrom(ap("10.0.0.0"), 33)), ErrInvalidPrefix)
}

func TestPrefixSetAllocatesNothing(t *testing.T) {
	s := set("10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32")
	for _, a := range []netip.Addr{ap("192.0.2.1"), ap("::ffff:192.0.2.1"), ap("2001:db8::1"), ap("198.51.100.1"), {}} {
		assert.Zero(t, testing.AllocsPerRun(1000, func() { s.Contains(a) }), a)
	}
}

// FuzzPrefixSet checks the set against a plain loop over
// netip.Prefix.Contains under the rule as the package doc states it: the
// address unmapped and without its zone, an IPv4-mapped prefix of /96 or
// longer taken as the IPv4 prefix of its length minus 96, every other
// prefix as it is (netip never matches an IPv4 address with an IPv6
// prefix); ContainsNum over NumOf, the connection limiter's way in, must
// agree. Besides the fuzzed address it asks for every prefix's first and
// last address and their neighbours, where merging and bisection go wrong.
func FuzzPrefixSet(f *testing.F) {
	for _, seed := range [][2]string{
		{"10.0.0.0/8 192.0.2.0/24", "10.1.2.3"},
		{"2001:db8::/32 ::ffff:198.51.100.0/120", "198.51.100.7"},
		{"10.0.0.0/9 10.128.0.0/9 11.0.0.0/8", "::ffff:10.200.0.1"},
		{"0.0.0.0/0 ::/0", "255.255.255.255"},
		{"192.0.2.7/32 192.0.2.9/32 2001:db8::/127", "192.0.2.8"},
		{"::ffff:0.0.0.0/80 ::/127 ffff::/16", "::2"},
		{"2001:db8::/32", "2001:db8::1"},
		{"::/0", "192.0.2.1"}, // an IPv6 prefix holds no IPv4 address
		{"::ffff:0:0/64", "1.2.3.4"},
		{"::/80 ::fffe:0:0/95", "::ffff:1.2.3.4"},
		{"::ffff:0:0/96 ::1/128", "fe80::1%eth0"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, prefixes, addr string) {
		var ps []netip.Prefix
		for _, s := range strings.Fields(prefixes) {
			if p, err := netip.ParsePrefix(s); err == nil {
				ps = append(ps, p)
			}
		}
		set := NewPrefixSet(ps)
		check := func(a netip.Addr) {
			want := false
			for _, p := range ps {
				if p.Addr().Is4In6() && p.Bits() >= 96 {
					p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
				}
				if p.Contains(a.WithZone("").Unmap()) {
					want = true
				}
			}
			if got := set.Contains(a); got != want {
				t.Fatalf("Contains(%v) = %v, want %v for %v", a, got, want, ps)
			}
			if a.IsValid() && set.ContainsNum(NumOf(a)) != want {
				t.Fatalf("ContainsNum(NumOf(%v)) = %v, want %v for %v", a, !want, want, ps)
			}
		}
		a, _ := netip.ParseAddr(addr) // the invalid address when it does not parse
		check(a)
		for _, p := range ps {
			first, last := refRange(p)
			for _, x := range []netip.Addr{first, first.Prev(), last, last.Next()} {
				check(x)
				if x.Is4() {
					check(netip.AddrFrom16(x.As16()))
				}
			}
		}
	})
}

// refRange returns the first and last address of p, byte by byte.
func refRange(p netip.Prefix) (netip.Addr, netip.Addr) {
	b := p.Addr().AsSlice()
	for i := range b {
		keep := min(max(p.Bits()-8*i, 0), 8) // bits of this byte in the prefix
		b[i] &= byte(0xff << (8 - keep))
	}
	first, _ := netip.AddrFromSlice(b)
	for i := range b {
		keep := min(max(p.Bits()-8*i, 0), 8)
		b[i] |= ^byte(0xff << (8 - keep))
	}
	last, _ := netip.AddrFromSlice(b)
	return first, last
}

func BenchmarkPrefixSetContains(b *testing.B) {
	s := set("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "2001:db8::/32", "fd00::/8")
	for _, a := range []string{"192.0.2.1", "2001:db8::1"} {
		addr := ap(a)
		b.Run(a, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.Contains(addr)
			}
		})
	}
}
