package config

import (
	"math/big"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/paduraksa/paduraksa/internal/hostname"
)

// The fuzz targets of this file check the decoders of the document's
// values (pins, durations, addresses) against references written from the
// documentation, not from the code: they share no helper with it. The
// decoder of prefixes is internal/ipaddr's (FuzzParsePrefix).

// FuzzParsePin checks ParsePin, the one decoder of TLS pins,
// against refPin.
func FuzzParsePin(f *testing.F) {
	for _, s := range []string{
		testPin, strings.ToUpper(testPin), testPin[:62], testPin + "00",
		"47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
		"47DEQpj8HBSa+_TImW+5JCeuQeRkm5NMpJWZG3hSuFU", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFV",
		"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU\n", "47DEQpj8HBSa+/TImW+5JCeu\r\nQeRkm5NMpJWZG3hSuFU", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU==",
		"AQID", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := ParsePin(s)
		want, wantOK := refPin(s)
		if ok != wantOK || ok && got != want {
			t.Fatalf("ParsePin(%q) = %x, %v; the reference: %x, %v", s, got, ok, want, wantOK)
		}
	})
}

// refPin reads a pin as the document describes it: a SHA-256 digest (32
// bytes) in 64 hex digits of either case, or in base64 with the standard
// or the URL alphabet (one of them throughout), 43 characters with or
// without the one "=" of padding. The two bits after the 256th are not
// checked (RFC 4648 lets a decoder accept them set).
func refPin(s string) (sum [32]byte, ok bool) {
	if len(s) == 64 {
		for i := range 64 {
			v := strings.IndexByte("0123456789abcdef", s[i])
			if v < 0 {
				v = strings.IndexByte("0123456789ABCDEF", s[i])
			}
			if v < 0 {
				return [32]byte{}, false
			}
			sum[i/2] |= byte(v) << (4 * (1 - i%2))
		}
		return sum, true
	}
	s = strings.TrimSuffix(s, "=")
	if len(s) != 43 {
		return [32]byte{}, false
	}
	for _, alphabet := range []string{
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
	} {
		var bits big.Int
		ok = true
		for i := 0; i < len(s) && ok; i++ {
			v := strings.IndexByte(alphabet, s[i])
			ok = v >= 0
			bits.Lsh(&bits, 6).Or(&bits, big.NewInt(int64(v)))
		}
		if ok {
			bits.Rsh(&bits, 43*6-256).FillBytes(sum[:])
			return sum, true
		}
	}
	return [32]byte{}, false
}

// FuzzParseDuration checks ParseDuration against refDuration, written
// from time.ParseDuration's documented grammar with exact arithmetic, and
// checks that the canonical form of a duration parses back to it exactly.
func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{
		"", "0", "+0", "-0", "00", "0s", "-0s", "10s", "1m30s", "250ms", "1.5h", ".5s", "5.s", ".s", "1", "-1s",
		"1h2m3s4ms5us6ns", "1µs", "1μs", "3.000000001s", "0.999999999999999999999s", "9223372036854775807ns",
		"9223372036854775808ns", "-9223372036854775808ns", "2562047h47m16.854775807s", "2562047h47m16.854775808s",
		"1d", "1 s", "1s ", "+-1s", "1e3s", "0x10s", "1_000s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		const def = 7 * time.Second
		got, err := ParseDuration(Duration(s), def)
		if s == "" {
			if err != nil || got != def {
				t.Fatalf(`ParseDuration("") = %v, %v; want the default`, got, err)
			}
			return
		}
		want, parts, ok := refDuration(s)
		// The reference is exact; time.ParseDuration computes fractions in
		// float64, which may end one nanosecond off per unit written. Near
		// the limit that decides whether a value is accepted.
		slack := new(big.Int).SetInt64(int64(parts))
		limit := big.NewInt(1<<63 - 1)
		if ok && want.Sign() >= 0 && new(big.Int).Sub(limit, want).CmpAbs(slack) <= 0 {
			return
		}
		accepted := ok && want.Cmp(limit) <= 0 && want.Sign() >= 0
		if (err == nil) != accepted {
			t.Fatalf("ParseDuration(%q) = %v, %v; the reference: %v, grammar ok %v", s, got, err, want, ok)
		}
		// Validation reads duration fields by the same rule: slowStart
		// takes any duration >= 0.
		doc := &Document{Upstreams: []Upstream{{ID: "u", Health: HealthCheck{SlowStart: Duration(s)}}}}
		if probs := Check(doc); (len(probs) == 0) != accepted {
			t.Fatalf("slowStart %q: validation says %v, the reference accepts: %v", s, probs, accepted)
		}
		if err != nil {
			return
		}
		if diff := new(big.Int).Sub(big.NewInt(int64(got)), want); diff.CmpAbs(slack) > 0 {
			t.Fatalf("ParseDuration(%q) = %d ns; the reference: %v ns", s, got, want)
		}
		canon := string(appendDuration(nil, got))
		if canon != got.String() {
			t.Fatalf("appendDuration(%v) = %q, want %q", got, canon, got.String())
		}
		if again, err := ParseDuration(Duration(canon), def); err != nil || again != got {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, got, canon, again, err)
		}
	})
}

