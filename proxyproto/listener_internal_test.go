package proxyproto

import (
	"net"
	"net/netip"
	"testing"
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
