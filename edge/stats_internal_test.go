package edge

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseHandshakeFailure(t *testing.T) {
	for _, tc := range []struct {
		line string
		want HandshakeFailure
	}{
		{"127.0.0.1:5000: tls: no cipher suite supported by both client and server\n",
			HandshakeFailure{Remote: netip.MustParseAddrPort("127.0.0.1:5000"), Reason: "tls: no cipher suite supported by both client and server"}},
		{"[2001:db8::1%eth0]:443: read tcp [::1]:443->[2001:db8::1]:5: i/o timeout\n",
			HandshakeFailure{Remote: netip.MustParseAddrPort("[2001:db8::1%eth0]:443"), Reason: "read tcp [::1]:443->[2001:db8::1]:5: i/o timeout"}},
		{"@: EOF\n", HandshakeFailure{Reason: "EOF"}},
		{"no separator", HandshakeFailure{Reason: "no separator"}},
	} {
		assert.Equal(t, tc.want, parseHandshakeFailure([]byte(tc.line)), tc.line)
	}
}

// FuzzParseHandshakeFailure reads any line without panicking, and gives
// back the address and reason of every line net/http would write.
func FuzzParseHandshakeFailure(f *testing.F) {
	f.Add("127.0.0.1:5000", "tls: first record does not look like a TLS handshake")
	f.Add("[::1]:443", "EOF")
	f.Add("", "")
	f.Add("@", "a: b: c")
	f.Fuzz(func(t *testing.T, addr, reason string) {
		line := []byte(addr + ": " + reason + "\n")
		got := parseHandshakeFailure(line)
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || strings.Contains(addr, ": ") || strings.Contains(reason, "\n") {
			return // not a line net/http writes; not panicking is enough
		}
		if got.Remote != ap || got.Reason != reason {
			t.Fatalf("%q: got %+v, want %v and %q", line, got, ap, reason)
		}
	})
}
