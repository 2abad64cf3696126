package simulate

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// pipeConn is the server's end of a memPipe with the TCP addresses of the
// connection it stands for. Its closed channel is closed by the first
// Close: the server side is done with the connection, and every stage
// that refused it has said why.
type pipeConn struct {
	net.Conn
	local, remote net.Addr
	closed        chan struct{}
	once          sync.Once
}

func newPipeConn(c net.Conn, local, remote net.Addr) *pipeConn {
	return &pipeConn{Conn: c, local: local, remote: remote, closed: make(chan struct{})}
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

func (c *pipeConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.closed) })
	return err
}

// oneListener is a net.Listener that accepts one connection, then waits
// until it is closed.
type oneListener struct {
	c    chan net.Conn
	done chan struct{}
	once sync.Once
	addr net.Addr
}

func newOneListener(c net.Conn) *oneListener {
	l := &oneListener{c: make(chan net.Conn, 1), done: make(chan struct{}), addr: c.LocalAddr()}
	l.c <- c
	return l
}

func (l *oneListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *oneListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneListener) Addr() net.Addr { return l.addr }

// logCapture is a slog.Handler that keeps the messages and "err" attributes
// of what a stage logs, so the trace can give the stage's own reason.
type logCapture struct {
	mu   sync.Mutex
	msgs []string
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			msg += ": " + a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.msgs = append(h.msgs, msg)
	h.mu.Unlock()
	return nil
}

func (h *logCapture) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCapture) WithGroup(string) slog.Handler      { return h }

func (h *logCapture) last() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.msgs) == 0 {
		return ""
	}
	return h.msgs[len(h.msgs)-1]
}

// recorder wraps the server's ResponseWriter: it remembers whether the gate
// wrote anything (a hand-over in a simulation writes nothing, and the
// status is then the upstream's, not 200) and what.
type recorder struct {
	http.ResponseWriter
	status int // 0: nothing written
}

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the server's writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// memPipe returns the two ends of an in-memory connection: the client's
// and the server's. A write from the server never waits for the reader,
// as on a socket with room in its buffers: a server that answers before
// it has read everything (an HTTP 400, a TLS alert) cannot deadlock with
// a client still reading. A write from the client waits while
// [pipeWindow] bytes are unread, as on a socket whose buffers are full:
// a request body costs what the server reads of it (plus the window), not
// what its Content-Length declares. Reads and writes honour deadlines,
// which net/http uses to interrupt them.
func memPipe() (*memConn, *memConn) {
	a, b := newHalf(0), newHalf(pipeWindow)
	return &memConn{r: a, w: b}, &memConn{r: b, w: a}
}

// pipeWindow is how many unread bytes the client's direction of a
// memPipe holds before a write waits: a socket's buffers, about.
const pipeWindow = 64 << 10

// half is one direction of a memPipe.
type half struct {
	mu         sync.Mutex
	buf        []byte // unread bytes: buf[off:]
	off        int
	eof        bool          // the writing end closed
	readerGone bool          // the reading end closed
	ready      chan struct{} // closed when buf, eof or readerGone change
	window     int           // unread bytes before a write waits; 0: never waits
}

// room makes space for n more bytes after the unread ones: it moves them
// to the front of buf, so a buffer a reader drains slowly is not
// reallocated on every write, and grows a buffer with a window to the
// window at once once it holds more than a request head; h.mu must be
// held.
func (h *half) room(n int) {
	if len(h.buf)+n <= cap(h.buf) {
		return
	}
	if h.off > 0 {
		h.buf = h.buf[:copy(h.buf, h.buf[h.off:])]
		h.off = 0
	}
	if need := len(h.buf) + n; h.window > 0 && need > cap(h.buf) && need > 4<<10 {
		h.buf = append(make([]byte, 0, max(h.window, need)), h.buf...)
	}
}

func newHalf(window int) *half { return &half{ready: make(chan struct{}), window: window} }

// signal wakes the readers and the waiting writers; h.mu must be held.
func (h *half) signal() {
	close(h.ready)
	h.ready = make(chan struct{})
}

