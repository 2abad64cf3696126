package listenlimits

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
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
// With an IdleRelease (Limits.Listener), it parks idle HTTP/1.1
// keep-alive connections (see Limits.IdleRelease). Its goroutines: one
// that accepts from the wrapped listener for Accept, one per parked
// connection, each waiting for that connection's next byte, and while
// many park at once one that collects after them (see the package
// documentation); Close ends them all.
//
// A Listener is safe for concurrent use. Make it with [NewListener] or
// [Limits.Listener]: one without a listener to wrap (the zero Listener)
// accepts nothing, Accept returning [ErrNoListener], and its Close does
// nothing.
type Listener struct {
	net.Listener
	max       int64         // <= 0: no cap
	handshake time.Duration // <= 0: no handshake deadline
	lax       bool          // no framing guard
	release   time.Duration // <= 0: never park
	idle      time.Duration // the server's IdleTimeout, as Apply sets it
	active    atomic.Int64
	shed      atomic.Uint64

	// Parking, when release > 0.
	pumpOnce  sync.Once
	accepted  chan accepted // from the accepting goroutine
	woken     chan *conn    // parked connections with a request coming
	done      chan struct{} // closed by Close
	closeOnce sync.Once
	pmu       sync.Mutex
	parked    map[*conn]struct{} // guarded by pmu
	lnClosed  bool               // guarded by pmu
	wave      atomic.Int64       // parks of the current wave (release.go)
}

type accepted struct {
	c   net.Conn
	err error
}

// ErrNoListener is the error of Accept on a [Listener] with no listener
// to wrap: a zero one, or NewListener(nil, ...).
var ErrNoListener = errors.New("listenlimits: a Listener without a listener to wrap accepts nothing")

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
	if ln.release = on(r.IdleRelease); ln.release > 0 {
		ln.idle = on(r.IdleTimeout)
		ln.accepted, ln.woken = make(chan accepted), make(chan *conn)
		ln.done, ln.parked = make(chan struct{}), map[*conn]struct{}{}
	}
	return ln
}

// Active returns the number of connections open now.
func (ln *Listener) Active() int64 { return ln.active.Load() }

// Shed returns the number of connections closed because the listener was
// at its cap.
func (ln *Listener) Shed() uint64 { return ln.shed.Load() }

// Parked returns the number of connections parked now.
func (ln *Listener) Parked() int {
	ln.pmu.Lock()
	defer ln.pmu.Unlock()
	return len(ln.parked)
}

// Accept returns the next connection under the cap, shedding those above
// it, or a parked connection whose next request has begun. The returned
// connection gives its place back on its first Close (other than the one
// that parks it).
func (ln *Listener) Accept() (net.Conn, error) {
	if ln.Listener == nil {
		return nil, ErrNoListener
	}
	if ln.release <= 0 {
		return ln.accept()
	}
	ln.pumpOnce.Do(func() { go ln.pump() })
	select {
	case c := <-ln.woken:
		return c, nil
	case a := <-ln.accepted:
		return a.c, a.err
	case <-ln.done:
		return nil, net.ErrClosed
	}
}

