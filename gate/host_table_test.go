package gate

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/internal/hostname"
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

// FuzzCanonicalHostName checks that the gate's two readings of a host
// name agree: the host table finds every name CanonicalHostName (the
// library's one rule, internal/hostname, checked against its reference
// there) accepts, an exact name by a Host header of that name in any case
// and with a trailing dot, a wildcard by a name one label under it; and
// every Host header the table reads as a name of DNS-shaped labels
// (letters, digits, "-" and "_", 1-63 bytes, no hyphen at either end of a
// label or in its third and fourth bytes, no punycode) is a name a config
// may hold, so no name a client can reach the gate by is refused in a
// config.
func FuzzCanonicalHostName(f *testing.F) {
	for _, s := range []string{"Example.COM.", "*.Example.com", "Bücher.example", "[::FFFF:192.0.2.1]", "[2001:DB8::1]", "10.0.0.1", " a.test ", "a..test", ".a", "a..",
		"[app.test]", "a\u3002", "fe80::1%eth0", "*.", "*.*.a", "my_service", "My_Service.test.", "xn--zz", "-a.test", "ab--c.test", "a-.test",
		"*." + strings.Repeat("a.", 125) + "b", "*." + strings.Repeat("a.", 125) + "bc", strings.Repeat("a.", 126) + "b", strings.Repeat("a.", 126) + "bc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		var buf [maxHostLen]byte
		if key, ok := hostKey(buf[:0], name); ok && dnsShaped(string(key)) {
			if canon, wild, err := CanonicalHostName(string(key)); err != nil || canon != string(key) || wild {
				t.Fatalf("the Host header %q reads as %q, which a config cannot name: %q, %v", name, key, canon, err)
			}
		}
		canon, wild, err := CanonicalHostName(name)
		want, wantWild, wantErr := hostname.Canonical(name)
		if canon != want || wild != wantWild || (err == nil) != (wantErr == nil) {
			t.Fatalf("CanonicalHostName(%q) = %q, %v, %v; the library's rule: %q, %v, %v", name, canon, wild, err, want, wantWild, wantErr)
		}
		if err != nil {
			return
		}
		hosts := []string{canon}
		switch {
		case wild:
			hosts = []string{"x" + canon[1:], "X" + strings.ToUpper(canon[1:]) + "."}
		case strings.Contains(canon, ":"):
			hosts = []string{"[" + canon + "]", "[" + strings.ToUpper(canon) + "]:443"}
		default:
			hosts = append(hosts, strings.ToUpper(canon)+".", canon+":8080")
		}
		h := &Host{}
		tbl := hostTable{exact: map[string]*Host{}, wildcard: map[string]*Host{}}
		tbl.add(canon, h)
		for _, host := range hosts {
			if got, _, _ := tbl.lookup(buf[:0], host); got != h {
				t.Fatalf("%q (from %q) is not found by the Host header %q", canon, name, host)
			}
		}
	})
}

// dnsShaped reports whether a lookup key is a name of labels of 1-63
// letters, digits, "-" and "_", none with a hyphen at either end or in
// its third and fourth bytes and none punycode ("xn--", which only a
// valid encoding may be), and no IP literal: the names DNS and IDNA take.
func dnsShaped(key string) bool {
	if _, err := netip.ParseAddr(key); err == nil {
		return false
	}
	for _, l := range strings.Split(key, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' || len(l) >= 4 && l[2:4] == "--" {
			return false
		}
		for _, c := range []byte(l) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
