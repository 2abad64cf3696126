package h1client

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/textproto"
	"sync/atomic"
)

// CheckedConn is a connection that another client (net/http's) reads
// HTTP/1.1 responses from. It reads along with that client, by the same
// rules as [Client] and with the same code, so that an answer one client
// refuses, the other refuses too: before a read hands over the byte that
// completes (or breaks) a head, a chunk-size line or a trailer line, the
// unit is checked, and a refused one fails that read and every later one
// with its *[ResponseError]. The other client never sees a whole refused
// unit: a refused head fails its round trip, a refused body framing its
// body.
//
// It also remembers what the final head's Connection fields listed,
// which net/http's client deletes, with the field, when it holds "close"
// ([CheckedConn.RemoveListed]).
//
// It checks what it is told to: [CheckedConn.Arm] says that the next
// bytes answer a new request (and whether a HEAD, whose answer has no
// body). A connection never armed, or whose first bytes are not "HTTP/"
// (TLS records under the other client's own TLS, h2c frames), is read
// unchecked, and so is what follows a final response (which the other
// client treats as the protocol error it is) and a 101's tunnel.
//
// Arm belongs to the goroutine that hands the connection to an exchange,
// Read to the other client's reading goroutine; RemoveListed may be
// called once that client returned the response head.
type CheckedConn struct {
	net.Conn
	arm   atomic.Uint32 // generation<<1 | HEAD; 0: never armed
	first bool          // no byte read yet since the connection opened
	off   bool          // not HTTP/1.x text: never checked
	err   error         // sticky: the refusal
	k     checker
}

// NewCheckedConn returns c checked as a CheckedConn.
func NewCheckedConn(c net.Conn) *CheckedConn { return &CheckedConn{Conn: c, first: true} }

// Arm says that the next bytes read answer a new request; head reports a
// HEAD request.
func (c *CheckedConn) Arm(head bool) {
	a := c.arm.Load() + 2
	if head {
		a |= 1
	} else {
		a &^= 1
	}
	c.arm.Store(a)
}

func (c *CheckedConn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if n == 0 || c.off {
		return n, err
	}
	if c.first {
		c.first = false
		if p[0] != 'H' || !bytes.HasPrefix([]byte("HTTP/"), p[:min(n, 5)]) {
			c.off = true
			return n, err
		}
	}
	if a := c.arm.Load(); a != c.k.gen {
		c.k.start(a)
	}
	if ok, cerr := c.k.check(p[:n]); cerr != nil {
		c.err = cerr
		if ok == 0 {
			return 0, cerr
		}
		return ok, nil
	}
	return n, err
}

