package proxyproto

import (
	"encoding/binary"
	"net/netip"
)

// Text forms of v1 addresses and ports. The parsers take byte slices so
// that nothing is converted to a string, and they are stricter than
// [netip.ParseAddr] where the PROXY protocol is: no zones, no heading
// zeroes in IPv4 octets.

// parseDottedQuad parses an IPv4 address: four decimal octets 0-255
// without heading zeroes.
func parseDottedQuad(s []byte) (ip [4]byte, ok bool) {
	ip, n, ok := scanIPv4(s)
	return ip, ok && n == len(s)
}

// scanIPv4 parses the IPv4 address at the start of s and returns the
// number of bytes it spans. The caller checks what follows: a digit after
// a 3-digit or a "0" octet makes the address invalid.
//
// The address is read from a 16-byte copy of s's start, padded with NUL
// (neither a digit nor a dot), so that each octet is read without a loop
// or bounds checks: an octet starts at most 4 bytes after the previous
// one, so no index passes 15.
func scanIPv4(s []byte) (ip [4]byte, n int, ok bool) {
	var t [16]byte
	if len(s) >= len(t) {
		t = [16]byte(s)
	} else {
		copy(t[:], s)
	}
	// Unrolled: a loop over the octets costs a third of the parse.
	var m int
	if ip[0], m = octet(t[0], t[1], t[2]); m == 0 || t[m&15] != '.' {
		return ip, m, false
	}
	n = m + 1
	if ip[1], m = octet(t[n&15], t[(n+1)&15], t[(n+2)&15]); m == 0 || t[(n+m)&15] != '.' {
		return ip, n + m, false
	}
	n += m + 1
	if ip[2], m = octet(t[n&15], t[(n+1)&15], t[(n+2)&15]); m == 0 || t[(n+m)&15] != '.' {
		return ip, n + m, false
	}
	n += m + 1
	ip[3], m = octet(t[n&15], t[(n+1)&15], t[(n+2)&15])
	return ip, n + m, m != 0
}

// octet reads the decimal octet whose first three bytes are c0, c1 and
// c2: 1 to 3 digits, no heading zero, at most 255, and returns its
// length, or 0 if there is none. A digit may follow a "0" or 3 digits,
// for the caller to refuse.
func octet(c0, c1, c2 byte) (byte, int) {
	d0, d1, d2 := c0-'0', c1-'0', c2-'0'
	switch {
	case d0 > 9:
		return 0, 0
	case d1 > 9 || d0 == 0:
		return d0, 1
	case d2 > 9:
		return d0*10 + d1, 2
	}
	if v := uint(d0)*100 + uint(d1)*10 + uint(d2); v <= 255 {
		return byte(v), 3
	}
	return 0, 0
}

