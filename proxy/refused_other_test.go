//go:build !unix

package proxy_test

import "testing"

// refusedAddr needs a bound socket that never listens; see the unix file.
func refusedAddr(t testing.TB) string {
	t.Helper()
	t.Skip("no bound, non-listening socket on this platform")
	return ""
}
