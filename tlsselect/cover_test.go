package tlsselect

import (
	"crypto/x509"
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
