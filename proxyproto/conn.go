package proxyproto

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"
)

// inlineBufLen is the size of the read buffer a Conn carries: v1 TCP4 and
// TCP6 lines and the common v2 headers (TCP4 with up to 76 bytes of TLVs,
// TCP6 with up to 52) fit, and the Conn stays in a 384-byte allocation,
// which the collector's cost follows. A longer v2 header is read into a
// buffer of its announced length, and a longer v1 line (UNKNOWN with
// addresses) into one of 107 bytes, allocated once. It is below 256, so
// that offsets into it fit a byte.
const inlineBufLen = 104

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
	raw    net.Conn
	header Header
	// addrs holds the header's UDP or UNIX addresses, allocated with
	// them; TCP ones are in tcp, and LOCAL and UNKNOWN headers use the
	// socket's.
	addrs *[2]net.Addr
	// buf[pstart:pend] is the payload read together with the header.
	pstart, pend uint8

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
			// first (a valid TCP4 or TCP6 line straight away), and apply
			// the length cap's rules to what is left.
			var hn int
			var ok bool
			if buf[0] == v1Sig[0] {
				hn, ok = parseV1Valid(&c.header, buf[:n])
			}
			var perr error
			if !ok {
				hn, perr = parse(&c.header, buf[:n])
			}
			if perr == nil && (c.header.Version == 1 || hn <= maxLen) {
				if n > hn {
					// A grown buffer holds more than the header only after
					// a long v1 line (2 bytes at most): move them.
					if len(buf) != len(c.buf) {
						n = copy(c.buf[:], buf[hn:n])
						hn = 0
					}
					c.pstart, c.pend = uint8(hn), uint8(n)
				}
				break
			}
			want := wantLen(buf[:n])
			switch {
			case want > maxLen:
				// Decided by the fixed part alone, however much of the
				// rest has arrived: malformed, or valid and too long.
				if _, err := parse(&c.header, buf[:v2FixedLen]); err != nil && err != ErrIncomplete {
					return nil, err
				}
				return nil, ErrHeaderTooLarge
			case perr != ErrIncomplete:
				return nil, perr
			case want == 0 && n == len(buf):
				// A v1 line longer than the inline buffer.
				want = maxV1Len
			}
			if want > len(buf) {
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
	if h := &c.header; h.Command == Proxy {
		if h.Protocol == TCP4 || h.Protocol == TCP6 {
			// The Conn is new: only IP and Port are set.
			c.tcp[0].IP, c.tcp[0].Port = c.ip(0, h.Source.Addr()), int(h.Source.Port())
			c.tcp[1].IP, c.tcp[1].Port = c.ip(1, h.Destination.Addr()), int(h.Destination.Port())
		} else {
			c.setAddrs()
		}
	}
	return c, nil
}

// setAddrs sets the addresses of a PROXY header over UDP or UNIX, with
// IPv4-mapped addresses unmapped. ReadConn sets TCP ones itself.
func (c *Conn) setAddrs() {
	h := &c.header
	switch {
	case h.Protocol.IsUnix():
		src, dst := h.UnixPaths()
		network := "unix"
		if h.Protocol.IsDatagram() {
			network = "unixgram"
		}
		c.addrs = &[2]net.Addr{&net.UnixAddr{Net: network, Name: unixName(src)}, &net.UnixAddr{Net: network, Name: unixName(dst)}}
	default:
		c.addrs = &[2]net.Addr{
			&net.UDPAddr{IP: c.ip(0, h.Source.Addr()), Port: int(h.Source.Port())},
			&net.UDPAddr{IP: c.ip(1, h.Destination.Addr()), Port: int(h.Destination.Port())},
		}
	}
}

// ip returns a as a net.IP in c's i-th IP bytes, the last 4 of them for
// an IPv4 or IPv4-mapped address (As16 gives both the mapped form).
func (c *Conn) ip(i int, a netip.Addr) net.IP {
	c.ips[i] = a.As16()
	if a.Is4() || a.Is4In6() {
		return c.ips[i][12:]
	}
	return c.ips[i][:]
}

// addr returns the client's (i = 0) or the proxy's (i = 1) address.
func (c *Conn) addr(i int) net.Addr {
	switch {
	case c.raw == nil:
		return nil
	case c.addrs != nil:
		return c.addrs[i]
	case c.header.Command == Proxy:
		return &c.tcp[i]
	case i == 0:
		return c.raw.RemoteAddr()
	}
	return c.raw.LocalAddr()
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
	if c.pstart < c.pend {
		n := copy(b, c.buf[c.pstart:c.pend])
		c.pstart += uint8(n)
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
func (c *Conn) RemoteAddr() net.Addr { return c.addr(0) }

// LocalAddr returns the destination address from the header, or the
// socket's own address for LOCAL and UNKNOWN headers.
func (c *Conn) LocalAddr() net.Addr { return c.addr(1) }

// SetDeadline sets the underlying connection's deadlines.
func (c *Conn) SetDeadline(t time.Time) error { return c.raw.SetDeadline(t) }

// SetReadDeadline sets the underlying connection's read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.raw.SetReadDeadline(t) }

// SetWriteDeadline sets the underlying connection's write deadline.
func (c *Conn) SetWriteDeadline(t time.Time) error { return c.raw.SetWriteDeadline(t) }
