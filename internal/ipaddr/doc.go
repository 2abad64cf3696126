// Package ipaddr is the library's one rule for IP addresses and prefixes,
// and what is built on it: the prefix sets of trusted proxies, probe
// sources, access lists and deny lists (gate, connlimit, proxyproto), the
// parser of prefixes written in config ([ParsePrefix]: the document's
// lists and the reference daemon's -deny and -proxy-protocol-from), and
// the key by which the gate's rate limit and connlimit count a client.
//
// # The IPv4-mapped rule
//
// A dual-stack socket reports an IPv4 peer as an IPv4-mapped IPv6
// address (::ffff:192.0.2.1), and a config may spell an IPv4 prefix the
// same way (::ffff:192.0.2.0/120). The rule, everywhere in the library:
//
//   - An IPv4-mapped address is its IPv4 address.
//   - An IPv4-mapped prefix of /96 or longer is the IPv4 prefix of its
//     length minus 96: ::ffff:192.0.2.0/120 is 192.0.2.0/24, and
//     ::ffff:0:0/96 is all of IPv4 (0.0.0.0/0).
//   - An IPv4-mapped prefix shorter than /96 (::ffff:0:0/64) is refused
//     with [ErrMappedPrefixTooShort] by everything that builds a set from
//     config ([CheckPrefix], [UnmapPrefix]): its address says IPv4 and its
//     length reaches past the mapped block into IPv6, so it has no one
//     meaning. ([NewPrefixSet], given one anyway, reads it as the IPv6
//     prefix it masks to, which by the next rule holds no IPv4 address.)
//   - An IPv6 prefix never contains an IPv4 address: ::/0 is all of IPv6,
//     not all addresses, and ::/64 does not hold the mapped block within
//     it.
//
// Zones are ignored; the invalid [netip.Addr] (a client whose address is
// unknown: a Unix socket peer, a PROXY header with UNSPEC or UNIX
// addresses) is in no prefix.
//
// # Main types
//
// [Num] is an address as a 128-bit number in the IPv6 space, with IPv4
// addresses at their IPv4-mapped place, so the first rule holds by
// construction. A [PrefixSet] is an immutable set of prefixes: sorted,
// merged ranges of Nums searched by bisection. A [Key] is the counting key
// of a client: an IPv4 address whole, an IPv6 address by its /64 (what one
// host usually owns), and every invalid address one shared key, [Unknown],
// that no address has. A [Seed] hashes keys for a table: each table draws
// its own random seed, so nobody can choose addresses that crowd someone
// else's place. [CheckPrefix] and [UnmapPrefix] apply the rule to a prefix
// from config, and [ParsePrefix] reads one from text: an address alone is
// its full-length prefix, and a prefix with bits set after its length
// ("10.0.0.1/8") is refused, since it is most often a typo for the prefix
// it masks to.
//
// The tables themselves stay with their users, because they share only
// the key and the hash. The gate's rate limit keeps a token bucket in two
// words a slot (a full 64-bit tag and the GCRA instant), probes 8 slots
// from the hashed one, and takes over a slot whose bucket has refilled;
// connlimit keeps a count in one word (a 40-bit tag and a 24-bit count),
// probes the aligned 8 slots of one cache line, claims never-used slots
// before idle ones, and gives a slot back by the ticket of its admit. One
// table for both would have to reach its slots through a type parameter
// or an interface, which Go calls indirectly (through the generics
// dictionary) on both hot paths.
//
// # Cost and concurrency
//
// NumOf, KeyOf, Seed.Hash and PrefixSet.Contains allocate nothing and take
// no lock. A PrefixSet is immutable after NewPrefixSet and safe for
// concurrent use; Num, Key and Seed are values.
package ipaddr
