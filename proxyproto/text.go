package proxyproto

import "net/netip"

// Text forms of v1 addresses and ports. The parsers take byte slices so
// that nothing is converted to a string, and they are stricter than
// [netip.ParseAddr] where the PROXY protocol is: no zones, no heading
// zeroes in IPv4 octets.

// parseDottedQuad parses an IPv4 address: four decimal octets 0-255
// without heading zeroes.
func parseDottedQuad(s []byte) (ip [4]byte, ok bool) {
	i := 0
	for k := range 4 {
		if k > 0 {
			if i >= len(s) || s[i] != '.' {
				return ip, false
			}
			i++
		}
		start, v := i, 0
		for i < len(s) && i-start < 3 && s[i] >= '0' && s[i] <= '9' {
			v = v*10 + int(s[i]-'0')
			i++
		}
		n := i - start
		if n == 0 || v > 255 || (n > 1 && s[start] == '0') {
			return ip, false
		}
		ip[k] = byte(v)
	}
	return ip, i == len(s)
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
	var ip [16]byte
	ellipsis := -1
	if len(s) >= 2 && s[0] == ':' && s[1] == ':' {
		ellipsis = 0
		s = s[2:]
		if len(s) == 0 {
			return netip.IPv6Unspecified(), true
		}
	}
	i := 0
	for i < 16 {
		off, acc := 0, 0
		for ; off < len(s); off++ {
			d := unhex(s[off])
			if d < 0 {
				break
			}
			if off > 3 {
				return netip.Addr{}, false
			}
			acc = acc<<4 | d
		}
		if off == 0 {
			return netip.Addr{}, false
		}
		if off < len(s) && s[off] == '.' {
			if (ellipsis < 0 && i != 12) || i+4 > 16 {
				return netip.Addr{}, false
			}
			q, ok := parseDottedQuad(s)
			if !ok {
				return netip.Addr{}, false
			}
			copy(ip[i:], q[:])
			i += 4
			s = nil
			break
		}
		ip[i] = byte(acc >> 8)
		ip[i+1] = byte(acc)
		i += 2
		s = s[off:]
		if len(s) == 0 {
			break
		}
		if s[0] != ':' || len(s) == 1 {
			return netip.Addr{}, false
		}
		s = s[1:]
		if s[0] == ':' {
			if ellipsis >= 0 {
				return netip.Addr{}, false
			}
			ellipsis = i
			s = s[1:]
			if len(s) == 0 {
				break
			}
		}
	}
	if len(s) != 0 {
		return netip.Addr{}, false
	}
	if i < 16 {
		if ellipsis < 0 {
			return netip.Addr{}, false
		}
		n := 16 - i
		for j := i - 1; j >= ellipsis; j-- {
			ip[j+n] = ip[j]
		}
		for j := ellipsis + n - 1; j >= ellipsis; j-- {
			ip[j] = 0
		}
	} else if ellipsis >= 0 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom16(ip), true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

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