func parseIPv4(s []byte) (netip.Addr, bool) {
	ip, ok := parseDottedQuad(s)
	if !ok {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(ip), true
}

// parseIPv6 parses the RFC 4291 text forms: 1-4 hex digits per group, at
// most one "::" standing for at least one zero group, and optionally a
// dotted quad as the last 32 bits. Zones and brackets are refused. It
// accepts the same set as [netip.ParseAddr] restricted to unzoned IPv6.
func parseIPv6(s []byte) (netip.Addr, bool) {
	a, n, ok := scanIPv6(s)
	return a, ok && n == len(s)
}

// scanIPv6 parses the IPv6 address at the start of s, up to the end of s
// or a space, and returns the number of bytes it spans.
//
// The groups are written into the address in order; after a "::", the
// groups that follow it are moved down to the end.
func scanIPv6(s []byte) (netip.Addr, int, bool) {
	// 2 spare bytes, so that storing group n&7 needs no bounds check. A
	// ninth group overwrites the first, and fails the count at the end.
	var ip [18]byte
	n, ell, i := 0, -1, uint(0)
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		if len(s) == 2 || s[2] == ' ' {
			return netip.IPv6Unspecified(), 2, true
		}
		ell, i = 0, 2
	}
	for {
		// A group of hex digits, then c, the byte after them: a space at
		// the end of s.
		start, acc, c, k := i, uint(0), byte(' '), uint(0)
		if i+4 < uint(len(s)) {
			// Unrolled: the digits a group may have and the byte after
			// them are in s.
			t := s[i : i+5 : i+5]
			if d := uint(hexVal[t[0]]); d <= 15 {
				acc, k = d, 1
				if d := uint(hexVal[t[1]]); d <= 15 {
					acc, k = acc<<4|d, 2
					if d := uint(hexVal[t[2]]); d <= 15 {
						acc, k = acc<<4|d, 3
						if d := uint(hexVal[t[3]]); d <= 15 {
							acc, k = acc<<4|d, 4
							if hexVal[t[4]] <= 15 {
								return netip.Addr{}, 0, false
							}
						}
					}
				}
			}
			i, c = i+k, t[k]
		} else {
			for ; i < uint(len(s)); i++ {
				d := hexVal[s[i]]
				if d > 15 {
					c = s[i]
					break
				}
				acc = acc<<4 | uint(d)
			}
			k = i - start
		}
		if k-1 > 3 {
			// No digit after a colon: the second colon of the only "::",
			// which may end the address. Or more than 4 digits.
			if k != 0 || c != ':' || ell >= 0 || start == 0 {
				return netip.Addr{}, 0, false
			}
			ell = n
			if i++; i == uint(len(s)) || s[i] == ' ' {
				break
			}
			continue
		}
		if c == ':' {
			binary.BigEndian.PutUint16(ip[(2*n)&15:], uint16(acc))
			n++
			i++
			continue
		}
		if c == '.' {
			// A dotted quad takes the last two groups.
			if n > 6 || (ell < 0 && n != 6) {
				return netip.Addr{}, 0, false
			}
			q, k, ok := scanIPv4(s[start:])
			if i = start + uint(k); !ok || i < uint(len(s)) && s[i] != ' ' {
				return netip.Addr{}, 0, false
			}
			copy(ip[(2*n)&15:], q[:])
			n += 2
			break
		}
		if c != ' ' {
			return netip.Addr{}, 0, false
		}
		binary.BigEndian.PutUint16(ip[(2*n)&15:], uint16(acc))
		n++
		break
	}
	a := [16]byte(ip[:])
	if ell < 0 {
		if n != 8 {
			return netip.Addr{}, 0, false
		}
		return netip.AddrFrom16(a), int(i), true
	}
	// "::" stands for at least one group: the groups after it move down
	// by the missing ones.
	if n >= 8 {
		return netip.Addr{}, 0, false
	}
	hi, lo := collapse(binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:]), uint(16*ell), uint(16*(8-n)))
	binary.BigEndian.PutUint64(a[:8], hi)
	binary.BigEndian.PutUint64(a[8:], lo)
	return netip.AddrFrom16(a), int(i), true
}

// collapse shifts the bits of the 128-bit number (hi, lo) below its top
// keep bits down by shift bits, keep < 128, 0 < shift <= 128.
func collapse(hi, lo uint64, keep, shift uint) (uint64, uint64) {
	// The kept bits, and the rest with the kept ones cleared.
	var khi, klo uint64
	if keep <= 64 {
		khi = hi &^ (^uint64(0) >> keep)
	} else {
		khi, klo = hi, lo&^(^uint64(0)>>(keep-64))
	}
	hi, lo = hi^khi, lo^klo
	if shift >= 64 {
		hi, lo = 0, hi>>(shift-64)
	} else {
		hi, lo = hi>>shift, lo>>shift|hi<<(64-shift)
	}
	return hi | khi, lo | klo
}

// hexVal maps a byte to its hex digit value, or 0xFF. It is never written.
var hexVal = func() (t [256]uint8) {
	for i := range t {
		t[i] = 0xFF
	}
	for i := range 10 {
		t['0'+i] = uint8(i)
	}
	for i := range 6 {
		t['a'+i] = uint8(10 + i)
		t['A'+i] = uint8(10 + i)
	}
	return t
}()

// parsePort parses a decimal port 0-65535 without sign or heading zero.
func parsePort(s []byte) (uint16, bool) {
	if len(s) == 0 || len(s) > 5 || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	if v > 65535 {
		return 0, false
	}
	return uint16(v), true
}
