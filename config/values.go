package snapshot

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/ipaddr"
)

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
		return "", "", errors.New("snapshot: address " + strconv.Quote(s) + ": " + reason)
	}
	return a.scheme, a.hostPort(), nil
}

// decodeSHA256Pin decodes a pin in hex or base64 (standard or URL alphabet,
// padded or not) into its 32 bytes. Line breaks are refused: package
// base64 would skip them.
func decodeSHA256Pin(p string) ([32]byte, bool) {
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
		return 0, errors.New("snapshot: duration " + strconv.Quote(string(d)) + ": not a duration in Go syntax (like \"10s\", \"1m30s\", \"250ms\")")
	}
	if v < 0 {
		return 0, errors.New("snapshot: duration " + strconv.Quote(string(d)) + ": negative")
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
		canon, wildcard, err := canonHostName(host)
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

// canonHostName is [gate.CanonicalHostName] with a fast path for the common
// case of a name that is already canonical (lowercase letters, digits and
// hyphens in labels of 1-63 bytes, or an IPv4 address), which gives the
// same results. It also refuses names gate accepts but whose canonical form
// gate would not return unchanged (invalid UTF-8 becomes a punycode label
// that gate then refuses).
func canonHostName(name string) (canon string, wildcard bool, err error) {
	if len(name) > 0 && '0' <= name[0] && name[0] <= '9' && plainIPv4(name) {
		return name, false, nil
	}
	if wildcard, ok := plainHostName(name); ok {
		return name, wildcard, nil
	}
	if !utf8.ValidString(name) {
		return "", false, errors.New("invalid UTF-8 in host name")
	}
	canon, wildcard, err = gate.CanonicalHostName(name)
	if err != nil {
		return "", false, err
	}
	// The canonical form must be canonical itself, or a document would
	// change meaning when written in canonical form.
	if again, _, err := gate.CanonicalHostName(canon); err != nil || again != canon {
		return "", false, errors.New("host name has no stable canonical form")
	}
	return canon, wildcard, nil
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

// plainHostName reports whether name ("*." allowed in front) is a host name
// that [gate.CanonicalHostName] returns unchanged without consulting IDNA:
// LDH labels of 1-63 bytes in lowercase, no hyphen at either end of a label
// or in its third and fourth bytes (which covers "xn--"), at least one
// letter or hyphen (so never an IP literal), at most 253 bytes.
func plainHostName(name string) (wildcard, ok bool) {
	n := name
	if len(n) >= 2 && n[0] == '*' && n[1] == '.' {
		n, wildcard = n[2:], true
	}
	if n == "" || len(n) > 253 {
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
		switch hostByte[n[i]] {
		case hostLetter:
			nonDigit = true
		case hostDigit:
		default:
			return false, false
		}
	}
	return wildcard, nonDigit
}

// Classes of bytes in a plain host name.
const (
	hostOther = iota
	hostLetter
	hostDigit
)

// hostByte classifies bytes for plainHostName: lowercase letters and '-'
// are letters.
var hostByte = [256]uint8{
	'a': hostLetter, 'b': hostLetter, 'c': hostLetter, 'd': hostLetter, 'e': hostLetter, 'f': hostLetter,
	'g': hostLetter, 'h': hostLetter, 'i': hostLetter, 'j': hostLetter, 'k': hostLetter, 'l': hostLetter,
	'm': hostLetter, 'n': hostLetter, 'o': hostLetter, 'p': hostLetter, 'q': hostLetter, 'r': hostLetter,
	's': hostLetter, 't': hostLetter, 'u': hostLetter, 'v': hostLetter, 'w': hostLetter, 'x': hostLetter,
	'y': hostLetter, 'z': hostLetter, '-': hostLetter,
	'0': hostDigit, '1': hostDigit, '2': hostDigit, '3': hostDigit, '4': hostDigit,
	'5': hostDigit, '6': hostDigit, '7': hostDigit, '8': hostDigit, '9': hostDigit,
}

// parseAddrPrefix parses an IP address or CIDR prefix as used by trusted
// proxies and access lists. IPv4-mapped IPv6 is converted to IPv4; a prefix
// with bits set below its length is refused, since it is most often a typo.
// An address is returned as a full-length prefix.
func parseAddrPrefix(s string) (netip.Prefix, string) {
	if strings.IndexByte(s, '/') < 0 {
		ip, err := netip.ParseAddr(s)
		if err != nil || ip.Zone() != "" {
			return netip.Prefix{}, "not an IP address or CIDR prefix"
		}
		ip = ip.Unmap()
		return netip.PrefixFrom(ip, ip.BitLen()), ""
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, "not an IP address or CIDR prefix"
	}
	if p, err = ipaddr.UnmapPrefix(p); err != nil {
		return netip.Prefix{}, err.Error()
	}
	if m := p.Masked(); m != p {
		return netip.Prefix{}, "bits set after the prefix length; did you mean " + m.String() + "?"
	}
	return p, ""
}

// appendPrefix appends a prefix from parseAddrPrefix in canonical form: an
// address alone for a full-length prefix.
func appendPrefix(b []byte, p netip.Prefix) []byte {
	if p.Bits() == p.Addr().BitLen() {
		return p.Addr().AppendTo(b)
	}
	return p.AppendTo(b)
}
