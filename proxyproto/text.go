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
func scanIPv4(s []byte) (ip [4]byte, n int, ok bool) {
	for k := range 4 {
		if k > 0 {
			if n >= len(s) || s[n] != '.' {
				return ip, n, false
			}
			n++
		}
		if n >= len(s) {
			return ip, n, false
		}
		d := s[n] - '0'
		if d > 9 {
			return ip, n, false
		}
		n++
		v := uint(d)
		if d != 0 {
			for range 2 {
				if n == len(s) {
					break
				}
				d := s[n] - '0'
				if d > 9 {
					break
				}
				v = v*10 + uint(d)
				n++
			}
			if v > 255 {
				return ip, n, false
			}
		}
		ip[k] = byte(v)
	}
	return ip, n, true
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
	var g [8]uint16
	n, ell, i := 0, -1, 0
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		if len(s) == 2 {
			return netip.IPv6Unspecified(), true
		}
		ell, i = 0, 2
	}
	for {
		start, acc := i, uint16(0)
		for i < len(s) && i-start < 5 {
			d := hexVal[s[i]]
			if d > 15 {
				break
			}
			acc = acc<<4 | uint16(d)
			i++
		}
		if nd := i - start; nd == 0 || nd > 4 {
			return netip.Addr{}, false
		}
		if i < len(s) && s[i] == '.' {
			// A dotted quad takes the last two groups.
			if n > 6 || (ell < 0 && n != 6) {
				return netip.Addr{}, false
			}
			q, ok := parseDottedQuad(s[start:])
			if !ok {
				return netip.Addr{}, false
			}
			g[n] = uint16(q[0])<<8 | uint16(q[1])
			g[n+1] = uint16(q[2])<<8 | uint16(q[3])
			n += 2
			break
		}
		if n == 8 {
			return netip.Addr{}, false
		}
		g[n] = acc
		n++
		if i == len(s) {
			break
		}
		if s[i] != ':' || i+1 == len(s) {
			return netip.Addr{}, false
		}
		i++
		if s[i] == ':' {
			if ell >= 0 {
				return netip.Addr{}, false
			}
			ell = n
			i++
			if i == len(s) {
				break
			}
		}
	}
	if ell >= 0 {
		// "::" stands for at least one group.
		if n == 8 {
			return netip.Addr{}, false
		}
		shift := 8 - n
		for k := n - 1; k >= ell; k-- {
			g[k+shift] = g[k]
			g[k] = 0
		}
	} else if n != 8 {
		return netip.Addr{}, false
	}
	var ip [16]byte
	binary.BigEndian.PutUint64(ip[:8], uint64(g[0])<<48|uint64(g[1])<<32|uint64(g[2])<<16|uint64(g[3]))
	binary.BigEndian.PutUint64(ip[8:], uint64(g[4])<<48|uint64(g[5])<<32|uint64(g[6])<<16|uint64(g[7]))
	return netip.AddrFrom16(ip), true
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
