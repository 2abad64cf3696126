//go:build unix

package proxy_test

import (
	"net/netip"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// refusedAddr returns a loopback address whose connects are refused: a TCP
// socket is bound to it and never listens. The socket holds the port until
// the test ends, so no other listener can take it (a closed listener's port
// can be handed out again at once).
func refusedAddr(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	port := sa.(*syscall.SockaddrInet4).Port
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(port)).String()
}
