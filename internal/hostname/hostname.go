// Package hostname holds the library's one rule for what a configured host
// name is and how it is spelled canonically. The config document (its
// canonical form, destination addresses, TLS server names), the request
// gate's host table and the TLS selector's name table all take names by
// [Canonical], so they store the same key for the same name, and a name
// one of them takes is never refused by another.
//
// The rule follows what clients send and what the request path reads: a
// Host header or SNI names a host by ASCII labels of letters, digits, "-"
// and "_" (the gate looks such names up; underscores name services in
// container networks), so a configured name is that, after Unicode labels
// are mapped to punycode by IDNA's lookup profile (UTS #46). An underscore
// is taken in ASCII labels only: no punycode label holds one.
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

// lookup is x/net/idna's Lookup profile without its STD3 rule, which
// refuses every ASCII byte but letters, digits and "-": Canonical checks
// the ASCII it gives itself, to take "_" too. Profiles are immutable.
var lookup = idna.New(idna.MapForLookup(), idna.Transitional(false), idna.BidiRule(), idna.StrictDomainName(false))

// Canonical returns the form of a configured host name that lookup tables
// store: ASCII lowercase, Unicode labels in punycode, no trailing dot, IP
// literals canonical (IPv6 without brackets, IPv4-mapped IPv6 as IPv4).
// Surrounding white space is ignored. A wildcard keeps its "*." prefix and
// reports wildcard. It reports an error for anything a client could never
// send: among others an empty label, a byte other than a letter, digit,
// "-" or "_" (an "_" in a punycode label too), brackets around anything
// but an IP literal, and a name too long for a Host header to name it
// (or, for a wildcard, a name under it). The canonical form of a name is
// its own canonical form.
//
// A name that is canonical already and needs no IDNA check (lowercase
// labels of letters, digits, "-" and "_", none punycode, or an IPv4
// address in dotted decimal) is returned as it is without allocating.
func Canonical(name string) (canon string, wildcard bool, err error) {
	if len(name) > 0 && '0' <= name[0] && name[0] <= '9' && plainIPv4(name) {
		return name, false, nil
	}
	if wildcard, ok := plainName(name); ok {
		return name, wildcard, nil
	}
	canon, wildcard, err = canonical(name)
	if err != nil {
		return "", false, err
	}
	// The canonical form must be canonical itself, or a document would
	// change meaning when written in canonical form.
	if again, _, err := canonical(canon); err != nil || again != canon {
		return "", false, errors.New("host name has no stable canonical form")
	}
	return canon, wildcard, nil
}

// canonical is Canonical without the fast paths and the stability check.
func canonical(name string) (canon string, wildcard bool, err error) {
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
	a, err := lookup.ToASCII(n)
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
		for i := 0; i < len(l); i++ {
			switch c := l[i]; {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
			case c == '_' && !strings.HasPrefix(l, "xn--"):
			default:
				return "", false, errors.New("invalid character in host name (a label holds letters, digits, - and _; _ only in ASCII labels)")
			}
		}
	}
	if wildcard {
		return "*." + a, true, nil
	}
	return a, false, nil
}

// CatchAll is the name of the host that takes every name no other host
// has (the request gate's catch-all host). It is no name a client sends:
// Canonical refuses it, and each table that takes it says what it stands
// for there.
const CatchAll = "*"

// IsCatchAll reports whether a configured name is [CatchAll], surrounding
// white space ignored as Canonical ignores it.
func IsCatchAll(name string) bool { return strings.TrimSpace(name) == CatchAll }

// IsIP reports whether a canonical name is an IP literal. A name that
// ends in no digit and has no colon is none (every IPv4 literal ends in a
// digit, every IPv6 one has a colon): most host names are ruled out
// without a parse.
func IsIP(canon string) bool {
	if canon == "" {
		return false
	}
	if c := canon[len(canon)-1]; (c < '0' || c > '9') && !strings.Contains(canon, ":") {
		return false
	}
	_, err := netip.ParseAddr(canon)
	return err == nil
}

// plainIPv4 reports whether name is an IPv4 address in dotted decimal
// without leading zeros: the only form netip parses, so canonical.
func plainIPv4(name string) bool {
	if len(name) < 7 || len(name) > 15 {
		return false
	}
	dots, val, digits := 0, 0, 0
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case '0' <= c && c <= '9':
			if digits == 1 && val == 0 {
				return false // leading zero
			}
			val = val*10 + int(c-'0')
			digits++
			if val > 255 {
				return false
			}
		case c == '.':
			if digits == 0 || dots == 3 {
				return false
			}
			dots++
			val, digits = 0, 0
		default:
			return false
		}
	}
	return dots == 3 && digits > 0
}

// plainName reports whether name ("*." allowed in front) is a host name
// that canonical returns unchanged without consulting IDNA's tables:
// labels of 1-63 lowercase letters, digits, "-" and "_", no hyphen at
// either end of a label or in its third and fourth bytes (which covers
// "xn--"), at least one letter, hyphen or underscore (so never an IP
// literal), at most 253 bytes, or 251 under a wildcard.
func plainName(name string) (wildcard, ok bool) {
	n := name
	if len(n) >= 2 && n[0] == '*' && n[1] == '.' {
		n, wildcard = n[2:], true
	}
	maxLen := MaxLen - 2
	if wildcard {
		maxLen -= 2
	}
	if n == "" || len(n) > maxLen {
		return false, false
	}
	nonDigit := false
	start := 0
	for i := 0; i <= len(n); i++ {
		if i == len(n) || n[i] == '.' {
			l := n[start:i]
			if len(l) == 0 || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' ||
				(len(l) >= 4 && l[2] == '-' && l[3] == '-') {
				return false, false
			}
			start = i + 1
			continue
		}
		switch nameByte[n[i]] {
		case nameLetter:
			nonDigit = true
		case nameDigit:
		default:
			return false, false
		}
	}
	return wildcard, nonDigit
}

// Classes of bytes in a plain name.
const (
	nameOther = iota
	nameLetter
	nameDigit
)

// nameByte classifies bytes for plainName: lowercase letters, "-" and "_"
// are letters.
var nameByte = [256]uint8{
	'a': nameLetter, 'b': nameLetter, 'c': nameLetter, 'd': nameLetter, 'e': nameLetter, 'f': nameLetter,
	'g': nameLetter, 'h': nameLetter, 'i': nameLetter, 'j': nameLetter, 'k': nameLetter, 'l': nameLetter,
	'm': nameLetter, 'n': nameLetter, 'o': nameLetter, 'p': nameLetter, 'q': nameLetter, 'r': nameLetter,
	's': nameLetter, 't': nameLetter, 'u': nameLetter, 'v': nameLetter, 'w': nameLetter, 'x': nameLetter,
	'y': nameLetter, 'z': nameLetter, '-': nameLetter, '_': nameLetter,
	'0': nameDigit, '1': nameDigit, '2': nameDigit, '3': nameDigit, '4': nameDigit,
	'5': nameDigit, '6': nameDigit, '7': nameDigit, '8': nameDigit, '9': nameDigit,
}
