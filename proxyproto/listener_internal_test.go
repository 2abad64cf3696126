package proxyproto

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
)

func TestTrustedSourceMatching(t *testing.T) {
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewListener(inner, Config{TrustedProxies: []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::ffff:192.168.0.0/112"), // IPv4-mapped: matched as 192.168.0.0/16
		netip.MustParsePrefix("2001:db8::/32"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		addr net.Addr
		want bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 1}, true}, // dual-stack socket
		{&net.TCPAddr{IP: net.ParseIP("192.168.7.7"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::7"), Port: 1, Zone: "eth0"}, true},
		{&net.TCPAddr{IP: net.ParseIP("11.0.0.1"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("2001:db9::1"), Port: 1}, false},
		{&net.TCPAddr{}, false},
		{&net.UnixAddr{Name: "/run/lb.sock", Net: "unix"}, false},
	} {
		if got := l.isTrusted(tc.addr); got != tc.want {
			t.Errorf("isTrusted(%v) = %v, want %v", tc.addr, got, tc.want)
		}
	}
	var untrusted net.Addr = &net.TCPAddr{IP: net.ParseIP("11.0.0.1")}
	if a := testing.AllocsPerRun(100, func() { l.isTrusted(untrusted) }); a != 0 {
		t.Errorf("%v allocations per trust check", a)
	}
}

// TestTrustedPrefixRule: trusted prefixes follow the library's IPv4-mapped
// rule. An IPv6 prefix trusts no IPv4 peer, and an IPv4-mapped prefix
// shorter than /96, which has no one meaning, is refused.
func TestTrustedPrefixRule(t *testing.T) {
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	_, err = NewListener(inner, Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::ffff:0:0/64")}})
	if !errors.Is(err, ipaddr.ErrMappedPrefixTooShort) || !strings.Contains(err.Error(), "Config.TrustedProxies[1]") {
		t.Fatalf("NewListener with ::ffff:0:0/64: %v", err)
	}
	l, err := NewListener(inner, Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("::/0")}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, tc := range []struct {
		ip   string
		want bool
	}{{"2001:db8::1", true}, {"::1", true}, {"10.1.2.3", false}, {"::ffff:10.1.2.3", false}} {
		if got := l.isTrusted(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 1}); got != tc.want {
			t.Errorf("::/0 trusts %s: %v, want %v", tc.ip, got, tc.want)
		}
	}
}
