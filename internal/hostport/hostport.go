// Package hostport is the library's one rule for a destination's address:
// the scheme it is spoken to in and the host and port it is dialled at.
// The config document spells it as a URL ([ParseURL]: "http://host:port")
// and upstream.NewCluster takes it as a scheme and a host:port
// ([ParseHostPort]); both read the host:port part by the same code, so a
// destination one of them takes is never refused by the other, and health
// probes and the forwarder build their URLs from an address that parses.
//
// A host is a name by the library's host-name rule (internal/hostname:
// letters, digits, "-" and "_", Unicode in punycode), an IPv4 address, or
// an IPv6 address in brackets without a zone; a port is decimal, 1-65535,
// without leading zeros. Parsing allocates nothing for a host already in
// canonical form.
package hostport

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/hostname"
)

// Address is a parsed destination address. Host is canonical, without
// brackets; Port is decimal digits.
type Address struct {
	Scheme string // "http" or "https"
	Host   string
	Port   string
	IPv6   bool
}

// HostPort returns "host:port", the IPv6 literal in brackets.
func (a Address) HostPort() string {
	if a.IPv6 {
		return "[" + a.Host + "]:" + a.Port
	}
	return a.Host + ":" + a.Port
}

// AppendURL appends the address in canonical form: scheme://host:port.
func (a Address) AppendURL(b []byte) []byte {
	b = append(b, a.Scheme...)
	b = append(b, "://"...)
	if a.IPv6 {
		b = append(b, '[')
		b = append(b, a.Host...)
		b = append(b, ']')
	} else {
		b = append(b, a.Host...)
	}
	b = append(b, ':')
	return append(b, a.Port...)
}

// CheckScheme returns why s is not a destination's scheme ("http" or
// "https", in lower case), or "".
func CheckScheme(s string) string {
	if s == "http" || s == "https" {
		return ""
	}
	return "scheme " + strconv.Quote(s) + " is not http or https"
}

// ParseURL parses a destination address as a config document writes it,
// "http://host:port" or "https://host:port": the scheme in any case, the
// port defaulting to the scheme's, no path but "/", no query, fragment or
// user info. On failure it returns the reason.
func ParseURL(s string) (a Address, reason string) {
	rest, ok := cutSchemeFold(s, "http://")
	a.Scheme, a.Port = "http", "80"
	if !ok {
		if rest, ok = cutSchemeFold(s, "https://"); !ok {
			return a, "must start with http:// or https://"
		}
		a.Scheme, a.Port = "https", "443"
	}
	if i := indexAddrDelim(rest); i >= 0 {
		switch rest[i] {
		case '/':
			if rest[i:] != "/" {
				return a, "must not have a path"
			}
		case '?':
			return a, "must not have a query"
		case '#':
			return a, "must not have a fragment"
		case '@':
			return a, "must not have user info"
		}
		rest = rest[:i]
	}
	host, port, ipv6, reason := split(rest)
	if reason != "" {
		return a, reason
	}
	a.Host, a.IPv6 = host, ipv6
	if port != "" {
		a.Port = port
	}
	return a, ""
}

// ParseHostPort parses the host:port a destination is dialled at, as
// upstream.DestinationConfig holds it: the port is required. On failure
// it returns the reason.
func ParseHostPort(s string) (a Address, reason string) {
	if i := indexAddrDelim(s); i >= 0 {
		return a, "a host:port, not a URL (no " + strconv.Quote(s[i:i+1]) + ")"
	}
	host, port, ipv6, reason := split(s)
	switch {
	case reason != "":
		return a, reason
	case port == "":
		return a, "missing port"
	}
	a.Host, a.Port, a.IPv6 = host, port, ipv6
	return a, ""
}

// ParseAuthority parses a host with an optional port, as a Host header
// or an origin names it: the same host and port rules as ParseHostPort,
// the port may be left out (Port is then ""). On failure it returns the
// reason.
func ParseAuthority(s string) (a Address, reason string) {
	if i := indexAddrDelim(s); i >= 0 {
		return a, "a host with an optional port (no " + strconv.Quote(s[i:i+1]) + ")"
	}
	host, port, ipv6, reason := split(s)
	if reason != "" {
		return a, reason
	}
	a.Host, a.Port, a.IPv6 = host, port, ipv6
	return a, ""
}

// split reads host[:port]: the canonical host, the port or "", and
// whether the host is an IPv6 literal; on failure the reason.
func split(rest string) (host, port string, ipv6 bool, reason string) {
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return "", "", false, "missing ] after the IPv6 address"
		}
		switch after := rest[end+1:]; {
		case after == "":
		case after[0] == ':':
			port = after[1:]
			if port == "" {
				return "", "", false, "empty port"
			}
		default:
			return "", "", false, "unexpected text after the IPv6 address"
		}
		ip, err := netip.ParseAddr(rest[1:end])
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", "", false, "invalid IPv6 address in brackets"
		}
		if ip.Is4In6() {
			host = ip.Unmap().String()
		} else {
			host, ipv6 = ip.String(), true
		}
	} else {
		h := rest
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			h, port = rest[:i], rest[i+1:]
			if port == "" {
				return "", "", false, "empty port"
			}
		}
		if h == "" {
			return "", "", false, "missing host"
		}
		if strings.IndexByte(h, ':') >= 0 {
			return "", "", false, "an IPv6 address must be in brackets"
		}
		canon, wildcard, err := hostname.Canonical(h)
		if err != nil || wildcard || strings.HasSuffix(h, ".") || strings.TrimSpace(h) != h {
			return "", "", false, "invalid host " + strconv.Quote(h)
		}
		host = canon
	}
	if port != "" && !validPort(port) {
		return "", "", false, "invalid port " + strconv.Quote(port)
	}
	return host, port, ipv6, ""
}

// indexAddrDelim returns the index of the first '/', '?', '#' or '@' in s,
// or -1.
func indexAddrDelim(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '/', '?', '#', '@':
			return i
		}
	}
	return -1
}

// cutSchemeFold cuts prefix (lowercase) from s, ignoring ASCII case.
func cutSchemeFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) {
		return s, false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return s, false
		}
	}
	return s[len(prefix):], true
}

// validPort reports whether p is a decimal port 1-65535 without leading
// zeros.
func validPort(p string) bool {
	if len(p) == 0 || len(p) > 5 || p[0] == '0' {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int(c-'0')
	}
	return n <= 65535
}
