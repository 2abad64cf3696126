package proxy_test

import (
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/proxy"
)

// refLabels is a host name by RFC 1123 with underscores allowed (as in
// service names): labels of 1-63 letters, digits, hyphens and underscores,
// no hyphen at either end, one trailing dot allowed.
var refLabels = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$`)

// refValidHostHeader is ValidHostHeader by its documentation, with net/url
// as the reader of host[:port]: an IPv6 literal in brackets (no zone) or an
// IPv4 address or a host name of at most 253 bytes besides one trailing
// dot, then optionally a port of 1-5 digits, 1-65535.
func refValidHostHeader(h string) bool {
	u, err := url.Parse("http://" + h)
	if err != nil || u.Host != h || u.User != nil || strings.HasSuffix(h, ":") {
		return false
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || len(p) > 5 || n < 1 || n > 65535 {
			return false
		}
	}
	host := u.Hostname()
	if strings.HasPrefix(h, "[") {
		ip, err := netip.ParseAddr(host)
		return err == nil && ip.Is6() && ip.Zone() == ""
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Is4()
	}
	return len(strings.TrimSuffix(host, ".")) <= 253 && refLabels.MatchString(host)
}

// FuzzValidHostHeader checks ValidHostHeader, the check of a route's
// custom Host, against refValidHostHeader.
func FuzzValidHostHeader(f *testing.F) {
	for _, s := range []string{"internal.example:8080", "backend.test", "my_service", "10.0.0.1:80", "[2001:db8::1]:443", "[::ffff:10.0.0.1]", "Upper.Case.",
		"bad host", "", "[]", "[:::]", "[1.2.3.4]", "[fe80::1%25eth0]", "::1", "a..b", ".", "-a", "a-", "a:0", "a:65536", "a:00080", "a:", "[::1]x", "a@b",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a.", 126) + "b", strings.Repeat("a.", 126) + "bc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if got, want := proxy.ValidHostHeader(h), refValidHostHeader(h); got != want {
			t.Fatalf("ValidHostHeader(%q) = %v, want %v", h, got, want)
		}
	})
}
