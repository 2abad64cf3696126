package proxy

import (
	"net/netip"
	"strconv"
	"strings"
)

// ValidHostHeader reports whether h can be a route's custom Host: a host
// name or IP literal with an optional port. A host name is labels of 1-63
// letters, digits, hyphens and underscores with no hyphen at either end,
// at most 253 bytes besides one trailing dot; an IP literal is an IPv4
// address, or an IPv6 address in brackets; a port is 1-65535.
func ValidHostHeader(h string) bool { return validHostName(h) }

func validHostName(h string) bool {
	if h == "" || len(h) > 260 {
		return false
	}
	name := h
	if h[0] == '[' {
		i := strings.IndexByte(h, ']')
		if i < 0 {
			return false
		}
		if rest := h[i+1:]; rest != "" && !validPort(rest) {
			return false
		}
		ip, err := netip.ParseAddr(h[1:i])
		return err == nil && ip.Is6() && ip.Zone() == ""
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 {
		if !validPort(h[i:]) {
			return false
		}
		name = h[:i]
	}
	name = strings.TrimSuffix(name, ".")
	if len(name) > 253 {
		return false
	}
	for {
		label, rest, more := strings.Cut(name, ".")
		if len(label) == 0 || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
		if !more {
			return true
		}
		name = rest
	}
}

// validPort reports whether p is ":" and a port number, 1-65535.
func validPort(p string) bool {
	digits, ok := strings.CutPrefix(p, ":")
	if !ok || len(digits) == 0 || len(digits) > 5 || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	n, _ := strconv.Atoi(digits)
	return n > 0 && n < 65536
}
