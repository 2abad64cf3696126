//go:build unix

package h1client

import (
	"crypto/tls"
	"net"
	"syscall"
)

// closedWhileIdle reports whether the upstream closed (or wrote on) an
// idle connection: a non-blocking peek finds end of file or bytes where
// an idle connection has none. It is one system call, spent only on an
// exchange that could not be sent again after such a failure.
func closedWhileIdle(nc net.Conn) bool {
	if sc, ok := nc.(*slotConn); ok {
		nc = sc.Conn
	}
	if tc, ok := nc.(*tls.Conn); ok {
		// A close_notify or any record on an idle connection is bytes on
		// the socket below.
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var b [1]byte
	dead := false
	err = rc.Read(func(fd uintptr) bool {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		dead = n > 0 || (n == 0 && err == nil) || (err != nil && err != syscall.EAGAIN && err != syscall.EINTR)
		return true
	})
	return dead || err != nil
}
