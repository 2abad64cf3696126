//go:build !linux

package proxy_test

import "testing"

// blackholeAddr needs Linux's dropping of SYNs past a full queue; see the
// linux file.
func blackholeAddr(t testing.TB) string {
	t.Helper()
	t.Skip("no listener that drops connects on this platform")
	return ""
}
