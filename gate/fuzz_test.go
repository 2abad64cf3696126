package gate

import (
	"net/netip"
	"strings"
	"testing"
)

func FuzzRightmostUntrusted(f *testing.F) {
	for _, s := range []string{"203.0.113.7", "203.0.113.7, 10.0.0.1", "10.0.0.2,10.0.0.1", " 2001:db8::1 ,\t10.0.0.1", "junk, 10.0.0.1", "", ",", "fe80::1%eth0", "::ffff:10.0.0.1"} {
		f.Add(s, "10.0.0.3")
	}
	trusted := newPrefixSet(mustPrefix("10.0.0.0/8"))
	f.Fuzz(func(t *testing.T, a, b string) {
		c, ok := RightmostUntrusted([]string{a, b}, trusted.contains)
		if !ok {
			if c.IsValid() {
				t.Fatal("invalid result reported with an address")
			}
			return
		}
		if !c.IsValid() || c.Is4In6() || c.Zone() != "" {
			t.Fatalf("bad client %v", c)
		}
		// The client is one of the elements.
		found := false
		for _, el := range strings.Split(a+","+b, ",") {
			if x, err := netip.ParseAddr(strings.Trim(el, " \t")); err == nil && x.Unmap() == c {
				found = true
			}
		}
		if !found {
			t.Fatalf("client %v is not in %q, %q", c, a, b)
		}
	})
}

func FuzzCFVisitor(f *testing.F) {
	for _, s := range []string{`{"scheme":"https"}`, `{"scheme":"http"}`, `{"scheme": "https"}`, `{"scheme":"ftp"}`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := parseCFVisitor([]string{s})
		switch {
		case s == `{"scheme":"https"}`:
			if got != "https" {
				t.Fatal(got)
			}
		case s == `{"scheme":"http"}`:
			if got != "http" {
				t.Fatal(got)
			}
		case got != "":
			t.Fatalf("%q accepted as %q", s, got)
		}
	})
}

func FuzzRuleMatch(f *testing.F) {
	f.Add("Mozilla/5.0 BadBot", "badbot", "/wp-admin", "/wp-")
	f.Add("", "x", "/", "")
	f.Add("ÄBC", "äbc", "/a", "/a")
	f.Fuzz(func(t *testing.T, ua, needle, path, prefix string) {
		needle = strings.ToLower(needle)
		if needle == "" {
			return
		}
		want := strings.Contains(asciiLower(ua), asciiLower(needle))
		if got := containsFold(ua, []byte(asciiLower(needle))); got != want {
			t.Fatalf("containsFold(%q, %q) = %v", ua, needle, got)
		}
		rs, err := NewRuleSet(RuleSetConfig{Rules: []Rule{{PathPrefix: prefix, UserAgentContains: needle}}})
		if err != nil {
			t.Fatal(err)
		}
		wantRule := want && strings.HasPrefix(path, prefix)
		if got := rs.match(path, "GET", []string{ua}) == 0; got != wantRule {
			t.Fatalf("rule match = %v, want %v", got, wantRule)
		}
	})
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		b[i] = lower(c)
	}
	return string(b)
}

func FuzzHostKey(f *testing.F) {
	for _, s := range []string{"Example.COM:8080", "example.com.", "[2001:DB8::1]:443", "[::ffff:10.0.0.1]", "10.0.0.1:80", "a..b", "", "[", "*.x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, hostport string) {
		var buf [maxHostLen]byte
		key, ok := hostKey(buf[:0], hostport)
		if !ok {
			return
		}
		for _, c := range key {
			if 'A' <= c && c <= 'Z' {
				t.Fatalf("key %q not lower case", key)
			}
		}
		// A key is a fixed point: looking it up again gives itself.
		var buf2 [maxHostLen]byte
		again, ok := hostKey(buf2[:0], string(key))
		if strings.IndexByte(string(key), ':') >= 0 {
			again, ok = hostKey(buf2[:0], "["+string(key)+"]")
		}
		if !ok || string(again) != string(key) {
			t.Fatalf("key %q of %q is not stable: %q", key, hostport, again)
		}
		// A configured name that canonicalises to the key is found.
		if canon, wild, err := CanonicalHostName(string(key)); err == nil && !wild && canon == string(key) {
			var tbl hostTable
			tbl.exact = map[string]*Host{canon: {}}
			var b3 [maxHostLen]byte
			if h, _, _ := tbl.lookup(b3[:0], hostport); h == nil {
				t.Fatalf("%q not found for name %q", hostport, canon)
			}
		}
	})
}

func FuzzPrefixSet(f *testing.F) {
	f.Add("10.0.0.0/8", "192.0.2.0/24", "10.1.2.3")
	f.Add("2001:db8::/32", "::ffff:198.51.100.0/120", "198.51.100.7")
	f.Fuzz(func(t *testing.T, p1, p2, addr string) {
		a, err := netip.ParseAddr(addr)
		if err != nil || a.Zone() != "" {
			return
		}
		var ps []netip.Prefix
		for _, s := range []string{p1, p2} {
			if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Zone() == "" {
				ps = append(ps, p)
			}
		}
		set := newPrefixSet(ps)
		want := false
		for _, p := range ps {
			if unmapPrefix(p).Contains(a.Unmap()) {
				want = true
			}
		}
		if got := set.contains(a); got != want {
			t.Fatalf("contains(%v) = %v, want %v for %v", a, got, want, ps)
		}
	})
}
