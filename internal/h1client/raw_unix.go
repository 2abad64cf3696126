//go:build unix

package h1client

import (
	"io"
	"net"
	"os"
	"syscall"
)

// rawConn is what a plain TCP connection is written and read through
// when a request goes out in one write: the head is written from inside
// a read's wait, so the read that follows parks in the poller at once
// instead of first finding nothing (one read system call per exchange
// fewer, and nothing lost: the poller's readiness is reset before the
// write, so an answer that arrives after it wakes the read).
type rawConn struct {
	rc    syscall.RawConn
	out   []byte // the bytes to write; nil once written or given up
	in    []byte // where the answer's first bytes go
	n     int    // bytes read into in
	werr  error  // the write's failure
	rerr  error  // the read's failure
	idle  bool   // the connection was idle: look for stale bytes before writing
	stale bool   // it held bytes or end of file before the write
	fn    func(fd uintptr) bool
}

// newRawConn returns the raw path of nc, or nil for a connection that
// is not plain TCP (TLS writes records, not the head's bytes).
func newRawConn(nc net.Conn) *rawConn {
	if sc, ok := nc.(*slotConn); ok {
		nc = sc.Conn
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil
	}
	r := &rawConn{rc: rc}
	r.fn = r.step
	return r
}

// step is the read's callback: the first call writes, the next ones
// read once the poller says there is something to read. On a connection
// that was idle the first call reads before it writes: bytes or end of
// file there are not an answer to this request (an upstream that sent
// more than its last response, a 408 before closing, a close or a
// half-close), so the connection is stale and nothing is written. The
// readiness the poller saw while the connection was idle is reset before
// the callback runs, so only a read can tell.
func (r *rawConn) step(fd uintptr) bool {
	for r.idle {
		_, err := syscall.Read(int(fd), r.in)
		if err == syscall.EINTR {
			continue
		}
		r.idle = false
		if err != syscall.EAGAIN {
			r.stale, r.out = true, nil
			return true
		}
	}
	for len(r.out) > 0 {
		n, err := syscall.Write(int(fd), r.out)
		if err == syscall.EINTR {
			continue
		}
		if n > 0 {
			r.out = r.out[n:]
		}
		if err != nil || len(r.out) > 0 {
			// A full send buffer or a failure: the caller writes the
			// rest, or reports the failure, the usual way.
			if err != nil && err != syscall.EAGAIN {
				r.werr = os.NewSyscallError("write", err)
			}
			return true
		}
		r.out = nil
		return false // wait for the answer
	}
	for {
		n, err := syscall.Read(int(fd), r.in)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			r.rerr = os.NewSyscallError("read", err)
		case n == 0:
			r.rerr = io.EOF
		default:
			r.n = n
		}
		return true
	}
}

// writeRead writes head on c and reads the first bytes of the answer
// into the read buffer. It returns the unwritten rest of head (written
// the usual way by the caller, which then reads the usual way) and the
// failures: werr of the write, rerr of the read, each as net.Conn's
// methods would report it. A connection that carried an exchange before
// and turns out to hold bytes or end of file fails with errStale, with
// nothing written.
func (c *conn) writeRead(head []byte) (rest []byte, werr, rerr error) {
	r := c.raw
	if c.r > 0 {
		c.w = copy(c.rbuf, c.rbuf[c.r:c.w])
		c.r = 0
	}
	r.out, r.in, r.n, r.werr, r.rerr = head, c.rbuf[c.w:], 0, nil, nil
	r.idle, r.stale = c.used, false
	err := r.rc.Read(r.fn)
	rest, r.in = r.out, nil
	if r.stale {
		return nil, nil, errStale
	}
	c.w += r.n
	if r.werr != nil {
		return rest, c.opError("write", r.werr), nil
	}
	if err != nil {
		if oe, ok := err.(*net.OpError); ok {
			err = oe.Err
		}
		if len(rest) > 0 {
			return rest, c.opError("write", err), nil
		}
		return nil, nil, c.opError("read", err)
	}
	if r.rerr == io.EOF {
		return nil, nil, io.EOF
	}
	if r.rerr != nil {
		return nil, nil, c.opError("read", r.rerr)
	}
	return rest, nil, nil
}

func (c *conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.nc.LocalAddr(), Addr: c.nc.RemoteAddr(), Err: err}
}
