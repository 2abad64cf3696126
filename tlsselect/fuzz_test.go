package tlsselect

import (
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/internal/hostname"
)

// FuzzSelect checks Table.Select against a reference written from the
// documented rule: ASCII case ignored, one trailing dot ignored; an exact
// name first; else a "*.parent" name when the server name is one
// non-empty label, a dot, and parent; else the unknown-name fallback (the
// empty name: the no-name fallback). The table holds fixed names and one
// fuzzed configured name.
func FuzzSelect(f *testing.F) {
	for _, s := range [][2]string{
		{"b.test", "B.TEST"}, {"*.wild.test", "x.wild.test"}, {"*.wild.test", ".wild.test"}, {"*.wild.test", "wild.test"},
		{"*.wild.test", "a.b.wild.test"}, {"bücher.test", "xn--bcher-kva.test"}, {"a.test", "a.test."}, {"a.test", "a.test.."},
		{"*.a.test", "a.a.test"}, {"*.test", "x.test"}, {"k.test", "\u212a.test"}, {"x.test", ""}, {"x.test", "X.test"},
	} {
		f.Add(s[0], s[1])
	}
	cert := newPKI(f, "root").issue(f, leafOpts{names: []string{"fuzz.test"}})
	fixed := []string{"a.test", "*.wild.test", "xn--bcher-kva.test", "*.deep.wild.test"}
	f.Fuzz(func(t *testing.T, configured, sni string) {
		names := []string{}
		for _, n := range append(fixed, configured) {
			c, _, err := hostname.Canonical(n)
			if err != nil || hostname.IsIP(c) {
				continue
			}
			dup := false
			for _, m := range names {
				dup = dup || m == c
			}
			if !dup {
				names = append(names, c)
			}
		}
		cfg := Config{Certificates: []Certificate{{ID: "c", Source: source(cert)}}, DefaultCertificate: "c"}
		for _, n := range names {
			cfg.Hosts = append(cfg.Hosts, Host{Names: []string{n}})
		}
		tbl, err := New(cfg)
		if err != nil {
			t.Fatalf("names %q: %v", names, err)
		}
		host, match, reason := refSelect(names, sni)
		got := tbl.Select(sni, TCP)
		if got.Host != host || got.Match != match || got.Reason != reason {
			t.Fatalf("names %q, Select(%q) = host %d %v %v; want host %d %v %v", names, sni, got.Host, got.Match, got.Reason, host, match, reason)
		}
	})
}

// refSelect is the documented matching rule over a list of canonical
// names, by linear search.
func refSelect(names []string, sni string) (int, Match, Reason) {
	if sni == "" {
		return -1, MatchDefault, ReasonNoSNI
	}
	n := strings.TrimSuffix(sni, ".")
	if len(n) > hostname.MaxLen { // longer than any host name: no host has it
		return -1, MatchDefault, ReasonUnknownSNI
	}
	for i, c := range names {
		if asciiEqualFold(n, c) {
			return i, MatchExact, ReasonNone
		}
	}
	label, rest, found := strings.Cut(n, ".")
	if found && label != "" {
		for i, c := range names {
			if parent, ok := strings.CutPrefix(c, "*."); ok && asciiEqualFold(rest, parent) {
				return i, MatchWildcard, ReasonNone
			}
		}
	}
	return -1, MatchDefault, ReasonUnknownSNI
}

// asciiEqualFold reports whether a and b are equal with ASCII letters
// compared without case (and nothing else folded).
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if x != y && !(isLetter(x) && isLetter(y) && x|0x20 == y|0x20) {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// FuzzEscapeFileName checks the cache's file names against a reference
// written from the documented rule (bytes of [A-Za-z0-9._-] kept, but a
// leading dot; every other byte %XX in upper-case hex) and against
// net/url's decoder, which must give the name back: two IDs never share a
// file, and no name is ".", ".." or holds a separator.
func FuzzEscapeFileName(f *testing.F) {
	for _, s := range []string{"shop", "shop.example", ".", "..", ".hidden", "a/b", `a\b`, "50%", "é", "a b", "\x00", "-_."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want strings.Builder
		for i, c := range []byte(s) {
			if strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", c) >= 0 || c == '.' && i > 0 {
				want.WriteByte(c)
			} else {
				fmt.Fprintf(&want, "%%%02X", c)
			}
		}
		got := escapeFileName(s)
		if got != want.String() {
			t.Fatalf("escapeFileName(%q) = %q, want %q", s, got, want.String())
		}
		back, err := url.PathUnescape(got)
		if err != nil || back != s {
			t.Fatalf("url.PathUnescape(%q) = %q, %v; want %q", got, back, err, s)
		}
		if s != "" && (got == "." || got == ".." || strings.HasPrefix(got, ".") || strings.ContainsAny(got, `/\`)) {
			t.Fatalf("escapeFileName(%q) = %q: not one plain file name", s, got)
		}
	})
}