// refDuration reads s as time.ParseDuration documents it: "a possibly
// signed sequence of decimal numbers, each with optional fraction and a
// unit suffix", units ns, us (or µs, μs), ms, s, m and h; "0" alone needs
// no unit. It returns the value in nanoseconds, each unit's fraction cut
// to whole nanoseconds, and how many numbers it read.
func refDuration(s string) (ns *big.Int, parts int, ok bool) {
	units := map[string]int64{"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	total := new(big.Rat)
	if s == "0" {
		return new(big.Int), 1, true
	}
	isDigit := func(c byte) bool { return '0' <= c && c <= '9' }
	for s != "" {
		i := 0
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		whole, frac := s[:i], ""
		if i < len(s) && s[i] == '.' {
			j := i + 1
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			frac, i = s[i+1:j], j
		}
		if whole == "" && frac == "" {
			return nil, 0, false
		}
		j := i
		for j < len(s) && !isDigit(s[j]) && s[j] != '.' {
			j++
		}
		unit, known := units[s[i:j]]
		if !known {
			return nil, 0, false
		}
		s = s[j:]
		n, _ := new(big.Rat).SetString("0" + whole + "." + frac + "0")
		v := new(big.Rat).Mul(n, new(big.Rat).SetInt64(unit))
		cut := new(big.Int).Quo(v.Num(), v.Denom()) // toward zero: v >= 0
		total.Add(total, new(big.Rat).SetInt(cut))
		parts++
	}
	if parts == 0 {
		return nil, 0, false
	}
	ns = total.Num()
	if neg {
		ns.Neg(ns)
	}
	return ns, parts, true
}

// FuzzParseAddress checks ParseAddress against refAddress, which reads
// the URL with net/url, and checks that the canonical form of an address
// parses back to the same address.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "https://Example.COM:8443/", "http://[2001:db8::1]:81", "http://[::ffff:10.0.0.1]",
		"http://10.0.0.1:8080", "http://bücher.example", "ftp://x", "http://a.com/x", "http://a@b", "http://@b",
		"http://a.com:", "http://[::1]:", "http://[::1]x", "http://a.com:0", "http://a.com:080", "http://a.com:65536", "http://a.com:+80", "http://a.com.",
		"http://a%41.com", "http://[fe80::1%25eth0]", "http://[1.2.3.4]", "http://*.a.com", "http://a.com?", "http://a.com#",
		"http://a.com/?", "http:a.com", "http:///a.com", "http://a.com:80:80", "http://a.com\\x", "HTTP://A.COM/",
		"http://\u00a0a.com", "http://0\xc30", "http:", "http:/", "http://", "http://xn--bcher-kva.example", "http://1.2.3", "http://123",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scheme, hostport, err := ParseAddress(s)
		wantScheme, wantHostport, ok := refAddress(s)
		if (err == nil) != ok || scheme != wantScheme || hostport != wantHostport {
			t.Fatalf("ParseAddress(%q) = %q, %q, %v; the reference: %q, %q, %v", s, scheme, hostport, err, wantScheme, wantHostport, ok)
		}
		if !ok {
			return
		}
		a, reason := parseAddr(s)
		if reason != "" {
			t.Fatalf("ParseAddress accepts %q, parseAddr does not: %s", s, reason)
		}
		again := string(a.AppendURL(nil))
		if again != scheme+"://"+hostport {
			t.Fatalf("canonical form of %q is %q, want %q", s, again, scheme+"://"+hostport)
		}
		scheme2, hostport2, err := ParseAddress(again)
		if err != nil || scheme2 != scheme || hostport2 != hostport {
			t.Fatalf("%q -> %q: %q %q %v; want %q %q", s, again, scheme2, hostport2, err, scheme, hostport)
		}
	})
}

// refAddress reads a destination address as ParseAddress documents it:
// http:// or https:// in any case, a host and an optional port (1-65535,
// decimal, no leading zero; 80 or 443 by default), no user info, no path
// but "/", no query, no fragment. The host is an IPv6 literal in brackets
// (IPv4-mapped ones stand for IPv4) or a host name as gate reads one, in
// its canonical form, which must be stable; not a wildcard, not ending in
// a dot, without white space around it, as written (no percent-escapes).
func refAddress(s string) (scheme, hostport string, ok bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Opaque != "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#") || u.Path != "" && u.Path != "/" || u.RawPath != "" {
		return "", "", false
	}
	_, authority, _ := strings.Cut(s, "://")
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if u.Host == "" || strings.Contains(authority, "%") || strings.HasSuffix(authority, ":") {
		return "", "", false
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' || port[0] == '+' {
		return "", "", false
	}
	if strings.HasPrefix(authority, "[") {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", "", false
		}
		if ip.Is4In6() {
			return u.Scheme, ip.Unmap().String() + ":" + port, true
		}
		return u.Scheme, "[" + ip.String() + "]:" + port, true
	}
	canon, wildcard, err := hostname.Canonical(host)
	if err != nil || wildcard || host == "" || strings.HasSuffix(host, ".") || !utf8.ValidString(host) ||
		strings.TrimFunc(host, unicode.IsSpace) != host {
		return "", "", false
	}
	if again, _, err := hostname.Canonical(canon); err != nil || again != canon {
		return "", "", false
	}
	return u.Scheme, canon + ":" + port, true
}
