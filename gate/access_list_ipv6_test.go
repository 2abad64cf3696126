package gate

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// IPv6 entries of an access list hold every address of their prefix, in
// its middle and at its end, not only near its start; the gate decides
// on them for a client of that address. Allow is a /32 with holes of
// every length between /48 and /127 denied, each asked for in its middle,
// at its last address and just outside both ends.
func TestAccessListIPv6InsidePrefixes(t *testing.T) {
	al, err := NewAccessList(AccessListConfig{ID: "v6",
		Allow: mustPrefix("2001:db8::/32"),
		Deny: mustPrefix("2001:db8:1234::/48", "2001:db8:aaaa:bbbb::/64", "2001:db8:5:6:7::/80",
			"2001:db8:1:2:3:4::/96", "2001:db8:9:9:9:9:9:0/112", "2001:db8:f:f:f:f:f:f0/127"),
	})
	require.NoError(t, err)
	g, err := New(Config{Hosts: []Host{{Names: []string{"app.test"}, Policies: []PolicyUse{{Policy: al}}, Routes: []Route{{Prefix: "/", Target: &forwarded{}}}}}})
	require.NoError(t, err)
	for addr, want := range map[string]int{
		// The allowed /32, across its range.
		"2001:db8::":                             200,
		"2001:db8:5a5a:1234:abcd:ef01:2345:6789": 200,
		"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff": 200,
		"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff": 403,
		"2001:db9::":                             403,
		"2001:db9:5a5a:1234:abcd:ef01:2345:6789": 403,
		// A /48 denied inside it.
		"2001:db8:1234:8000:dead:beef:cafe:1":    403,
		"2001:db8:1234:ffff:ffff:ffff:ffff:ffff": 403,
		"2001:db8:1233:ffff:ffff:ffff:ffff:ffff": 200,
		"2001:db8:1235::":                        200,
		// A /64: the whole interface identifier.
		"2001:db8:aaaa:bbbb:1234:5678:9abc:def0": 403,
		"2001:db8:aaaa:bbbb:ffff:ffff:ffff:ffff": 403,
		"2001:db8:aaaa:bbbc::":                   200,
		"2001:db8:aaaa:bbba:ffff:ffff:ffff:ffff": 200,
		// A /80, a /96, a /112, a /127: the low 64 bits in part.
		"2001:db8:5:6:7:8000:1:2":       403,
		"2001:db8:5:6:7:ffff:ffff:ffff": 403,
		"2001:db8:5:6:8::":              200,
		"2001:db8:1:2:3:4:abcd:1234":    403,
		"2001:db8:1:2:3:4:ffff:ffff":    403,
		"2001:db8:1:2:3:5::":            200,
		"2001:db8:1:2:3:3:ffff:ffff":    200,
		"2001:db8:9:9:9:9:9:8000":       403,
		"2001:db8:9:9:9:9:9:ffff":       403,
		"2001:db8:9:9:9:9:a:0":          200,
		"2001:db8:9:9:9:9:8:ffff":       200,
		"2001:db8:f:f:f:f:f:f1":         403,
		"2001:db8:f:f:f:f:f:f2":         200,
		"2001:db8:f:f:f:f:f:ef":         200,
	} {
		w := newNopWriter()
		g.ServeHTTP(w, readRequest(t, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n", net.JoinHostPort(addr, "50000")))
		assert.Equal(t, want, w.status, addr)
	}
}
