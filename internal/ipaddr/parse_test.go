package ipaddr

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
)

// FuzzParsePrefix checks ParsePrefix, the one decoder of trusted proxies,
// probe sources, access and deny lists (the document's and the daemon's
// flags), against refPrefix, and checks that the prefix written as netip
// writes it parses back to the same prefix.
func FuzzParsePrefix(f *testing.F) {
	for _, s := range []string{
		"10.0.0.0/8", "192.0.2.7", "192.0.2.7/32", "::ffff:192.0.2.7", "::ffff:192.0.2.0/120", "::ffff:10.0.0.0/104",
		"::ffff:0.0.0.0/96", "::ffff:0.0.0.0/95", "2001:DB8::/32", "::/0", "::1/0", "0.0.0.0/0", "10.0.0.1/8", "10.0.0.0/33",
		"10.0.0.0/08", "10.0.0.0/+8", "10.0.0.0/", "/8", "fe80::1%eth0", "fe80::1%eth0/64", "::1.2.3.4/128",
		"010.0.0.1", "1.2.3", "example.com", "", " 10.0.0.0/8",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePrefix(s)
		ip, bits, ok := refPrefix(s)
		if ok != (err == nil) {
			t.Fatalf("ParsePrefix(%q) = %v, %v; the reference accepts: %v", s, p, err, ok)
		}
		if !ok {
			if !errors.Is(err, ErrNotPrefix) && !errors.Is(err, ErrHostBits) && !errors.Is(err, ErrMappedPrefixTooShort) {
				t.Fatalf("ParsePrefix(%q): %v, not one of its errors", s, err)
			}
			return
		}
		if !bytes.Equal(p.Addr().AsSlice(), ip) || p.Bits() != bits {
			t.Fatalf("ParsePrefix(%q) = %v; the reference: %v/%d", s, p, ip, bits)
		}
		for _, text := range []string{p.String(), p.Addr().String()} {
			if text == p.Addr().String() && bits != 8*len(ip) {
				continue
			}
			if again, err := ParsePrefix(text); err != nil || again != p {
				t.Fatalf("%q -> %v -> %q -> %v, %v", s, p, text, again, err)
			}
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