type memConn struct {
	r, w   *half
	dl, wd deadline // for reads, for writes

	mu     sync.Mutex
	closed bool
}

// deadline is a read or write deadline that wakes a blocked call when it
// passes or changes (net/http and quic-go interrupt reads by moving it
// into the past).
type deadline struct {
	mu      sync.Mutex
	passed  chan struct{} // closed once the deadline passed; nil: none
	changed chan struct{} // closed and replaced on every change
	timer   *time.Timer
}

// get returns the channels a call waits on.
func (d *deadline) get() (passed, changed <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	return d.passed, d.changed
}

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	switch until := time.Until(t); {
	case t.IsZero():
		d.passed = nil
	case until <= 0:
		ch := make(chan struct{})
		close(ch)
		d.passed = ch
	default:
		ch := make(chan struct{})
		d.passed = ch
		d.timer = time.AfterFunc(until, func() { close(ch) })
	}
	if d.changed != nil {
		close(d.changed)
	}
	d.changed = make(chan struct{})
}

func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
}

func (c *memConn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

func (c *memConn) Read(b []byte) (int, error) {
	for {
		closed := c.isClosed()
		passed, changed := c.dl.get()
		if closed {
			return 0, net.ErrClosed
		}
		c.r.mu.Lock()
		if c.r.off < len(c.r.buf) {
			n := copy(b, c.r.buf[c.r.off:])
			c.r.off += n
			if c.r.off == len(c.r.buf) {
				c.r.buf, c.r.off = c.r.buf[:0], 0
			}
			if c.r.window > 0 {
				c.r.signal() // room for a waiting writer
			}
			c.r.mu.Unlock()
			return n, nil
		}
		if c.r.eof {
			c.r.mu.Unlock()
			return 0, io.EOF
		}
		ready := c.r.ready
		c.r.mu.Unlock()
		select {
		case <-ready:
		case <-changed:
		case <-passed:
			return 0, os.ErrDeadlineExceeded
		}
	}
}

// Write appends b for the reader; on a direction with a window it waits
// for room, and returns early when the reader or this end closes or the
// write deadline passes.
func (c *memConn) Write(b []byte) (int, error) {
	n := 0
	for {
		closed := c.isClosed()
		passed, changed := c.wd.get()
		if closed {
			return n, net.ErrClosed
		}
		c.w.mu.Lock()
		if c.w.readerGone {
			c.w.mu.Unlock()
			return n, io.ErrClosedPipe
		}
		room := len(b) - n
		if c.w.window > 0 {
			room = min(room, c.w.window-(len(c.w.buf)-c.w.off))
		}
		if room > 0 {
			c.w.room(room)
			c.w.buf = append(c.w.buf, b[n:n+room]...)
			n += room
			c.w.signal()
		}
		if n == len(b) {
			c.w.mu.Unlock()
			return n, nil
		}
		ready := c.w.ready
		c.w.mu.Unlock()
		select {
		case <-ready:
		case <-changed:
		case <-passed:
			return n, os.ErrDeadlineExceeded
		}
	}
}

func (c *memConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.dl.stop()
	c.wd.stop()
	c.w.mu.Lock()
	c.w.eof = true
	c.w.signal()
	c.w.mu.Unlock()
	c.r.mu.Lock()
	c.r.readerGone, c.r.buf, c.r.off = true, nil, 0
	c.r.signal()
	c.r.mu.Unlock()
	return nil
}

func (c *memConn) SetReadDeadline(t time.Time) error {
	c.dl.set(t)
	return nil
}

func (c *memConn) SetWriteDeadline(t time.Time) error {
	c.wd.set(t)
	return nil
}

func (c *memConn) SetDeadline(t time.Time) error {
	c.dl.set(t)
	c.wd.set(t)
	return nil
}

func (c *memConn) LocalAddr() net.Addr  { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr { return memAddr{} }

type memAddr struct{}

func (memAddr) Network() string { return "memory" }
func (memAddr) String() string  { return "memory" }
