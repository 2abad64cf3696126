package listenlimits

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"
)

// ErrTooSlow is returned by MinRateReader and MinRateWriter when the client
// fell below the minimum data rate. The connection is unusable after it.
var ErrTooSlow = errors.New("listenlimits: client below the minimum data rate")

// MinRateReader wraps a request body and enforces a minimum average rate:
// once grace has passed since the first Read, the body must have delivered
// at least rate bytes for each second since then. Before each Read it sets
// the connection's read deadline (through http.ResponseController) to the
// moment the average would fall below the rate, so a stalled client is cut
// by the runtime's timer, with no goroutine or timer of its own.
//
// It works for HTTP/1.x and HTTP/2 (whose ResponseController sets a
// per-stream deadline). When the ResponseWriter cannot set read deadlines
// it reads without a limit. When that ResponseWriter is a MinRateWriter,
// the reader stops judging, and stops touching deadlines, once the
// request became an upgrade (see MinRateWriter). A MinRateReader is used
// by one goroutine at a time, like the body it wraps. Make it with
// [NewMinRateReader]: the zero MinRateReader wraps no body, and reading it
// panics.
type MinRateReader struct {
	body      io.ReadCloser
	rc        http.ResponseController
	unlimited bool         // rc cannot set read deadlines
	upgraded  *atomic.Bool // the MinRateWriter's, or nil
	armed     bool         // a deadline of ours is set
	rate      float64      // bytes per second
	grace     time.Duration
	start     time.Time
	n         int64
	err       error
}

// NewMinRateReader wraps body, the body of the request w answers, with a
// minimum rate of bytesPerSecond after grace.
func NewMinRateReader(w http.ResponseWriter, body io.ReadCloser, bytesPerSecond int, grace time.Duration) *MinRateReader {
	r := new(MinRateReader)
	r.init(w, body, bytesPerSecond, grace)
	return r
}

func (r *MinRateReader) init(w http.ResponseWriter, body io.ReadCloser, bytesPerSecond int, grace time.Duration) {
	*r = MinRateReader{body: body, rc: *http.NewResponseController(w), rate: float64(bytesPerSecond), grace: grace}
	if mw, ok := w.(*MinRateWriter); ok {
		r.upgraded = &mw.upgraded
	}
}

func (r *MinRateReader) judged() bool {
	return !r.unlimited && (r.upgraded == nil || !r.upgraded.Load())
}

// Read reads from the body under the rate's deadline. It returns an error
// wrapping ErrTooSlow when the deadline passes.
func (r *MinRateReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	if r.judged() {
		allowed := max(r.grace, time.Duration(float64(r.n)/r.rate*float64(time.Second)))
		if err := r.rc.SetReadDeadline(r.start.Add(allowed)); errors.Is(err, http.ErrNotSupported) {
			r.unlimited = true // cannot enforce: read without a limit
		} else if r.armed = true; !r.judged() {
			// The request became an upgrade while the deadline was set:
			// take it back.
			_ = r.rc.SetReadDeadline(time.Time{})
			r.armed = false
		}
	}
	n, err := r.body.Read(p)
	r.n += int64(n)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded) && r.armed:
		r.err = errors.Join(ErrTooSlow, err)
		return n, r.err
	default:
		r.err = err
		r.disarm()
	}
	return n, err
}

// disarm clears the read deadline this reader set, unless the request
// became an upgrade: the connection's deadlines are its new owner's then.
func (r *MinRateReader) disarm() {
	if r.armed && r.judged() {
		_ = r.rc.SetReadDeadline(time.Time{})
	}
	r.armed = false
}

// Close closes the body and clears the read deadline.
func (r *MinRateReader) Close() error {
	r.disarm()
	return r.body.Close()
}

// MinRateWriter wraps a ResponseWriter and enforces a minimum rate on each
// write that waits for the client: a Write of n bytes must be taken by the
// client within max(grace, n/rate). The deadline is set before, and
// cleared after, each Write and Flush, so a handler that pauses (an event
// stream, a long computation) is never judged for the pause. Data left in
// net/http's buffer when the handler returns is flushed without this
// limit. A rate <= 0 judges no write.
//
// Only a request that became an upgrade is exempt from the rates: Hijack
// ends all judging (of this writer and of a MinRateReader built on it)
// and clears the connection's deadlines before it returns it, so an
// upgraded tunnel never meets a deadline set for the request. Limits.Handler
// also ends it when the handler answers a CONNECT with a 2xx (on HTTP/2 the
// stream is the tunnel then).
//
// It implements http.Hijacker and http.Flusher through
// http.ResponseController, and Unwrap, so code that type-asserts either
// and http.ResponseController (deadlines, full duplex) both work through
// it. A MinRateWriter belongs to its request's handler, like the
// ResponseWriter it wraps; the end of judging is safe to observe from a
// goroutine reading the body. Make it with [NewMinRateWriter]: the zero
// MinRateWriter wraps no ResponseWriter, and writing it panics.
type MinRateWriter struct {
	http.ResponseWriter
	rc      http.ResponseController
	rate    float64
	grace   time.Duration
	connect bool // a CONNECT not answered yet: a 2xx upgrades it
	// server: ResponseWriter is net/http's own, HTTP/1.x or HTTP/2
	// (Limits.Handler made this writer). buffered counts the bytes
	// written since the last flush, past bufferedMax once net/http's
	// buffer may have filled (an int16 fits it beside the bools, so the
	// writer is no larger than without it).
	server   bool
	buffered int16
	upgraded atomic.Bool // the request became an upgrade
}

