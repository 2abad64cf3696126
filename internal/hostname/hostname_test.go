package hostname

import (
	"net/netip"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		wild, ok bool
	}{
		{"Example.COM.", "example.com", false, true},
		{"*.Example.com", "*.example.com", true, true},
		{"Bücher.example", "xn--bcher-kva.example", false, true},
		{"[::FFFF:192.0.2.1]", "192.0.2.1", false, true},
		{" a.test ", "a.test", false, true},
		{"a..test", "", false, false},
		{"*.", "", false, false},
		{"*.*.a", "", false, false},
		{"fe80::1%eth0", "", false, false},
		{"My_Service", "my_service", false, true},
		{"*.a_b.test", "*.a_b.test", true, true},
		{"bü_cher.test", "", false, false},
		{"a!b.test", "", false, false},
		{strings.Repeat("a.", 126) + "b", strings.Repeat("a.", 126) + "b", false, true},
		{strings.Repeat("a.", 126) + "bc", "", false, false},
	} {
		got, wild, err := Canonical(tc.in)
		if got != tc.want || wild != tc.wild || (err == nil) != tc.ok {
			t.Errorf("Canonical(%q) = %q, %v, %v; want %q, %v, ok %v", tc.in, got, wild, err, tc.want, tc.wild, tc.ok)
		}
	}
}

// FuzzCanonical checks Canonical against a reference written from its
// documentation on net/netip and x/net/idna's lookup profile, and that its
// answer is stable.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{"Example.COM.", "*.Example.com", "Bücher.example", "[::FFFF:192.0.2.1]", "[2001:DB8::1]", "10.0.0.1", " a.test ", "a..test", ".a", "a..",
		"[app.test]", "a\u3002", "fe80::1%eth0", "*.", "*.*.a", "my_service", "xn--zz", "*." + strings.Repeat("a.", 125) + "b", "*." + strings.Repeat("a.", 125) + "bc", strings.Repeat("a.", 126) + "b", strings.Repeat("a.", 126) + "bc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		canon, wild, err := Canonical(name)
		want, wantWild, ok := refCanonical(name)
		if (err == nil) != ok || canon != want || wild != wantWild {
			t.Fatalf("Canonical(%q) = %q, %v, %v; want %q, %v, ok %v", name, canon, wild, err, want, wantWild, ok)
		}
		if err != nil {
			return
		}
		if again, againWild, err := Canonical(canon); err != nil || again != canon || againWild != wild {
			t.Fatalf("canonical form %q of %q is not stable: %q, %v", canon, name, again, err)
		}
	})
}

// refCanonical is Canonical by its documentation: white space around and
// one trailing dot ignored; an IP address, bracketed or not, without a
// zone, in canonical form with IPv4-mapped as IPv4; otherwise valid UTF-8
// that idna's lookup profile takes, of labels of 1 to 63 bytes (DNS), at
// most 253 bytes, and for a wildcard ("*." then such a name) at most 251
// bytes after the "*."; and "_" in ASCII labels that are not punycode,
// as if each were a letter.
func refCanonical(name string) (canon string, wildcard, ok bool) {
	if !strings.Contains(name, "_") {
		return refLookup(name)
	}
	// An "_" is taken where a letter would be, in an ASCII label: read
	// the name with a letter in its place, then put it back.
	canon, wildcard, ok = refLookup(strings.ReplaceAll(name, "_", "u"))
	if !ok {
		return "", false, false
	}
	in := strings.Split(strings.TrimPrefix(strings.TrimSuffix(strings.TrimSpace(name), "."), "*."), ".")
	out := strings.Split(strings.TrimPrefix(canon, "*."), ".")
	if len(in) != len(out) {
		return "", false, false // IDNA mapped a dot into the name
	}
	for i, l := range in {
		if !strings.Contains(l, "_") {
			continue
		}
		low := strings.ToLower(l)
		for _, c := range []byte(l) {
			if c >= utf8.RuneSelf {
				return "", false, false // not an ASCII label
			}
		}
		if strings.HasPrefix(low, "xn--") || out[i] != strings.ReplaceAll(low, "_", "u") {
			return "", false, false
		}
		out[i] = low
	}
	canon = strings.Join(out, ".")
	if wildcard {
		canon = "*." + canon
	}
	return canon, wildcard, true
}

// refLookup is refCanonical for a name without "_".
func refLookup(name string) (canon string, wildcard, ok bool) {
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

// TestCanonicalAllocs: a name of plain labels that is canonical already
// costs nothing, so a publish that reads a document's names again
// allocates nothing for them (punycode labels are checked by IDNA).
func TestCanonicalAllocs(t *testing.T) {
	for _, n := range []string{"example.com", "*.example.com", "my_service.test", "192.0.2.1", "a-b.c1.test"} {
		if got := testing.AllocsPerRun(100, func() { Canonical(n) }); got != 0 {
			t.Errorf("Canonical(%q): %v allocations", n, got)
		}
	}
}

// TestIsIPAsParseAddr: the names IsIP rules out without a parse are ones
// netip.ParseAddr refuses.
func TestIsIPAsParseAddr(t *testing.T) {
	for _, n := range []string{"", "1.2.3.4", "1.2.3.x", "::1", "fe80::1%eth0", "::ffff:1.2.3.4", "a.test", "app.test1",
		"10.0.0.1a", "1.2.3.4.", "[::1]", "x:y", "2001:db8::", "0", "01.2.3.4", "*.test"} {
		_, err := netip.ParseAddr(n)
		if got, want := IsIP(n), err == nil; got != want {
			t.Errorf("IsIP(%q) = %v, ParseAddr says %v", n, got, want)
		}
	}
}
