package proxyproto

import (
	"net/netip"
	"testing"
)

// FuzzParseIPv6 holds parseIPv6 to net/netip: it accepts exactly the
// strings netip.ParseAddr reads as an IPv6 address without a zone, and
// gives the same address.
func FuzzParseIPv6(f *testing.F) {
	for _, s := range []string{
		"::", "::1", "1::", "2001:db8:85a3::8a2e:370:7334", "2001:db8::", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8",
		"1:2:3:4:5:6:1.2.3.4", "1::2:3:4:5:6:7", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "fe80::1%eth0", "1:2:3:4:5:6:7:8:9",
		"1:::2", "1::2::3", ":1::", "1:", "12345::", "::1.2.3", "::1.2.3.04", "abcd:ef01:2345:6789:ABCD:EF01:2345:6789",
		"1.2.3.4", "1:2:3:4:5:6:7:1.2.3.4", "::0:0:0:0:0:0:1", "0:0:0:0:0:0:0:0",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseIPv6([]byte(s))
		want, err := netip.ParseAddr(s)
		wantOK := err == nil && want.Is6() && want.Zone() == ""
		if ok != wantOK || ok && got != want {
			t.Fatalf("parseIPv6(%q) = %v, %v; netip.ParseAddr: %v, %v", s, got, ok, want, err)
		}
	})
}
