package listenlimits

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Listener wraps a net.Listener with a cap on open connections and a TLS
// handshake deadline. Build it with NewListener (or Limits.Listener).
//
// At the cap it sheds: the extra connection is accepted and closed at
// once, unread, and Accept goes on to the next one. It never blocks Accept
// the way golang.org/x/net/netutil.LimitListener does, which leaves
// connections queued in the kernel, where they time out unanswered and
// hold the accept queue.
//
// A Listener is safe for concurrent use.
type Listener struct {
	net.Listener
	max       int64         // <= 0: no cap
	handshake time.Duration // <= 0: no handshake deadline
	active    atomic.Int64
	shed      atomic.Uint64
}

// NewListener wraps inner. maxConns <= 0 means no cap; handshake <= 0 means
// no handshake deadline. Put it below crypto/tls and, with connlimit, above
// connlimit.Listener (so a connection refused per address never takes one
// of the listener's places):
//
//	TCP accept -> proxyproto -> connlimit.Listener -> listenlimits.Listener -> crypto/tls
func NewListener(inner net.Listener, maxConns int, handshake time.Duration) *Listener {
	return &Listener{Listener: inner, max: int64(maxConns), handshake: handshake}
}

// Listener wraps inner with l's MaxConnections and TLSHandshakeTimeout
// (with defaults).
func (l Limits) Listener(inner net.Listener) *Listener {
	r := l.WithDefaults()
	return NewListener(inner, on(r.MaxConnections), on(r.TLSHandshakeTimeout))
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
		if ln.handshake > 0 {
			lc.until = time.Now().Add(ln.handshake)
			lc.clamped.Store(true)
			_ = c.SetDeadline(lc.until)
		}
		return lc, nil
	}
}

// conn is an accepted connection: Close gives its place back once.
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

	mu        sync.Mutex // guards the fields below, while clamped
	wantRead  time.Time
	wantWrite time.Time
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