// CloseWrite shuts down the writing side of the connection below, where
// it has one (TCP, TLS): net/http's body of a 101 passes a tunnel's
// half-close on through it.
func (c *CheckedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// RemoveListed deletes from h the names the final response head's
// Connection fields listed, other than close and keep-alive; c may be
// nil. It allocates only for a name it deletes.
func (c *CheckedConn) RemoveListed(h http.Header) {
	if c == nil || !c.k.final {
		return
	}
	for v := c.k.listed[:c.k.nlisted]; len(v) > 0; {
		var tok []byte
		tok, v, _ = bytes.Cut(v, comma)
		switch tok = trimOWS(tok); {
		case len(tok) == 0, asciiEqualFold(tok, "close"), asciiEqualFold(tok, "keep-alive"):
		default:
			delete(h, textproto.CanonicalMIMEHeaderKey(string(tok)))
		}
	}
}

// maxListed bounds the Connection values remembered per head; a longer
// list is read up to there.
const maxListed = 512

// checker follows the responses on a connection with the client's rules.
// It belongs to the reading goroutine.
type checker struct {
	gen  uint32 // the arm it follows
	st   uint8
	head bool   // the request was HEAD
	buf  []byte // the unit being put together: a head, or a line
	scan int    // where headEnd resumes in buf
	h    head
	left int64 // bytes left in the body or the current chunk
	n1xx int
	size int // trailer bytes so far

	final   bool // the final head is in: listed is its Connection values
	listed  [maxListed]byte
	nlisted int
}

// Where the checker stands.
const (
	stPass      uint8 = iota // unchecked: not armed, after the response, a tunnel, until close
	stHead                   // in a head
	stLength                 // in a body of known length
	stChunkLine              // in a chunk-size line
	stChunkData              // in chunk data
	stChunkCR                // after chunk data: CR next
	stChunkLF                // LF next
	stTrailer                // in a trailer line
)

var comma = []byte(",")

// start follows the response to a new request.
func (k *checker) start(arm uint32) {
	k.gen, k.head = arm, arm&1 != 0
	k.st, k.n1xx, k.final, k.nlisted = stHead, 0, false, 0
	k.resetBuf()
}

func (k *checker) resetBuf() {
	if cap(k.buf) > keepBuffer {
		k.buf = nil
	}
	k.buf, k.scan = k.buf[:0], 0
}

// check reads p, the next bytes of the connection. On a refusal it
// returns how many bytes of p came before the refused unit, so that the
// reader never gets the byte that would complete it.
func (k *checker) check(p []byte) (int, error) {
	for i := 0; i < len(p); {
		unit := i // where the unit being read starts in p
		if len(k.buf) > 0 {
			unit = 0 // it started in an earlier read
		}
		var n int
		var err error
		switch k.st {
		case stPass:
			return len(p), nil
		case stHead:
			n, err = k.readHead(p[i:])
		case stLength:
			n = int(min(k.left, int64(len(p)-i)))
			if k.left -= int64(n); k.left == 0 {
				k.st = stPass
			}
		case stChunkLine, stTrailer:
			n, err = k.readLine(p[i:])
		case stChunkData:
			n = int(min(k.left, int64(len(p)-i)))
			if k.left -= int64(n); k.left == 0 {
				k.st = stChunkCR
			}
		case stChunkCR, stChunkLF:
			want, next := byte('\r'), stChunkLF
			if k.st == stChunkLF {
				want, next = '\n', stChunkLine
			}
			if p[i] != want {
				err = errChunkEnd
				break
			}
			n, k.st = 1, next
		}
		if err != nil {
			return unit, err
		}
		i += n
	}
	return len(p), nil
}

// readHead puts a head together from the start of p and returns how many
// bytes of p it took.
func (k *checker) readHead(p []byte) (int, error) {
	had := len(k.buf)
	k.buf = append(k.buf, p...)
	n, next, err := headEnd(k.buf, k.scan)
	switch {
	case err != nil:
		return 0, err
	case n == 0 && len(k.buf) >= MaxHeadBytes:
		return 0, errHeadTooLarge
	case n == 0:
		k.scan = next
		return len(p), nil
	case n > MaxHeadBytes:
		return 0, errHeadTooLarge
	}
	if err := parseHead(k.buf[:n], &k.h); err != nil {
		return 0, err
	}
	if err := k.headDone(); err != nil {
		return 0, err
	}
	k.resetBuf()
	return n - had, nil
}

// headDone sets what follows the head just parsed.
func (k *checker) headDone() error {
	h := &k.h
	switch {
	case h.code >= 100 && h.code < 200 && h.code != http.StatusSwitchingProtocols:
		if k.n1xx++; k.n1xx > Max1xx {
			return errTooMany1xx
		}
		return nil // the next head follows
	case h.code == http.StatusSwitchingProtocols:
		k.st = stPass
	case k.head, h.code == http.StatusNoContent, h.code == http.StatusNotModified:
		k.st = stPass
	case h.chunked:
		k.st, k.size = stChunkLine, 0
	case h.length > 0:
		k.st, k.left = stLength, h.length
	case h.length == 0:
		k.st = stPass
	default:
		k.st = stPass // until the connection closes
	}
	k.final, k.nlisted = true, 0
	for _, f := range h.fields {
		if asciiEqualFold(f.name, "connection") {
			k.nlisted += copy(k.listed[k.nlisted:], ",")
			k.nlisted += copy(k.listed[k.nlisted:], f.value)
		}
	}
	return nil
}

// readLine puts a chunk-size or trailer line together from the start of
// p and returns how many bytes of p it took.
func (k *checker) readLine(p []byte) (int, error) {
	limit := maxChunkLine
	if k.st == stTrailer {
		limit = MaxHeadBytes - k.size
	}
	i := bytes.IndexByte(p, '\n')
	take := len(p)
	if i >= 0 {
		take = i + 1
	}
	if len(k.buf)+take > limit {
		if k.st == stTrailer {
			return 0, errHeadTooLarge
		}
		return 0, errChunkSize
	}
	k.buf = append(k.buf, p[:take]...)
	if i < 0 {
		return take, nil
	}
	l := k.buf
	if len(l) < 2 || l[len(l)-2] != '\r' {
		return 0, errBareLF
	}
	l = l[:len(l)-2]
	if k.st == stChunkLine {
		n, err := parseChunkSize(l)
		if err != nil {
			return 0, err
		}
		k.st, k.left = stChunkData, n
		if n == 0 {
			k.st = stTrailer
		}
	} else {
		if len(l) == 0 {
			k.st = stPass
		} else {
			k.size += len(l) + 2
			f, err := parseField(l)
			if err != nil {
				return 0, err
			}
			if framingName(f.name) {
				return 0, errTrailerName
			}
		}
	}
	k.resetBuf()
	return take, nil
}
