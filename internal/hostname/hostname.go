// Package hostname holds the library's one rule for what a configured host
// name is and how it is spelled canonically, so the request gate's host
// table and the TLS selector's name table store the same key for the same
// name.
package hostname

import (
	"errors"
	"net/netip"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxLen is the longest name (in bytes, after canonicalisation) that a Host
// header or an SNI can carry: 253 bytes of DNS name and room for the two
// bytes of a port's or a wildcard's punctuation.
const MaxLen = 255

// Canonical returns the form of a configured host name that lookup tables
// store: ASCII lowercase, Unicode labels in punycode, no trailing dot, IP
// literals canonical (IPv6 without brackets, IPv4-mapped IPv6 as IPv4).
// Surrounding white space is ignored. A wildcard keeps its "*." prefix and
// reports wildcard. It reports an error for anything a client could never
// send: among others an empty label, brackets around anything but an IP
// literal, and a name too long for a Host header to name it (or, for a
// wildcard, a name under it).
func Canonical(name string) (canon string, wildcard bool, err error) {
	n := strings.TrimSuffix(strings.TrimSpace(name), ".")
	if n == "" {
		return "", false, errors.New("empty name")
	}
	bracketed := strings.HasPrefix(n, "[") && strings.HasSuffix(n, "]")
	if bracketed {
		n = n[1 : len(n)-1]
	}
	if ip, err := netip.ParseAddr(n); err == nil {
		if ip.Zone() != "" {
			return "", false, errors.New("an IP literal with a zone cannot be a host name")
		}
		return ip.Unmap().String(), false, nil
	} else if bracketed {
		return "", false, errors.New("brackets around something other than an IP literal")
	}
	if strings.HasPrefix(n, "*.") {
		wildcard = true
		n = n[2:]
	}
	if strings.ContainsAny(n, "*:/[] ") {
		return "", false, errors.New("invalid character in host name")
	}
	if !utf8.ValidString(n) {
		// IDNA would map the invalid bytes to U+FFFD and encode that: a
		// name no client can send.
		return "", false, errors.New("host name is not valid UTF-8")
	}
	a, err := idna.Lookup.ToASCII(n)
	if err != nil {
		return "", false, err
	}
	// A name is at most 253 bytes; a wildcard's parent needs room for a
	// label and a dot in front.
	maxLen := MaxLen - 2
	if wildcard {
		maxLen -= 2
	}
	if a == "" || len(a) > maxLen {
		return "", false, errors.New("host name length out of range")
	}
	for l := range strings.SplitSeq(a, ".") {
		if l == "" || len(l) > 63 {
			// "a..test", ".a.test", "a.test..": no client sends them, and
			// each would be a second spelling of some other name.
			return "", false, errors.New("host name has an empty or over-long label")
		}
	}
	if wildcard {
		return "*." + a, true, nil
	}
	return a, false, nil
}

// IsIP reports whether a canonical name is an IP literal.
func IsIP(canon string) bool {
	_, err := netip.ParseAddr(canon)
	return err == nil
}
