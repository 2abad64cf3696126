package proxy

import (
	"bytes"
	"net"
	"net/http"
	"net/textproto"
	"sync/atomic"
)

// upstreamConn is a plain connection to an upstream that remembers the
// Connection field of the response heads it reads.
//
// net/http's client deletes a response's Connection field when it holds
// "close" (it acts on the close itself), and with it the names the
// upstream listed as hop-by-hop: "Connection: X-Secret, close" would let
// X-Secret through to the client. The forwarder arms the connection when
// the transport hands it to an exchange (httptrace's GotConn), the
// connection copies the value of the final head's Connection lines as it
// reads them, and the forwarder removes the names it lists.
//
// It reads only what it can read with certainty: the heads after being
// armed, up to the first that is not informational, in the bytes of one
// exchange (net/http's client does not pipeline). A connection whose
// first bytes are not "HTTP/" (TLS, whose plaintext it never sees, or h2c
// with prior knowledge) is never read again. A Connection value over
// maxListed bytes is read up to there. It costs a scan of each response
// head for line starts, and no allocation.
type upstreamConn struct {
	net.Conn
	state atomic.Uint32 // one of the conn* values

	// Used by the reading goroutine while armed, then by the exchange
	// once the response head is in (the transport's read of the head
	// happens before RoundTrip returns).
	line   uint8  // where the scanner stands in the current line
	match  uint8  // bytes of "connection:" matched at a line start
	digits uint8  // status digits read
	code   uint16 // the head's status
	first  bool   // no byte read yet since the connection opened
	n      int    // bytes of val in use
	val    [maxListed]byte
}

// maxListed bounds the Connection value remembered per head.
const maxListed = 512

const (
	connIdle   uint32 = iota // not reading a head for an exchange
	connArmed                // reading the next response head
	connOpaque               // not HTTP/1.x text: never read again
)

// Where the scanner stands in a line.
const (
	lineStatus uint8 = iota // in the status line, before the code
	lineCode                // in the status code
	lineStart               // at the first byte of a header line
	lineName                // matching "connection:"
	lineValue               // copying a Connection value
	lineSkip                // in any other line
	lineCR                  // after a CR at a line start (the blank line)
)

const connectionField = "connection:"

var (
	comma        = []byte(",")
	tokClose     = []byte("close")
	tokKeepAlive = []byte("keep-alive")
)

func newUpstreamConn(c net.Conn) *upstreamConn { return &upstreamConn{Conn: c, first: true} }

// arm starts the reading of the next response head.
func (u *upstreamConn) arm() {
	if u.state.Load() == connOpaque {
		return
	}
	u.startHead()
	u.state.Store(connArmed)
}

func (u *upstreamConn) startHead() {
	u.line, u.match, u.digits, u.code, u.n = lineStatus, 0, 0, 0, 0
}

func (u *upstreamConn) Read(p []byte) (int, error) {
	n, err := u.Conn.Read(p)
	if n > 0 {
		if u.first {
			u.first = false
			if p[0] != 'H' || !bytes.HasPrefix([]byte("HTTP/"), p[:min(n, 5)]) {
				u.state.Store(connOpaque)
			}
		}
		if u.state.Load() == connArmed {
			u.scan(p[:n])
		}
	}
	return n, err
}

// scan reads head bytes. A blank line ends a head: an informational head
// (1xx but 101) starts the next one, any other ends the reading.
func (u *upstreamConn) scan(p []byte) {
	for i := 0; i < len(p); {
		switch u.line {
		case lineStatus:
			j := bytes.IndexByte(p[i:], ' ')
			if j < 0 {
				return
			}
			i, u.line = i+j+1, lineCode
		case lineCode:
			if c := p[i]; '0' <= c && c <= '9' && u.digits < 3 {
				u.code = u.code*10 + uint16(c-'0')
				u.digits++
				i++
				continue
			}
			u.line = lineSkip
		case lineStart:
			switch c := p[i]; {
			case c == '\r':
				u.line = lineCR
				i++
			case c == '\n':
				i++
				if !u.endHead() {
					return
				}
			case lower(c) == 'c':
				u.line, u.match = lineName, 1
				i++
			default:
				u.line = lineSkip
			}
		case lineCR:
			if p[i] != '\n' {
				u.line = lineSkip
				continue
			}
			i++
			if !u.endHead() {
				return
			}
		case lineName:
			if lower(p[i]) != connectionField[u.match] {
				u.line = lineSkip
				continue
			}
			i++
			if u.match++; int(u.match) == len(connectionField) {
				u.line = lineValue
				u.add(',')
			}
		case lineValue:
			end, j := len(p), bytes.IndexByte(p[i:], '\n')
			if j >= 0 {
				end = i + j
			}
			for _, c := range p[i:end] {
				if c != '\r' {
					u.add(c)
				}
			}
			if j < 0 {
				return
			}
			i, u.line = end+1, lineStart
		case lineSkip:
			j := bytes.IndexByte(p[i:], '\n')
			if j < 0 {
				return
			}
			i, u.line = i+j+1, lineStart
		}
	}
}

func (u *upstreamConn) add(c byte) {
	if u.n < len(u.val) {
		u.val[u.n] = c
		u.n++
	}
}

// endHead ends a head and reports whether another one follows.
func (u *upstreamConn) endHead() bool {
	if u.code/100 == 1 && u.code != http.StatusSwitchingProtocols {
		u.startHead()
		return true
	}
	u.state.Store(connIdle)
	return false
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// removeListed deletes from h the names the final response head's
// Connection lines listed; u may be nil. It allocates only for names
// other than close and keep-alive.
func (u *upstreamConn) removeListed(h http.Header) {
	if u == nil || u.state.Load() != connIdle || u.n == 0 {
		return
	}
	for v := u.val[:u.n]; len(v) > 0; {
		var tok []byte
		tok, v, _ = bytes.Cut(v, comma)
		switch tok = bytes.Trim(tok, " \t"); {
		case len(tok) == 0, bytes.EqualFold(tok, tokClose), bytes.EqualFold(tok, tokKeepAlive):
		default:
			delete(h, textproto.CanonicalMIMEHeaderKey(string(tok)))
		}
	}
}
