package snapshot

import (
	"bytes"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

// The fuzz targets of this file check the decoders of the document's
// values (prefixes, pins, durations) against references written from the
// documentation, not from the code: they share no helper with it.

// FuzzParseAddrPrefix checks parseAddrPrefix, the one decoder of trusted
// proxies, probe sources and access lists, against refPrefix, and checks
// that the canonical form parses back to the same prefix.
func FuzzParseAddrPrefix(f *testing.F) {
	for _, s := range []string{
		"10.0.0.0/8", "192.0.2.7", "192.0.2.7/32", "::ffff:192.0.2.7", "::ffff:192.0.2.0/120", "::ffff:10.0.0.0/104",
		"::ffff:0.0.0.0/96", "::ffff:0.0.0.0/95", "2001:DB8::/32", "::/0", "::1/0", "0.0.0.0/0", "10.0.0.1/8", "10.0.0.0/33",
		"10.0.0.0/08", "10.0.0.0/+8", "10.0.0.0/", "/8", "fe80::1%eth0", "fe80::1%eth0/64", "::1.2.3.4/128",
		"010.0.0.1", "1.2.3", "example.com", "", " 10.0.0.0/8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, reason := parseAddrPrefix(s)
		ip, bits, ok := refPrefix(s)
		if ok != (reason == "") {
			t.Fatalf("parseAddrPrefix(%q) = %v, %q; the reference accepts: %v", s, p, reason, ok)
		}
		if !ok {
			return
		}
		if !bytes.Equal(p.Addr().AsSlice(), ip) || p.Bits() != bits {
			t.Fatalf("parseAddrPrefix(%q) = %v; the reference: %v/%d", s, p, ip, bits)
		}
		canon := string(appendPrefix(nil, p))
		if again, reason := parseAddrPrefix(canon); reason != "" || again != p {
			t.Fatalf("%q -> %q -> %v, %q", s, canon, again, reason)
		}
		if want := p.String(); bits == 8*len(ip) {
			if want = p.Addr().String(); canon != want {
				t.Fatalf("canonical form of %q is %q, want the address alone, %q", s, canon, want)
			}
		} else if canon != want {
			t.Fatalf("canonical form of %q is %q, want %q", s, canon, want)
		}
	})
}

// refPrefix reads s as the document describes a prefix: an IP address,
// alone or with "/bits" (decimal, no sign, no leading zero); an
// IPv4-mapped IPv6 address stands for its IPv4 address, its length minus
// 96; no zone; no bit set after the length. It returns the address in 4 or
// 16 bytes and the length. The address literal is net.ParseIP's; the rules
// on top of it are written here.
func refPrefix(s string) (ip net.IP, bits int, ok bool) {
	text, bitsText, withBits := strings.Cut(s, "/")
	ip = net.ParseIP(text) // refuses zones
	if ip == nil {
		return nil, 0, false
	}
	written := 32
	if strings.Contains(text, ":") {
		written = 128
	}
	bits = written
	if withBits {
		if bitsText == "" || len(bitsText) > 3 || bitsText[0] == '0' && bitsText != "0" {
			return nil, 0, false
		}
		bits = 0
		for _, c := range []byte(bitsText) {
			if c < '0' || c > '9' {
				return nil, 0, false
			}
			bits = bits*10 + int(c-'0')
		}
		if bits > written {
			return nil, 0, false
		}
	}
	if v4 := ip.To4(); v4 != nil {
		if written == 128 {
			if bits < 96 {
				return nil, 0, false
			}
			bits -= 96
		}
		ip = v4
	}
	if !ip.Mask(net.CIDRMask(bits, 8*len(ip))).Equal(ip) {
		return nil, 0, false
	}
	return ip, bits, true
}

// FuzzDecodeSHA256Pin checks decodeSHA256Pin, the one decoder of TLS pins,
// against refPin.
func FuzzDecodeSHA256Pin(f *testing.F) {
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
		got, ok := decodeSHA256Pin(s)
		want, wantOK := refPin(s)
		if ok != wantOK || ok && got != want {
			t.Fatalf("decodeSHA256Pin(%q) = %x, %v; the reference: %x, %v", s, got, ok, want, wantOK)
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
		if probs := Validate(doc); (len(probs) == 0) != accepted {
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
