package ipaddr

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKeyOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string // "" is the invalid address
		same bool
	}{
		{"IPv4-mapped is IPv4", "192.0.2.7", "::ffff:192.0.2.7", true},
		{"IPv4 neighbours differ", "192.0.2.7", "192.0.2.8", false},
		{"one IPv6 /64", "2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"the next /64", "2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"zones ignored", "fe80::1%eth0", "fe80::2%eth1", true},
		{"0.0.0.0 is not ::", "0.0.0.0", "::", false},
		{"IPv4 is not the IPv6 /64 around the mapped block", "192.0.2.7", "::1", false},
		{"unknown clients share one key", "", "", true},
		{"an unknown client is not ::", "", "::", false},
		{"nor 0.0.0.1", "", "0.0.0.1", false},
		{"nor ::1", "", "::1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := addrOrInvalid(tc.a), addrOrInvalid(tc.b)
			assert.Equal(t, tc.same, KeyOf(a) == KeyOf(b))
			seed := NewSeed()
			if tc.same {
				assert.Equal(t, seed.Hash(KeyOf(a), 7), seed.Hash(KeyOf(b), 7))
			}
		})
	}
	assert.Equal(t, Unknown, KeyOf(netip.Addr{}))
	assert.Equal(t, NumOf(ap("192.0.2.7")).Key(), KeyOf(ap("192.0.2.7")))
}

func addrOrInvalid(s string) netip.Addr {
	if s == "" {
		return netip.Addr{}
	}
	return netip.MustParseAddr(s)
}

func TestSeedHash(t *testing.T) {
	s1, s2 := NewSeed(), NewSeed()
	k := KeyOf(ap("192.0.2.1"))
	assert.NotEqual(t, s1, s2, "each table draws its own seed")
	assert.NotEqual(t, s1.Hash(k, 0), s2.Hash(k, 0))
	assert.NotEqual(t, s1.Hash(k, 0), s1.Hash(k, 1), "scopes tell buckets apart")
	assert.Equal(t, s1.Hash(k, 5), s1.Hash(k, 5))
	assert.Zero(t, testing.AllocsPerRun(1000, func() { _ = s1.Hash(KeyOf(ap("2001:db8::1")), 3) }))
}

// FuzzKeyOf checks that two addresses share a key exactly as the package
// doc says: both unknown (invalid), both the same IPv4 address once
// unmapped, or both IPv6 in the same /64.
func FuzzKeyOf(f *testing.F) {
	for _, seed := range [][2]string{
		{"192.0.2.7", "::ffff:192.0.2.7"},
		{"2001:db8:1:2::1", "2001:db8:1:2:8000::"},
		{"2001:db8:1:2::1", "2001:db8:1:3::1"},
		{"fe80::1%eth0", "fe80::2"},
		{"0.0.0.0", "::"},
		{"", "::"},
		{"::ffff:0:1", "0.0.0.1"},
		{"", "junk"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, x, y string) {
		a, _ := netip.ParseAddr(x)
		b, _ := netip.ParseAddr(y)
		if got, want := KeyOf(a) == KeyOf(b), refSameKey(a, b); got != want {
			t.Fatalf("KeyOf(%v) == KeyOf(%v) is %v, want %v", a, b, got, want)
		}
	})
}

// refSameKey is the documented key, written from the doc.
func refSameKey(a, b netip.Addr) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid()
	}
	a, b = a.Unmap(), b.Unmap()
	if a.Is4() || b.Is4() {
		return a == b
	}
	pa, _ := a.WithZone("").Prefix(64)
	pb, _ := b.WithZone("").Prefix(64)
	return pa == pb
}
