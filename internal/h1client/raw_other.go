//go:build !unix

package h1client

import "net"

// rawConn has no raw path here: every request is written and its answer
// read through net.Conn.
type rawConn struct{}

func newRawConn(net.Conn) *rawConn { return nil }

func (c *conn) writeRead(head []byte) (rest []byte, werr, rerr error) {
	panic("h1client: no raw path")
}
