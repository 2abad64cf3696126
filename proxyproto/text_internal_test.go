package proxyproto

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

// addrSpellings are IPv4 and IPv6 texts, valid and not, for the tables
// and as fuzz seeds.
var addrSpellings = []string{
	// IPv6.
	"::", "::1", "1::", "2001:db8:85a3::8a2e:370:7334", "2001:db8::", "::ffff:1.2.3.4", "1:2:3:4:5:6:7:8",
	"1:2:3:4:5:6:1.2.3.4", "1::2:3:4:5:6:7", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "fe80::1%eth0", "1:2:3:4:5:6:7:8:9",
	"1:::2", "1::2::3", ":1::", "1:", "12345::", "::1.2.3", "::1.2.3.04", "abcd:ef01:2345:6789:ABCD:EF01:2345:6789",
	"1:2:3:4:5:6:7:1.2.3.4", "::0:0:0:0:0:0:1", "0:0:0:0:0:0:0:0", "0000:0000:0000:0000:0000:0000:0000:0000",
	"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255", ":::", "::::", ":", "", "1", "1:2", "1:2:3:4:5:6:7", "1::2:",
	"::1:", ":1", "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8", "1:2:3:4::5:6:7:8", "[::1]", "::g", "g::", "::1 ",
	"00000::", "::00000", "1:02:003:0004::", "::ffff:01.2.3.4", "::ffff:1.2.3.4.5", "::ffff:1.2.3.", "::1.2.3.4:5",
	"1.2.3.4::", "::256.0.0.1", "::1.2.3.4%x", "::%eth0", "2001:DB8::1", "2001:db8::1\x00", "::\x80", "1:2:3:4:5:6::1.2.3.4",
	"1:2:3:4:5:6:7::1.2.3.4", "::ffff:1.2.3.4:", "::ffff:0x1.2.3.4", "1::2::", "::1::", "a:b:c:d:e:f:a:b", "A:B:C:D:E:F:A:B",
	"fffff::", "::ffff1", "1:2:3:4:5:6:7:8 ", " ::",
	// IPv4.
	"0.0.0.0", "1.2.3.4", "192.168.0.1", "255.255.255.255", "256.1.1.1", "1.2.3.256", "01.2.3.4", "1.02.3.4",
	"1.2.3.04", "1.2.3.00", "000.1.1.1", "1.2.3", "1.2.3.4.5", "1..2.3", ".1.2.3", "1.2.3.", "1.2.3.4 ", "1.2.3.4x",
	"0x1.2.3.4", "1.2.3.-4", "+1.2.3.4", "1234.1.1.1", "1.2.3.1234", "10.0.0.1", "100.200.250.199", "249.250.251.255",
	"1.2.3.4\x00", "1.2.3.4%eth0", "१.2.3.4",
}

func netipV6(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	return a, err == nil && a.Is6() && a.Zone() == ""
}

func netipV4(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	return a, err == nil && a.Is4()
}

// checkAddrParsers holds parseIPv4 and parseIPv6 to net/netip for s: each
// accepts exactly the strings netip.ParseAddr reads as an address of its
// family (IPv6 without a zone) and gives the same address. The scanners
// give the same answer for s followed by a space and more bytes, and
// report its length.
func checkAddrParsers(t *testing.T, s string) {
	t.Helper()
	want6, ok6 := netipV6(s)
	if got, ok := parseIPv6([]byte(s)); ok != ok6 || ok && got != want6 {
		t.Errorf("parseIPv6(%q) = %v, %v; netip: %v, %v", s, got, ok, want6, ok6)
	}
	want4, ok4 := netipV4(s)
	if got, ok := parseIPv4([]byte(s)); ok != ok4 || ok && got != want4 {
		t.Errorf("parseIPv4(%q) = %v, %v; netip: %v, %v", s, got, ok, want4, ok4)
	}
	if strings.IndexByte(s, ' ') >= 0 {
		// The scanners stop at a space.
		return
	}
	for _, tail := range []string{" ", " 1.2.3.4 56324 443\r\n", " ::1 1 2\r\nGET / HTTP/1.1\r\n"} {
		in := []byte(s + tail)
		if got, n, ok := scanIPv6(in); ok != ok6 || ok && (got != want6 || n != len(s)) {
			t.Errorf("scanIPv6(%q) = %v, %d, %v; netip: %v, %v", in, got, n, ok, want6, ok6)
		}
		ip, n, ok := scanIPv4(in)
		if ok = ok && in[n] == ' '; ok != ok4 || ok && (netip.AddrFrom4(ip) != want4 || n != len(s)) {
			t.Errorf("scanIPv4(%q) = %v, %d, %v; netip: %v, %v", in, ip, n, ok, want4, ok4)
		}
	}
}

func TestAddrParsers(t *testing.T) {
	for _, s := range addrSpellings {
		checkAddrParsers(t, s)
	}
	// Every group length and "::" position of an address, and the
	// addresses netip writes.
	for _, s := range []string{"1:22:333:4444:a:bb:ccc:dddd", "::ffff:10.1.2.3"} {
		a := netip.MustParseAddr(s)
		checkAddrParsers(t, a.String())
		checkAddrParsers(t, a.StringExpanded())
		for i := range 16 {
			b := a.As16()
			for j := i; j < 16; j++ {
				b[j] = 0
				z := netip.AddrFrom16(b)
				checkAddrParsers(t, z.String())
				checkAddrParsers(t, z.StringExpanded())
			}
		}
	}
}

// FuzzAddrParsers is checkAddrParsers on arbitrary strings: the address
// parsers are differential with net/netip.
func FuzzAddrParsers(f *testing.F) {
	for _, s := range addrSpellings {
		f.Add(s)
	}
	f.Fuzz(checkAddrParsers)
}

func TestScanPort(t *testing.T) {
	for _, s := range []string{
		"0", "1", "9", "10", "80", "443", "1000", "56324", "65535", "65536", "99999", "100000", "00", "01", "0443",
		"", " ", "-1", "+1", "1a", "4294967297", "12345678", "6553", "655350",
	} {
		for _, tail := range []string{"", " ", "\r\n", " 443\r\nGET"} {
			// The port is the digits at the start.
			in := s + tail
			d := len(in) - len(strings.TrimLeft(in, "0123456789"))
			v, n := scanPort([]byte(in))
			want, err := strconv.ParseUint(in[:d], 10, 16)
			ok := err == nil && d <= 5 && (d == 1 || in[0] != '0')
			if got := n > 0; got != ok || ok && (uint64(v) != want || n != d) {
				t.Errorf("scanPort(%q) = %d, %d; want %d, valid %v", in, v, n, want, ok)
			}
		}
	}
}

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