// bufferedMax is the smallest response buffer of net/http's servers: an
// HTTP/1.x response buffers 2 KiB before it writes to the connection, an
// HTTP/2 stream 4 KiB. Writes that add up to no more since the last flush
// are copies into that buffer and cannot wait for the client.
const bufferedMax = 2 << 10

// NewMinRateWriter wraps w with a minimum rate of bytesPerSecond per
// write, after grace.
func NewMinRateWriter(w http.ResponseWriter, bytesPerSecond int, grace time.Duration) *MinRateWriter {
	mw := new(MinRateWriter)
	mw.init(w, bytesPerSecond, grace)
	return mw
}

func (w *MinRateWriter) init(rw http.ResponseWriter, bytesPerSecond int, grace time.Duration) {
	w.ResponseWriter, w.rc = rw, *http.NewResponseController(rw)
	w.rate, w.grace = float64(bytesPerSecond), grace
}

func (w *MinRateWriter) arm(n int) bool {
	if w.rate <= 0 || w.upgraded.Load() {
		return false
	}
	d := max(w.grace, time.Duration(float64(n)/w.rate*float64(time.Second)))
	return w.rc.SetWriteDeadline(time.Now().Add(d)) == nil
}

func (w *MinRateWriter) disarm() { _ = w.rc.SetWriteDeadline(time.Time{}) }

// answered notes the status a CONNECT is answered with: after a 2xx the
// request is a tunnel.
func (w *MinRateWriter) answered(code int) {
	if !w.connect || code < 200 {
		return
	}
	w.connect = false
	if code < 300 && !w.upgraded.Swap(true) {
		// A MinRateReader may have a deadline set: the stream is the
		// tunnel's now.
		_ = w.rc.SetReadDeadline(time.Time{})
	}
}

// WriteHeader writes the status line and header.
func (w *MinRateWriter) WriteHeader(code int) {
	w.answered(code)
	w.ResponseWriter.WriteHeader(code)
}

// Write writes p under the rate's deadline.
func (w *MinRateWriter) Write(p []byte) (int, error) {
	w.answered(http.StatusOK)
	if w.server {
		if n := int(w.buffered) + len(p); n <= bufferedMax {
			w.buffered = int16(n)
			return w.ResponseWriter.Write(p)
		}
		w.buffered = bufferedMax + 1 // judged until a flush empties the buffer
	}
	if !w.arm(len(p)) {
		return w.ResponseWriter.Write(p)
	}
	n, err := w.ResponseWriter.Write(p)
	w.disarm()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = errors.Join(ErrTooSlow, err)
	}
	return n, err
}

// FlushError flushes buffered data under the rate's deadline (for a grace)
// and returns the error of the flush, wrapping ErrTooSlow when the client
// took longer.
func (w *MinRateWriter) FlushError() error {
	w.answered(http.StatusOK)
	armed := w.arm(0)
	err := w.rc.Flush()
	if armed {
		w.disarm()
	}
	if err == nil {
		w.buffered = 0 // net/http's buffer is empty again
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		err = errors.Join(ErrTooSlow, err)
	}
	return err
}

// Flush is FlushError without the error, for http.Flusher.
func (w *MinRateWriter) Flush() { _ = w.FlushError() }

