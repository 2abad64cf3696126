package config

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/hostname"
	"github.com/paduraksa/paduraksa/internal/ipaddr"
)

// The values only the document spells: destination addresses, durations,
// TLS pins, prefixes. Each is parsed here, for the checks, the canonical
// form and the compile alike.

// ParseAddress parses a destination address, "http://host:port" or
// "https://host:port", into its scheme ("http" or "https") and host:port.
// The scheme is case-insensitive; the port defaults to 80 or 443; an IPv6
// literal is written in brackets; the host is returned in canonical form
// (lowercase, Unicode names in punycode, IPv4-mapped IPv6 as IPv4). The
// only paths allowed are "" and "/"; a query, fragment or user info is an
// error.
func ParseAddress(s string) (scheme, hostport string, err error) {
	a, reason := parseAddr(s)
	if reason != "" {
		return "", "", errors.New("config: address " + strconv.Quote(s) + ": " + reason)
	}
	return a.scheme, a.hostPort(), nil
}

// ParsePin decodes a TLS pin, the SHA-256 digest of a certificate's
// SubjectPublicKeyInfo, in hex or base64 (standard or URL alphabet, padded
// or not), into its 32 bytes; it reports false for anything else. Line
// breaks are refused: package base64 would skip them.
func ParsePin(p string) ([32]byte, bool) {
	var out [32]byte
	switch len(p) {
	case 64:
		if n, err := hex.Decode(out[:], []byte(p)); err == nil && n == 32 {
			return out, true
		}
	case 43, 44:
		if strings.ContainsAny(p, "\r\n") {
			break
		}
		for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			var buf [33]byte
			if n, err := enc.Decode(buf[:], []byte(p)); err == nil && n == 32 {
				copy(out[:], buf[:32])
				return out, true
			}
		}
	}
	return out, false
}

// ParseDuration parses a Duration in Go syntax ("10s", "1m30s", "250ms").
// The empty Duration returns def; a negative duration is an error.
func ParseDuration(d Duration, def time.Duration) (time.Duration, error) {
	if d == "" {
		return def, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, errors.New("config: duration " + strconv.Quote(string(d)) + ": not a duration in Go syntax (like \"10s\", \"1m30s\", \"250ms\")")
	}
	if v < 0 {
		return 0, errors.New("config: duration " + strconv.Quote(string(d)) + ": negative")
	}
	return v, nil
}

// address is a parsed destination address. host is canonical, without
// brackets; port is decimal digits.
type address struct {
	scheme string
	host   string
	port   string
	ipv6   bool
}

func (a address) hostPort() string {
	if a.ipv6 {
		return "[" + a.host + "]:" + a.port
	}
	return a.host + ":" + a.port
}

// appendURL appends the address in canonical form: scheme://host:port.
func (a address) appendURL(b []byte) []byte {
	b = append(b, a.scheme...)
	b = append(b, "://"...)
	if a.ipv6 {
		b = append(b, '[')
		b = append(b, a.host...)
		b = append(b, ']')
	} else {
		b = append(b, a.host...)
	}
	b = append(b, ':')
	return append(b, a.port...)
}

// parseAddr parses a destination address; on failure it returns the reason.
// It allocates nothing for an address whose host is already canonical.
func parseAddr(s string) (a address, reason string) {
	rest, ok := cutSchemeFold(s, "http://")
	a.scheme, a.port = "http", "80"
	if !ok {
		if rest, ok = cutSchemeFold(s, "https://"); !ok {
			return a, "must start with http:// or https://"
		}
		a.scheme, a.port = "https", "443"
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
	host := rest
	port := ""
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return a, "missing ] after the IPv6 address"
		}
		host = rest[1:end]
		switch after := rest[end+1:]; {
		case after == "":
		case after[0] == ':':
			port = after[1:]
			if port == "" {
				return a, "empty port"
			}
		default:
			return a, "unexpected text after the IPv6 address"
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return a, "invalid IPv6 address in brackets"
		}
		if ip.Is4In6() {
			a.host = ip.Unmap().String()
		} else {
			a.host, a.ipv6 = ip.String(), true
		}
	} else {
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			host, port = rest[:i], rest[i+1:]
			if port == "" {
				return a, "empty port"
			}
		}
		if host == "" {
			return a, "missing host"
		}
		if strings.IndexByte(host, ':') >= 0 {
			return a, "an IPv6 address must be in brackets"
		}
		canon, wildcard, err := hostname.Canonical(host)
		if err != nil || wildcard || strings.HasSuffix(host, ".") || strings.TrimSpace(host) != host {
			return a, "invalid host " + strconv.Quote(host)
		}
		a.host = canon
	}
	if port != "" {
		if !validPort(port) {
			return a, "invalid port " + strconv.Quote(port)
		}
		a.port = port
	}
	return a, ""
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

// ParsePrefix parses an IP address or CIDR prefix as trusted proxies,
// probe sources and access lists spell them, by the library's one rule
// for prefixes from config: an address alone is its full-length prefix,
// IPv4-mapped IPv6 is IPv4 (a mapped prefix shorter than /96 is refused),
// and a prefix with bits set after its length ("10.0.0.1/8") is refused,
// since it is most often a typo.
func ParsePrefix(s string) (netip.Prefix, error) { return ipaddr.ParsePrefix(s) }

// appendPrefix appends a prefix from ParsePrefix in canonical form: an
// address alone for a full-length prefix.
func appendPrefix(b []byte, p netip.Prefix) []byte {
	if p.Bits() == p.Addr().BitLen() {
		return p.Addr().AppendTo(b)
	}
	return p.AppendTo(b)
}

// RoutePrefix returns the prefix a valid route path ([Route.Path]) stands
// for, as the canonical form writes it: the path without a trailing slash,
// and "" for "/" and the empty path.
func RoutePrefix(p string) string {
	if len(p) > 0 && p[len(p)-1] == '/' {
		return p[:len(p)-1]
	}
	return p
}
