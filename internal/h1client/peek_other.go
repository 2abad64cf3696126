//go:build !unix

package h1client

import "net"

// closedWhileIdle cannot look without blocking here: it reports false,
// and a failed exchange on a closed idle connection is the caller's to
// retry.
func closedWhileIdle(net.Conn) bool { return false }
