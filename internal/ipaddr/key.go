package ipaddr

import (
	"math/bits"
	"math/rand/v2"
	"net/netip"
)

// Key is the counting key of a client address: an IPv4 address whole
// (IPv4-mapped IPv6 included, so TCP on a dual-stack socket and QUIC
// agree), an IPv6 address by its /64, and the invalid address [Unknown].
// Keys are comparable.
type Key struct{ hi, lo uint64 }

// Unknown is the key of every client whose address is unknown (the
// invalid address): they share one key, so they are counted and limited
// together, never let through uncounted. It is neither an IPv4 key (whose
// low word has 0xffff in bits 32-47) nor an IPv6 one (whose low word is
// 0), so no address has it.
var Unknown = Key{hi: 0, lo: 1}

// KeyOf returns the key of a; the zone is ignored.
func KeyOf(a netip.Addr) Key {
	if !a.IsValid() {
		return Unknown
	}
	return NumOf(a).Key()
}

// Key returns the key of n, the [Num] of a valid address.
func (n Num) Key() Key {
	if n.Is4() {
		return Key{n.Hi, n.Lo}
	}
	return Key{n.Hi, 0}
}

// Seed is a table's hash seed. Draw one per table with [NewSeed]: a random
// seed keeps anyone from choosing addresses whose keys crowd the slots of
// someone else's.
type Seed struct{ s0, s1 uint64 }

// NewSeed returns a random seed.
func NewSeed() Seed { return Seed{rand.Uint64() | 1, rand.Uint64() | 1} }

// Hash returns the seeded hash of k within scope, a number that tells
// apart tables sharing one seed (0 when there is one). Its bits are all
// well mixed: callers take a slot from the low bits and a tag from the
// high ones.
func (s Seed) Hash(k Key, scope uint64) uint64 {
	h := mix(k.hi^s.s0, k.lo^s.s1^scope)
	return mix(h^0x9e3779b97f4a7c15, s.s0^0xd6e8feb86659fd93)
}

// mix is the wyhash multiply-fold.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