// pump accepts for Accept while parked connections may come back; it
// ends at Close.
func (ln *Listener) pump() {
	for {
		c, err := ln.accept()
		select {
		case ln.accepted <- accepted{c, err}:
		case <-ln.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Close closes the wrapped listener and every parked connection.
func (ln *Listener) Close() error {
	if ln.Listener == nil {
		return nil
	}
	err := ln.Listener.Close()
	if ln.release > 0 {
		ln.closeOnce.Do(func() {
			close(ln.done)
			ln.pmu.Lock()
			ln.lnClosed = true
			for c := range ln.parked {
				delete(ln.parked, c)
				c.giveBack()
				_ = c.Conn.Close()
			}
			ln.pmu.Unlock()
		})
	}
	return err
}

func (ln *Listener) accept() (net.Conn, error) {
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
	// rd and wd tell when the wrapped connection's read (write)
	// deadline is known to be none: clearing it again costs no call
	// (net/http clears the unset read and write deadlines once per
	// request each).
	rd, wd deadlineState

	// The framing guard. fr belongs to the reading goroutine; net/http
	// reads from one goroutine at a time, and hands the connection over
	// at a hijack only after its pending read ended.
	fr framer
	// reported is set when the server reports hijacks of this connection
	// (Limits.Apply's ConnState hook), hijacked when it reported one.
	reported atomic.Bool
	hijacked atomic.Bool

	// Parking (Listener.release > 0). idle: the server reported the
	// connection idle, so its next SetReadDeadline is the idle wait's;
	// armed: that deadline was moved to the release time, idleUntil
	// keeping the one asked for; parking: the idle read ended at the
	// release time, so the server's Close parks instead of closing.
	// first is the byte a parked connection woke with, pending until
	// the server reads it.
	idle      atomic.Bool
	armed     atomic.Bool
	parking   atomic.Bool
	idleUntil time.Time
	pending   bool
	first     [1]byte
}

// Read reads from the wrapped connection and runs the framing guard over
// what it read.
func (c *conn) Read(p []byte) (int, error) {
	var n int
	var err error
	switch {
	case c.pending && len(p) > 0:
		c.pending = false
		n = copy(p, c.first[:])
	case c.armed.Load():
		c.armed.Store(false)
		n, err = c.Conn.Read(p)
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
			// Idle until the release time: tell the server the
			// client is gone, and park at its Close.
			c.parking.Store(true)
			return 0, io.EOF
		}
	default:
		n, err = c.Conn.Read(p)
	}
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
//
// StateIdle marks the Listener's connection idle when the server holds it
// directly (no crypto/tls above it), so its idle wait can be released.
func reportState(nc net.Conn, state http.ConnState) {
	if state == http.StateIdle {
		if c, ok := nc.(*conn); ok && c.ln.release > 0 && !c.hijacked.Load() {
			c.idle.Store(true)
		}
		return
	}
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
	if c.parking.CompareAndSwap(true, false) && c.ln.park(c) {
		return nil
	}
	c.giveBack()
	// From now on every call has the wrapped connection's error.
	c.rd.changed()
	c.wd.changed()
	return c.Conn.Close()
}

// releaseAt is when an idle wait that ends at until (zero: never) is
// released. The server sets until to its IdleTimeout from now, which
// Apply set to the Limits' one, so the clock is read only when the wait
// has no end: reading it costs more than the rest of the idle wait's
// bookkeeping together on some virtual machines.
func (ln *Listener) releaseAt(until time.Time) time.Time {
	if until.IsZero() || ln.idle <= 0 {
		return time.Now().Add(ln.release)
	}
	return until.Add(ln.release - ln.idle)
}

// giveBack gives the connection's place back, once.
func (c *conn) giveBack() {
	if c.closed.CompareAndSwap(false, true) {
		c.ln.active.Add(-1)
	}
}

// park keeps c open after the server let go of it, and starts the wait
// for its next request; false when the Listener is closed.
func (ln *Listener) park(c *conn) bool {
	ln.pmu.Lock()
	defer ln.pmu.Unlock()
	if ln.lnClosed {
		return false
	}
	ln.parked[c] = struct{}{}
	go c.awaitRequest()
	ln.countPark()
	return true
}

// awaitRequest waits, until the idle deadline the server asked for, for
// the first byte of c's next request, and then hands c back to Accept.
// At the deadline, at the client's close or at the Listener's, it closes
// c.
func (c *conn) awaitRequest() {
	ln := c.ln
	_ = c.setRead(c.idleUntil)
	n, _ := c.Conn.Read(c.first[:])
	ln.pmu.Lock()
	delete(ln.parked, c)
	closed := ln.lnClosed
	ln.pmu.Unlock()
	if n == 1 && !closed {
		c.pending = true
		select {
		case ln.woken <- c:
			return
		case <-ln.done:
		}
	}
	c.giveBack()
	_ = c.Conn.Close()
}

func clamp(t, until time.Time) time.Time {
	if t.IsZero() || t.After(until) {
		return until
	}
	return t
}

func (c *conn) SetDeadline(t time.Time) error {
	c.armed.Store(false)
	if c.clamped.Load() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.clamped.Load() { // not ended while we waited for the lock
			c.wantRead, c.wantWrite = t, t
			if t.IsZero() {
				return c.unclampLocked()
			}
			err := c.Conn.SetDeadline(clamp(t, c.until))
			c.rd.changed()
			c.wd.changed()
			return err
		}
	}
	if !t.IsZero() {
		err := c.Conn.SetDeadline(t)
		c.rd.changed()
		c.wd.changed()
		return err
	}
	vr, noRead := c.rd.none()
	vw, noWrite := c.wd.none()
	if noRead && noWrite {
		return nil
	}
	err := c.Conn.SetDeadline(t)
	if err == nil {
		c.rd.cleared(vr)
		c.wd.cleared(vw)
	}
	return err
}

func (c *conn) SetReadDeadline(t time.Time) error {
	idle := c.idle.Load() && c.idle.Swap(false)
	if c.clamped.Load() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.clamped.Load() {
			c.wantRead = t
			if t.IsZero() {
				return c.unclampLocked()
			}
			return c.setRead(clamp(t, c.until))
		}
	}
	if idle {
		// The idle wait's deadline (the server sets it right after it
		// reports the connection idle): wait until the release time
		// at most, and park then.
		c.idleUntil = t
		if r := c.ln.releaseAt(t); t.IsZero() || r.Before(t) {
			c.armed.Store(true)
			t = r
		}
	} else {
		c.armed.Store(false)
	}
	return c.setRead(t)
}

func (c *conn) SetWriteDeadline(t time.Time) error {
	if c.clamped.Load() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.clamped.Load() {
			c.wantWrite = t
			return c.setWrite(clamp(t, c.until))
		}
	}
	return c.setWrite(t)
}