// Hijack takes over the connection (http.ResponseController's Hijack of
// the wrapped ResponseWriter) and ends judging for the request, which
// became an upgrade. The connection comes with no read or write deadline.
func (w *MinRateWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := w.rc.Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.upgraded.Store(true)
	// net/http clears them at the hijack too; this one also covers a
	// MinRateReader's deadline set in between, on another goroutine.
	_ = c.SetDeadline(time.Time{})
	return c, brw, nil
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (w *MinRateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rateWriter is a MinRateWriter without Hijack, for a ResponseWriter that
// cannot hijack (HTTP/2, HTTP/3): code that asks whether it may hijack
// gets the wrapped writer's answer.
type rateWriter struct{ w *MinRateWriter }

func (r rateWriter) Header() http.Header         { return r.w.Header() }
func (r rateWriter) Write(p []byte) (int, error) { return r.w.Write(p) }
func (r rateWriter) WriteHeader(code int)        { r.w.WriteHeader(code) }
func (r rateWriter) Flush()                      { r.w.Flush() }
func (r rateWriter) FlushError() error           { return r.w.FlushError() }
func (r rateWriter) Unwrap() http.ResponseWriter { return r.w }

var (
	_ http.Hijacker = (*MinRateWriter)(nil)
	_ http.Flusher  = (*MinRateWriter)(nil)
	_ http.Flusher  = rateWriter{}
)

// Handler returns next wrapped with l's minimum data rates (with
// defaults): every request's body is read through a MinRateReader and its
// response written through a MinRateWriter, whatever it asks for. A
// request is exempt only once it became an upgrade: when the handler
// hijacks the connection (after which it writes the 101), or answers a
// CONNECT with a 2xx. An upgraded connection is judged by the proxy's
// idle timeout, not by data rates. A request that merely carries Upgrade
// or is CONNECT is judged like any other until then, so an Upgrade header
// cannot lift the rates from a slow body.
//
// Handler also enforces MaxUpgradedConnections: a request that asks for
// an upgrade (an HTTP/1.1 Upgrade with Connection: upgrade, or a CONNECT)
// holds one of the handler's places while next serves it, which for a
// request that became an upgrade is the tunnel's whole life, and is
// answered 503 with Retry-After when none is left.
//
// Over HTTP/1.x and HTTP/2, Handler counts on the ResponseWriter being
// net/http's own, as a server hands it over (edge's is): a Write that,
// with what was written since the last flush, stays within 2 KiB (the
// smallest of net/http's response buffers) only copies into that buffer
// and cannot wait for the client, so it sets no deadline. On HTTP/2 a
// deadline is two messages to the connection's goroutine and a timer, so
// a small answer written at once costs none of them. Writes past the
// buffer and flushes are judged as by MinRateWriter alone. Under a
// middleware that wraps the writer without buffering, use
// NewMinRateWriter there instead.
//
// The writer implements http.Hijacker only when the ResponseWriter it
// wraps does. Each request costs one allocation (both wrappers); with both
// rates and the upgrade cap off, Handler returns next.
func (l Limits) Handler(next http.Handler) http.Handler {
	r := l.WithDefaults()
	in, inGrace := on(r.MinRequestBodyRate), on(r.MinRequestBodyGrace)
	out, outGrace := on(r.MinResponseRate), on(r.MinResponseGrace)
	up := l.Upgrades()
	if in == 0 && out == 0 {
		if up.max <= 0 {
			return next
		}
		return up.handler(next)
	}
	rated := rateHandler(next, in, inGrace, out, outGrace)
	if up.max <= 0 {
		return rated
	}
	return up.handler(rated)
}

// handler wraps next with the cap on requests that ask for an upgrade.
func (u *Upgrades) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !asksUpgrade(req) {
			next.ServeHTTP(w, req)
			return
		}
		if !u.TryAcquire() {
			h := w.Header()
			h["Retry-After"] = retryAfter
			h["Content-Type"] = textPlain
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(tooManyUpgrades)
			return
		}
		defer u.Release()
		next.ServeHTTP(w, req)
	})
}

var (
	retryAfter      = []string{"1"}
	textPlain       = []string{"text/plain; charset=utf-8"}
	tooManyUpgrades = []byte("503 Service Unavailable: too many upgraded connections\n")
)

// asksUpgrade reports whether a request asks to become a tunnel: a
// CONNECT, or an HTTP/1.x request with an Upgrade field that Connection
// names.
func asksUpgrade(r *http.Request) bool {
	if r.Method == http.MethodConnect {
		return true
	}
	if r.ProtoMajor != 1 || len(r.Header["Upgrade"]) == 0 {
		return false
	}
	for _, v := range r.Header["Connection"] {
		for len(v) > 0 {
			var tok string
			tok, v, _ = strings.Cut(v, ",")
			if strings.EqualFold(strings.TrimSpace(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}

func rateHandler(next http.Handler, in int, inGrace time.Duration, out int, outGrace time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		j := new(struct {
			w MinRateWriter
			r MinRateReader
		})
		j.w.init(w, out, outGrace)
		// HTTP/3 (quic-go's writer) writes to its stream once the
		// headers are out: only net/http's own writers buffer.
		j.w.server = req.ProtoMajor < 3
		j.w.connect = req.Method == http.MethodConnect
		if in > 0 && req.Body != nil && req.Body != http.NoBody {
			j.r.init(&j.w, req.Body, in, inGrace)
			req.Body = &j.r
		}
		if _, ok := w.(http.Hijacker); ok {
			next.ServeHTTP(&j.w, req)
		} else {
			next.ServeHTTP(rateWriter{&j.w}, req)
		}
	})
}
