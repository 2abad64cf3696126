package hostport

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseHostPort(t *testing.T) {
	for s, want := range map[string]string{
		"example.com:80": "example.com:80", "Example.COM:8443": "example.com:8443", "[2001:DB8::1]:81": "[2001:db8::1]:81",
		"[::ffff:10.0.0.1]:80": "10.0.0.1:80", "bücher.example:1": "xn--bcher-kva.example:1", "my_service:9000": "my_service:9000",
	} {
		a, reason := ParseHostPort(s)
		assert.Empty(t, reason, s)
		assert.Equal(t, want, a.HostPort(), s)
	}
	for _, s := range []string{
		"", "example.com", ":80", "http://example.com:80", "example.com:80/x", "a@b:80", "example.com:0", "example.com:080",
		"example.com:65536", "2001:db8::1:80", "[2001:db8::1]", "[fe80::1%eth0]:80", "*.a.com:80", "a..b:80", "a.com.:80", " a.com:80",
	} {
		_, reason := ParseHostPort(s)
		assert.NotEmpty(t, reason, "%q", s)
	}
	assert.Empty(t, CheckScheme("http"))
	assert.Empty(t, CheckScheme("https"))
	for _, s := range []string{"", "ftp", "HTTP", "http://"} {
		assert.NotEmpty(t, CheckScheme(s), "%q", s)
	}
}

// FuzzParseHostPort holds the two spellings of an address to one rule: a
// host:port ParseHostPort takes is the address ParseURL reads from it
// behind "http://", and one ParseURL takes with an explicit port is one
// ParseHostPort takes.
func FuzzParseHostPort(f *testing.F) {
	for _, s := range []string{
		"example.com:80", "[2001:db8::1]:81", "[::ffff:10.0.0.1]:1", "a_b:9", "bücher.example:443", "a.com", "a.com:", "a.com:080",
		"[::1]", "[::1]x", "a/b:1", "a?:1", "A.COM:65535", "a.com:80:80", "1.2.3:4",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		hp, reason := ParseHostPort(s)
		u, ureason := ParseURL("http://" + s)
		if reason == "" {
			if ureason != "" {
				t.Fatalf("ParseHostPort takes %q, ParseURL does not: %s", s, ureason)
			}
			if hp.HostPort() != u.HostPort() {
				t.Fatalf("%q: %q as host:port, %q as a URL", s, hp.HostPort(), u.HostPort())
			}
			if again, r := ParseHostPort(hp.HostPort()); r != "" || again != hp {
				t.Fatalf("%q: its canonical form %q reads %+v, %q", s, hp.HostPort(), again, r)
			}
			return
		}
		explicitPort := strings.HasSuffix(u.HostPort(), ":"+u.Port) && (strings.HasSuffix(s, ":"+u.Port))
		if ureason == "" && explicitPort && !strings.ContainsAny(s, "/?#@") {
			t.Fatalf("ParseURL takes http://%s, ParseHostPort does not: %s", s, reason)
		}
	})
}
