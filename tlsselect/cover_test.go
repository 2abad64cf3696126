package tlsselect

import (
	"crypto/x509"
	"fmt"
	"testing"
)

// TestCoversAsVerifyHostname: the comparison that rules names out before
// VerifyHostname never rules out one VerifyHostname accepts, nor keeps
// one it refuses (names that are not wildcards).
func TestCoversAsVerifyHostname(t *testing.T) {
	dns := [][]string{
		{"app.test", "*.app.test"}, {"APP.Test."}, {"*.Test"}, {"*"}, {"localhost"}, {}, {"a.b.c", "*.b.c", "*.c"},
	}
	names := []string{"app.test", "x.app.test", "y.x.app.test", "test", "app.test.", "A.APP.TEST", "localhost", "foo",
		"a.b.c", "z.b.c", "b.c", "q.c", "c", "127.0.0.1", "[::1]", "::1", ""}
	for _, d := range dns {
		leaf := &x509.Certificate{DNSNames: d}
		for _, n := range names {
			if got, want := covers(leaf, n), leaf.VerifyHostname(n) == nil; got != want {
				t.Errorf("covers(%q, %q) = %v, VerifyHostname says %v", d, n, got, want)
			}
		}
	}
}

// TestNotCoveredAsSprintf: the coverage warning is the one fmt would make,
// names that need escapes included.
func TestNotCoveredAsSprintf(t *testing.T) {
	for _, c := range []struct{ id, name string }{
		{"main", "app.test"}, {"", "*.app.test"}, {`a"b`, `x\y`}, {"é", "\x00.test"}, {"main", "xn--bcher-kva.test"},
	} {
		w := notCovered(quote(c.id), 12, 3, c.name)
		want := ValidationError{Code: CodeHostNameNotCovered, Path: "hosts[12].names[3]",
			Msg: fmt.Sprintf("certificate %q does not cover %q", c.id, c.name)}
		if w != want {
			t.Errorf("notCovered(%q, %q) = %+v, want %+v", c.id, c.name, w, want)
		}
	}
}
