package config

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/hostport"
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
	return a.Scheme, a.HostPort(), nil
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

// parseAddr parses a destination address by the library's one rule
// (internal/hostport, which upstream.NewCluster reads its addresses by);
// on failure it returns the reason.
func parseAddr(s string) (hostport.Address, string) { return hostport.ParseURL(s) }

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
