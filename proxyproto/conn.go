package proxyproto

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// inlineBufLen is the size of the read buffer a Conn carries: any v1
// header and the common v2 ones (with their TLVs up to 140 bytes) fit, and
// the Conn stays in a 512-byte allocation. A longer v2 header is read into
// a buffer of its announced length, allocated once.
const inlineBufLen = 192

// Conn is a connection whose PROXY header has been read and validated. Its
// RemoteAddr and LocalAddr are the client's and the proxy's addresses from
// the header (IPv4-mapped IPv6 addresses unmapped), or the socket's own for
// a LOCAL or UNKNOWN header. Bytes that arrived with the header are returned
// by the first calls to Read; nothing after the header is lost.
//
// A Conn is safe for concurrent use as its underlying connection is, except
// that Read must not be called concurrently with itself. Conns come from
// [ReadConn] and a [Listener]: the zero Conn has no connection, and its
// I/O methods panic.
type Conn struct {
	raw     net.Conn
	header  Header
	pending []byte // payload read together with the header
	remote  net.Addr
	local   net.Addr

	// The TCP addresses of a PROXY header and their IP bytes, and the
	// buffer the header is read into, kept here so that ReadConn
	// allocates only the Conn. The buffer comes last: the collector scans
	// a Conn only up to its last pointer.
	tcp [2]net.TCPAddr
	ips [2][16]byte
	buf [inlineBufLen]byte
}

var _ net.Conn = (*Conn)(nil)

// ReadConn reads the PROXY header from raw and returns the connection
// ready for the application. The header is mandatory: anything else is an
// error. Call it only for connections from trusted proxies; [Listener]
// does that check before calling it.
//
// The header must be complete before deadline (the zero time means no
// deadline); pass the accept time plus a timeout, so that a client cannot
// stretch it by sending slowly. maxLen caps the length of a v2 header
// (which may announce up to [MaxV2Len] bytes; a v1 line is at most 107):
// a longer one is refused with ErrHeaderTooLarge as soon as its fixed part
// has arrived, whether or not the rest came with it. 0 or less means
// MaxV2Len.
//
// ReadConn reads as much as the socket delivers but consumes exactly the
// header: later bytes are kept in the Conn. It refuses input as soon as a
// byte rules out a header, without waiting for more. On success the read
// deadline is cleared; on error raw is left open and the error matches
// [ErrNoProxyHeader], [ErrInvalidHeader], [ErrIncomplete] (the peer closed
// early), [ErrHeaderTimeout], [ErrHeaderTooLarge], or is the read error.
func ReadConn(raw net.Conn, deadline time.Time, maxLen int) (*Conn, error) {
	if maxLen <= 0 || maxLen > MaxV2Len {
		maxLen = MaxV2Len
	}
	if !deadline.IsZero() {
		if err := raw.SetReadDeadline(deadline); err != nil {
			return nil, err
		}
	}
	c := &Conn{raw: raw}
	buf := c.buf[:]
	n := 0
	for {
		m, err := raw.Read(buf[n:])
		n += m
		if m > 0 {
			// The header usually arrives whole, in the first read: parse
			// first, and apply the length cap's rules to what is left.
			hn, perr := parse(&c.header, buf[:n])
			if perr == nil && (c.header.Version == 1 || hn <= maxLen) {
				c.pending = buf[hn:n]
				break
			}
			if want := wantLen(buf[:n]); want > maxLen {
				// Decided by the fixed part alone, however much of the
				// rest has arrived: malformed, or valid and too long.
				if _, err := parse(&c.header, buf[:v2FixedLen]); err != nil && err != ErrIncomplete {
					return nil, err
				}
				return nil, ErrHeaderTooLarge
			} else if perr != ErrIncomplete {
				return nil, perr
			} else if want > len(buf) {
				nb := make([]byte, want)
				copy(nb, buf[:n])
				buf = nb
			}
			if n == len(buf) {
				// Unreachable: a full buffer always decides.
				return nil, ErrHeaderTooLarge
			}
			continue
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, fmt.Errorf("%w: %w", ErrHeaderTimeout, err)
		case err == io.EOF:
			if n == 0 {
				return nil, fmt.Errorf("%w: %w", ErrNoProxyHeader, io.EOF)
			}
			return nil, fmt.Errorf("%w: %w", ErrIncomplete, io.ErrUnexpectedEOF)
		case err != nil:
			return nil, err
		}
	}
	if !deadline.IsZero() {
		if err := raw.SetReadDeadline(time.Time{}); err != nil {
			return nil, err
		}
	}
	if c.header.Command == Proxy {
		c.remote = c.headerAddr(0)
		c.local = c.headerAddr(1)
	} else {
		c.remote, c.local = raw.RemoteAddr(), raw.LocalAddr()
	}
	return c, nil
}

// headerAddr returns the source (i = 0) or destination (i = 1) of a PROXY
// header as a net.Addr, with IPv4-mapped addresses unmapped. TCP addresses
// live in c.
func (c *Conn) headerAddr(i int) net.Addr {
	h := &c.header
	if h.Protocol.IsUnix() {
		src, dst := h.UnixPaths()
		p := [2][]byte{src, dst}[i]
		network := "unix"
		if h.Protocol.IsDatagram() {
			network = "unixgram"
		}
		return &net.UnixAddr{Net: network, Name: unixName(p)}
	}
	ap := h.Source
	if i == 1 {
		ap = h.Destination
	}
	a := ap.Addr().Unmap()
	ip := net.IP(c.ips[i][:])
	if a.Is4() {
		ip = ip[:4]
		b := a.As4()
		copy(ip, b[:])
	} else {
		b := a.As16()
		copy(ip, b[:])
	}
	if h.Protocol.IsDatagram() {
		return &net.UDPAddr{IP: ip, Port: int(ap.Port())}
	}
	c.tcp[i] = net.TCPAddr{IP: ip, Port: int(ap.Port())}
	return &c.tcp[i]
}

// Header returns the parsed header. Its TLVs alias the Conn's buffer,
// which is never reused.
func (c *Conn) Header() Header { return c.header }

// Raw returns the underlying connection, whose RemoteAddr is the proxy's.
// Reading from it directly skips the bytes that Read still holds.
func (c *Conn) Raw() net.Conn { return c.raw }

// Read reads payload: first the bytes that arrived with the header, then
// from the underlying connection.
func (c *Conn) Read(b []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(b, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			c.pending = nil
		}
		return n, nil
	}
	return c.raw.Read(b)
}

// Write writes to the underlying connection.
func (c *Conn) Write(b []byte) (int, error) { return c.raw.Write(b) }

// ReadFrom lets io.Copy use the underlying connection's ReadFrom (sendfile
// and splice on TCP) when it has one.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.raw.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c.raw}, r)
}

type writerOnly struct{ io.Writer }

// CloseWrite shuts down the writing side when the underlying connection
// supports it (TCP and UNIX connections do).
func (c *Conn) CloseWrite() error {
	if cw, ok := c.raw.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// Close closes the underlying connection.
func (c *Conn) Close() error { return c.raw.Close() }

// RemoteAddr returns the client's address from the header, or the
// socket's peer for LOCAL and UNKNOWN headers.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// LocalAddr returns the destination address from the header, or the
// socket's own address for LOCAL and UNKNOWN headers.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// SetDeadline sets the underlying connection's deadlines.
func (c *Conn) SetDeadline(t time.Time) error { return c.raw.SetDeadline(t) }

// SetReadDeadline sets the underlying connection's read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.raw.SetReadDeadline(t) }

// SetWriteDeadline sets the underlying connection's write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }
