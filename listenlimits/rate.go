package listenlimits

import (
	"errors"
	"io"
	"net/http"
	"os"
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
// it reads without a limit. A MinRateReader is used by the request's
// handler goroutine only, like the body it wraps.
type MinRateReader struct {
	body  io.ReadCloser
	rc    *http.ResponseController
	rate  float64 // bytes per second
	grace time.Duration
	start time.Time
	n     int64
	err   error
}

// NewMinRateReader wraps body, the body of the request w answers, with a
// minimum rate of bytesPerSecond after grace.
func NewMinRateReader(w http.ResponseWriter, body io.ReadCloser, bytesPerSecond int, grace time.Duration) *MinRateReader {
	return &MinRateReader{body: body, rc: http.NewResponseController(w), rate: float64(bytesPerSecond), grace: grace}
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
	allowed := max(r.grace, time.Duration(float64(r.n)/r.rate*float64(time.Second)))
	if r.rc != nil {
		if err := r.rc.SetReadDeadline(r.start.Add(allowed)); errors.Is(err, http.ErrNotSupported) {
			r.rc = nil // cannot enforce: read without a limit
		}
	}
	n, err := r.body.Read(p)
	r.n += int64(n)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		r.err = errors.Join(ErrTooSlow, err)
		return n, r.err
	default:
		r.err = err
		if r.rc != nil {
			_ = r.rc.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

// Close closes the body and clears the read deadline.
func (r *MinRateReader) Close() error {
	if r.rc != nil && r.err == nil {
		_ = r.rc.SetReadDeadline(time.Time{})
	}
	return r.body.Close()
}

// MinRateWriter wraps a ResponseWriter and enforces a minimum rate on each
// write that waits for the client: a Write of n bytes must be taken by the
// client within max(grace, n/rate). The deadline is set before, and
// cleared after, each Write and Flush, so a handler that pauses (an event
// stream, a long computation) is never judged for the pause. Data left in
// net/http's buffer when the handler returns is flushed without this
// limit.
//
// It exposes the wrapped ResponseWriter through Unwrap, so
// http.ResponseController (Flush, Hijack, deadlines) works through it; code
// that type-asserts http.Hijacker on the writer does not, which is why
// Handler never wraps requests that ask for an upgrade.
type MinRateWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	rate  float64
	grace time.Duration
}

// NewMinRateWriter wraps w with a minimum rate of bytesPerSecond per
// write, after grace.
func NewMinRateWriter(w http.ResponseWriter, bytesPerSecond int, grace time.Duration) *MinRateWriter {
	return &MinRateWriter{ResponseWriter: w, rc: http.NewResponseController(w), rate: float64(bytesPerSecond), grace: grace}
}

func (w *MinRateWriter) arm(n int) bool {
	d := max(w.grace, time.Duration(float64(n)/w.rate*float64(time.Second)))
	return w.rc.SetWriteDeadline(time.Now().Add(d)) == nil
}

func (w *MinRateWriter) disarm() { _ = w.rc.SetWriteDeadline(time.Time{}) }

// Write writes p under the rate's deadline.
func (w *MinRateWriter) Write(p []byte) (int, error) {
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

// Flush flushes buffered data under the rate's deadline (for a grace).
func (w *MinRateWriter) Flush() {
	armed := w.arm(0)
	_ = w.rc.Flush()
	if armed {
		w.disarm()
	}
}

// Unwrap returns the wrapped ResponseWriter, for http.ResponseController.
func (w *MinRateWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Handler returns next wrapped with l's minimum data rates (with
// defaults): the request body is read through a MinRateReader and the
// response written through a MinRateWriter. A request that asks for an
// upgrade is passed through unwrapped: an upgraded connection is judged by
// the proxy's idle timeout, not by data rates. Each judged request costs
// an allocation per wrapper; a rate that is off costs nothing.
func (l Limits) Handler(next http.Handler) http.Handler {
	r := l.WithDefaults()
	in, inGrace := on(r.MinRequestBodyRate), on(r.MinRequestBodyGrace)
	out, outGrace := on(r.MinResponseRate), on(r.MinResponseGrace)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Upgrade") != "" || req.Method == http.MethodConnect {
			next.ServeHTTP(w, req)
			return
		}
		if in > 0 && req.Body != nil && req.Body != http.NoBody {
			req.Body = NewMinRateReader(w, req.Body, in, inGrace)
		}
		if out > 0 {
			w = NewMinRateWriter(w, out, outGrace)
		}
		next.ServeHTTP(w, req)
	})
}
