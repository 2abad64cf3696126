package gate

import (
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

func TestCanonicalHostNameRefusesInvalidUTF8(t *testing.T) {
	for _, n := range []string{"0\xc30", "a.com\xff", "*.\xffb.com"} {
		_, _, err := CanonicalHostName(n)
		if err == nil {
			t.Errorf("CanonicalHostName(%q) accepted a name no client can send", n)
		}
	}
	// Valid Unicode still maps to its punycode form, which is stable.
	got, _, err := CanonicalHostName("Bücher.Example")
	if err != nil || got != "xn--bcher-kva.example" {
		t.Fatalf("got %q, %v", got, err)
	}
	if again, _, err := CanonicalHostName(got); err != nil || again != got {
		t.Fatalf("not stable: %q, %v", again, err)
	}
}

// FuzzCanonicalHostName checks CanonicalHostName against a reference built
// on net/netip and x/net/idna's lookup profile, that its answer is stable,
// and that the host table finds every name it accepts: an exact name by a
// Host header of that name, a wildcard by a name one label under it.
func FuzzCanonicalHostName(f *testing.F) {
	for _, s := range []string{"Example.COM.", "*.Example.com", "Bücher.example", "[::FFFF:192.0.2.1]", "[2001:DB8::1]", "10.0.0.1", " a.test ", "a..test", ".a", "a..",
		"[app.test]", "a\u3002", "fe80::1%eth0", "*.", "*.*.a", "my_service", "xn--zz", "*." + strings.Repeat("a.", 125) + "b", "*." + strings.Repeat("a.", 125) + "bc", strings.Repeat("a.", 126) + "b", strings.Repeat("a.", 126) + "bc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		canon, wild, err := CanonicalHostName(name)
		want, wantWild, ok := refCanonicalHostName(name)
		if (err == nil) != ok || canon != want || wild != wantWild {
			t.Fatalf("CanonicalHostName(%q) = %q, %v, %v; want %q, %v, ok %v", name, canon, wild, err, want, wantWild, ok)
		}
		if err != nil {
			return
		}
		if again, againWild, err := CanonicalHostName(canon); err != nil || again != canon || againWild != wild {
			t.Fatalf("canonical form %q of %q is not stable: %q, %v", canon, name, again, err)
		}
		host := canon
		if wild {
			host = "x" + canon[1:]
		} else if strings.Contains(canon, ":") {
			host = "[" + canon + "]"
		}
		h := &Host{}
		tbl := hostTable{exact: map[string]*Host{}, wildcard: map[string]*Host{}}
		tbl.add(canon, h)
		var buf [maxHostLen]byte
		if got, _, _ := tbl.lookup(buf[:0], host); got != h {
			t.Fatalf("%q (from %q) is not found by the Host header %q", canon, name, host)
		}
	})
}

// refCanonicalHostName is CanonicalHostName by its documentation: white
// space around and one trailing dot ignored; an IP address, bracketed or
// not, without a zone, in canonical form with IPv4-mapped as IPv4;
// otherwise valid UTF-8 that idna's lookup profile takes, of labels of 1
// to 63 bytes (DNS), at most 253 bytes, and for a wildcard ("*." then such
// a name) at most 251 bytes after the "*.".
func refCanonicalHostName(name string) (canon string, wildcard, ok bool) {
	n := strings.TrimSuffix(strings.TrimSpace(name), ".")
	if inner, found := strings.CutPrefix(n, "["); found {
		inner, found = strings.CutSuffix(inner, "]")
		ip, err := netip.ParseAddr(inner)
		if !found || err != nil || ip.Zone() != "" {
			return "", false, false
		}
		return ip.Unmap().String(), false, true
	}
	if ip, err := netip.ParseAddr(n); err == nil {
		if ip.Zone() != "" {
			return "", false, false
		}
		return ip.Unmap().String(), false, true
	}
	rest, wildcard := strings.CutPrefix(n, "*.")
	if !utf8.ValidString(rest) {
		return "", false, false
	}
	a, err := idna.Lookup.ToASCII(rest)
	limit := 253
	if wildcard {
		limit = 251
	}
	if err != nil || a == "" || len(a) > limit {
		return "", false, false
	}
	for _, l := range strings.Split(a, ".") {
		if l == "" || len(l) > 63 {
			return "", false, false
		}
	}
	if wildcard {
		return "*." + a, true, true
	}
	return a, false, true
}