// setRead sets the wrapped connection's read deadline, unless t clears
// one known to be none.
func (c *conn) setRead(t time.Time) error { return c.setDeadline(t, false) }

// setWrite is setRead for the write deadline.
func (c *conn) setWrite(t time.Time) error { return c.setDeadline(t, true) }

// setDeadline sets the wrapped connection's write deadline (write) or
// read deadline, unless t clears one known to be none.
func (c *conn) setDeadline(t time.Time, write bool) error {
	d := &c.rd
	if write {
		d = &c.wd
	}
	if !t.IsZero() {
		err := c.setWrapped(t, write)
		d.changed()
		return err
	}
	v, none := d.none()
	if none {
		return nil
	}
	err := c.setWrapped(t, write)
	if err == nil {
		d.cleared(v)
	}
	return err
}

func (c *conn) setWrapped(t time.Time, write bool) error {
	if write {
		return c.Conn.SetWriteDeadline(t)
	}
	return c.Conn.SetReadDeadline(t)
}

// unclampLocked ends the handshake clamp and applies the deadlines asked
// for.
func (c *conn) unclampLocked() error {
	if !c.clamped.CompareAndSwap(true, false) {
		return nil
	}
	return errors.Join(c.setRead(c.wantRead), c.setWrite(c.wantWrite))
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

// NetConn returns the wrapped connection. Set deadlines on c, not on it:
// c does not clear again a deadline it knows to be none.
func (c *conn) NetConn() net.Conn { return c.Conn }

// deadlineState tells whether one of a connection's deadlines is known to
// be none, without a lock: its value is odd when it is, and every set of
// the deadline to a time changes it after the set. A clearing records
// itself only if no set came between its start and its end, so a deadline
// set concurrently with a clearing, and made after it, never stays
// unknown once its set returned; a clearing skipped meanwhile overlapped
// that set, and may be taken as made before it.
type deadlineState struct{ v atomic.Uint32 }

// none reports whether the deadline is known to be none, with the value
// to pass to cleared after clearing it.
func (d *deadlineState) none() (uint32, bool) {
	v := d.v.Load()
	return v, v&1 != 0
}

// cleared records a clearing that started when the value was v.
func (d *deadlineState) cleared(v uint32) { d.v.CompareAndSwap(v, v|1) }

// changed records a set to a time (or to anything unknown), after it.
func (d *deadlineState) changed() {
	for {
		v := d.v.Load()
		if d.v.CompareAndSwap(v, (v|1)+1) {
			return
		}
	}
}
