package listenlimits

import (
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Listener wraps a net.Listener with a cap on open connections, a TLS
// handshake deadline and the framing guard. Build it with NewListener (or
// Limits.Listener).
//
// At the cap it sheds: the extra connection is accepted and closed at
// once, unread, and Accept goes on to the next one. It never blocks Accept
// the way golang.org/x/net/netutil.LimitListener does, which leaves
// connections queued in the kernel, where they time out unanswered and
// hold the accept queue.
//
// Its connections refuse, with 400 and a close, an HTTP/1.x request that
// has both Content-Length and Transfer-Encoding, or Transfer-Encoding on
// HTTP/1.0 (the framing guard: see the package documentation).
//
// A Listener is safe for concurrent use.
type Listener struct {
	net.Listener
	max       int64         // <= 0: no cap
	handshake time.Duration // <= 0: no handshake deadline
	lax       bool          // no framing guard
	active    atomic.Int64
	shed      atomic.Uint64
}

// NewListener wraps inner, with the framing guard. maxConns <= 0 means no
// cap; handshake <= 0 means no handshake deadline, so NewListener(inner,
// 0, 0) is the framing guard alone. Put it below crypto/tls and, with
// connlimit, above connlimit.Listener (so a connection refused per address
// never takes one of the listener's places):
//
//	TCP accept -> proxyproto -> connlimit.Listener -> listenlimits.Listener -> crypto/tls
func NewListener(inner net.Listener, maxConns int, handshake time.Duration) *Listener {
	return &Listener{Listener: inner, max: int64(maxConns), handshake: handshake}
}

// Listener wraps inner with l's MaxConnections and TLSHandshakeTimeout
// (with defaults), and with the framing guard unless l.LaxFraming.
func (l Limits) Listener(inner net.Listener) *Listener {
	r := l.WithDefaults()
	ln := NewListener(inner, on(r.MaxConnections), on(r.TLSHandshakeTimeout))
	ln.lax = l.LaxFraming
	return ln
}

// Active returns the number of connections open now.
func (ln *Listener) Active() int64 { return ln.active.Load() }

// Shed returns the number of connections closed because the listener was
// at its cap.
func (ln *Listener) Shed() uint64 { return ln.shed.Load() }

// Accept returns the next connection under the cap, shedding those above
// it. The returned connection gives its place back on its first Close.
func (ln *Listener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := ln.active.Add(1); ln.max > 0 && n > ln.max {
			ln.active.Add(-1)
			ln.shed.Add(1)
			_ = c.Close()
			continue
		}
		lc := &conn{Conn: c, ln: ln}
		if ln.lax {
			lc.fr.st = sPass
		}
		if ln.handshake > 0 {
			lc.until = time.Now().Add(ln.handshake)
			lc.clamped.Store(true)
			_ = c.SetDeadline(lc.until)
		}
		return lc, nil
	}
}

// conn is an accepted connection: Close gives its place back once, and
// Read runs the framing guard.
//
// Until the TLS handshake is over, every deadline set on it is clamped to
// the handshake deadline (until). net/http sets its own handshake deadline
// from ReadHeaderTimeout and clears the read deadline (sets it to the zero
// time) right after the handshake; that first clearing ends the clamp, and
// the deadlines asked for since are applied as asked.
type conn struct {
	net.Conn
	ln      *Listener
	closed  atomic.Bool
	clamped atomic.Bool
	until   time.Time

	mu        sync.Mutex // guards the two fields below, while clamped
	wantRead  time.Time
	wantWrite time.Time

	// The framing guard. fr belongs to the reading goroutine; net/http
	// reads from one goroutine at a time, and hands the connection over
	// at a hijack only after its pending read ended.
	fr framer
	// reported is set when the server reports hijacks of this connection
	// (Limits.Apply's ConnState hook), hijacked when it reported one.
	reported atomic.Bool
	hijacked atomic.Bool
}

// Read reads from the wrapped connection and runs the framing guard over
// what it read.
func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.fr.st != sPass {
		// Checked after the read: a pending read can outlast a hijack.
		if c.hijacked.Load() {
			c.fr.pass(passHijacked)
		} else {
			c.fr.scan(p[:n], c.reported.Load())
		}
	}
	return n, err
}

// reportState passes net/http's word of a connection's state to the
// framing guard of the Listener's connection under nc, if any: StateNew
// says that hijacks will be reported, StateHijacked that the bytes from
// now on belong to the handler.
func reportState(nc net.Conn, state http.ConnState) {
	if state != http.StateNew && state != http.StateHijacked {
		return
	}
	for range 8 { // crypto/tls, and wrappers with NetConn
		switch c := nc.(type) {
		case *conn:
			if state == http.StateNew {
				c.reported.Store(true)
			} else {
				c.hijacked.Store(true)
			}
			return
		case interface{ NetConn() net.Conn }:
			nc = c.NetConn()
		default:
			return
		}
	}
}

func (c *conn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.ln.active.Add(-1)
	}
	return c.Conn.Close()
}

func clamp(t, until time.Time) time.Time {
	if t.IsZero() || t.After(until) {
		return until
	}
	return t
}

func (c *conn) SetDeadline(t time.Time) error {
	if c.clamped.Load() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.clamped.Load() { // not ended while we waited for the lock
			c.wantRead, c.wantWrite = t, t
			if t.IsZero() {
				return c.unclampLocked()
			}
			return c.Conn.SetDeadline(clamp(t, c.until))
		}
	}
	return c.Conn.SetDeadline(t)
}

func (c *conn) SetReadDeadline(t time.Time) error {
	if c.clamped.Load() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.clamped.Load() {
			c.wantRead = t
			if t.IsZero() {
				return c.unclampLocked()
			}
			return c.Conn.SetReadDeadline(clamp(t, c.until))
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	if c.clamped.Load() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.clamped.Load() {
			c.wantWrite = t
			return c.Conn.SetWriteDeadline(clamp(t, c.until))
		}
	}
	return c.Conn.SetWriteDeadline(t)
}

// unclampLocked ends the handshake clamp and applies the deadlines asked
// for.
func (c *conn) unclampLocked() error {
	if !c.clamped.CompareAndSwap(true, false) {
		return nil
	}
	return errors.Join(c.Conn.SetReadDeadline(c.wantRead), c.Conn.SetWriteDeadline(c.wantWrite))
}

// CloseWrite shuts down the writing side of the wrapped connection (net/http
// uses it to close a connection gracefully). It returns
// errors.ErrUnsupported when the wrapped connection cannot.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// NetConn returns the wrapped connection.
func (c *conn) NetConn() net.Conn { return c.Conn }
