package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/upstream"
)

// Retry is a route's retry policy. The zero value retries only requests
// that never left (see [ConnectFailures]).
//
// A failed attempt is retried on another destination only when nothing of
// the request reached the upstream (the connection was refused, or the TLS
// handshake failed, before a byte of the body was read), or when the method
// is idempotent and the body can be replayed (none, or at most BodyLimit
// bytes, buffered before the first attempt). An attempt whose response
// header arrived is never retried, and neither is an upgrade.
//
// A budget keeps retries to a share of the route's live requests, so that
// they cannot multiply an outage: timeouts, the sign of an overloaded
// cluster, retry only within it. A request's first retry after its
// destination refused the connection or dropped it before answering does
// not count against the budget: a dead destination costs its siblings no
// more than the requests it was given, and one such retry per request
// bounds what a cluster that refuses everything can cost at twice its
// traffic. So one destination dying under load costs no idempotent
// request its answer.
type Retry struct {
	// Attempts is the most retries after the first attempt, 0 to 5.
	Attempts int
	// BodyLimit is the largest request body buffered to be replayed to
	// another destination, 0 to 1 MiB; 0 means 64 KiB. Larger or
	// unknown-length bodies are streamed and retried only when nothing
	// of them was read.
	BodyLimit int64
	// Budget is the share of the route's live requests that may be
	// retrying at once, in (0, 1]; 0 means 0.2. At least 3 retries may
	// always run.
	Budget float64
	// ConnectFailures says whether a request that failed before any byte
	// of it was written is sent to another destination; the zero value,
	// ConnectFailuresOn, does.
	ConnectFailures ConnectFailures
}

// ConnectFailures says whether a route retries the requests that never
// left: the attempt failed before any byte of the request was written
// (the connection was refused or reset while it was made, the connect
// timed out, the TLS handshake with the upstream or the PROXY header
// failed). Such a request is sent to another destination of the
// cluster, whatever its method and body, since no upstream saw any of
// it, and whatever [Retry.Attempts] says: Attempts governs requests that
// did leave. At most [MaxConnectRetries] such retries are made per
// request, never twice to one destination; the first costs no budget,
// the second takes a token of the route's budget (a share of the
// requests in flight to the cluster), so a cluster that refuses
// everything costs at most three connection attempts per request, each
// refused at once. A connect that timed out is not retried once every
// destination is out of rotation (panic mode): each retry would cost the
// client another connect timeout. The destination that refused is
// reported to the cluster's observer as [upstream.Observation.NotSent]:
// the health package takes it out of rotation at once. Whatever the
// retries, the connects of one request end within [ConnectWindow].
type ConnectFailures uint8

const (
	// ConnectFailuresOn retries requests that never left (the zero
	// value).
	ConnectFailuresOn ConnectFailures = iota
	// ConnectFailuresOff leaves them to [Retry.Attempts] (with it 0,
	// such a request is answered 502).
	ConnectFailuresOff
)

var connectFailuresNames = enum.Names[ConnectFailures]{"on", "off"}

// String returns "on" or "off".
func (c ConnectFailures) String() string { return connectFailuresNames.Name(c) }

// ParseConnectFailures returns the setting a name stands for.
func ParseConnectFailures(name string) (ConnectFailures, bool) {
	return connectFailuresNames.Parse(name)
}

// ConnectFailuresNames returns the names of the settings, the default
// first: the names a config document uses.
func ConnectFailuresNames() []string { return connectFailuresNames }

// MaxConnectRetries is the most retries of a request that never left:
// with the first attempt, three destinations are tried at most.
const MaxConnectRetries = 2

// ConnectWindow bounds the time one request spends connecting, in
// connect timeouts ([ClientConfig.ConnectTimeout]): from the start of
// its first attempt that never left, every later attempt's connect
// (retries under ConnectFailures and [Retry.Attempts] alike) ends within
// ConnectWindow connect timeouts, and no attempt is sent once less than
// MinConnectTimeout of it is left. Two is one connect that times out and
// another one elsewhere: a dark destination costs a client that fails
// over one connect timeout, and a cluster gone dark costs two, however
// many destinations and retries it has (10 s and 20 s by default). The
// request's own context and [Timeouts.Request] bound it further.
const ConnectWindow = 2

// MaxRetryAttempts bounds [Retry.Attempts].
const MaxRetryAttempts = 5

// DefaultRetryBodyLimit and DefaultRetryBudget are the defaults of [Retry].
const (
	DefaultRetryBodyLimit = 64 << 10
	DefaultRetryBudget    = 0.2
	minRetriesInFlight    = 3
)

// CheckRetry reports every problem of r, each a [ValidationError] with a
// path relative to r, joined, or nil.
func CheckRetry(r Retry) error {
	var errs problem.List
	if r.Attempts < 0 || r.Attempts > MaxRetryAttempts {
		errs.Add(CodeRetryAttemptsInvalid, "attempts", fmt.Sprintf("%d is not 0 to %d", r.Attempts, MaxRetryAttempts))
	}
	if r.BodyLimit < 0 || r.BodyLimit > 1<<20 {
		errs.Add(CodeRetryBodyLimitInvalid, "bodyLimit", fmt.Sprintf("%d is not 0 to 1048576 bytes", r.BodyLimit))
	}
	if !(r.Budget >= 0 && r.Budget <= 1) {
		errs.Add(CodeRetryBudgetInvalid, "budget", fmt.Sprintf("%v is not a share between 0 and 1", r.Budget))
	}
	if int(r.ConnectFailures) >= len(connectFailuresNames) {
		errs.Add(CodeRetryConnectFailuresUnknown, "connectFailures", "unknown setting "+r.ConnectFailures.String()+" (want "+connectFailuresNames.List()+")")
	}
	return errs.Err()
}

// retrier is a compiled Retry with its budget counters.
type retrier struct {
	attempts  int
	connect   bool // requests that never left are retried
	bodyLimit int64
	budget    float64
	live      atomic.Int64 // requests in flight on the route
	retrying  atomic.Int64 // retries in flight
}

func (rr *retrier) init(r Retry) {
	rr.attempts, rr.bodyLimit, rr.budget = r.Attempts, r.BodyLimit, r.Budget
	rr.connect = r.ConnectFailures == ConnectFailuresOn
	if rr.bodyLimit == 0 {
		rr.bodyLimit = DefaultRetryBodyLimit
	}
	if rr.budget == 0 {
		rr.budget = DefaultRetryBudget
	}
}

// acquire takes a retry from the budget, reporting false when spent.
func (rr *retrier) acquire() bool {
	n := rr.retrying.Add(1)
	limit := max(int64(float64(rr.live.Load())*rr.budget), minRetriesInFlight)
	if n > limit {
		rr.retrying.Add(-1)
		return false
	}
	return true
}

func (rr *retrier) release() { rr.retrying.Add(-1) }

// acquireConnect takes a retry of a request that never left from the
// budget, reporting false when spent. Its share is of the requests in
// flight to the cluster (the route counts its own only when it retries
// others), read on this failure path only.
func (rr *retrier) acquireConnect(m *upstream.Members) bool {
	live := rr.live.Load()
	var inFlight int64
	for _, d := range m.All {
		inFlight += d.InFlight()
	}
	n := rr.retrying.Add(1)
	if n > max(int64(float64(max(live, inFlight))*rr.budget), minRetriesInFlight) {
		rr.retrying.Add(-1)
		return false
	}
	return true
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// dropped reports whether a failed attempt ended at the connection: the
// destination refused it, or closed or reset it before any answer (it
// crashed, or is going away). A timeout is not: it is how overload shows.
func dropped(out upstream.Outcome, err error) bool {
	switch out {
	case upstream.ConnectError:
		return true
	case upstream.ResponseHeaderError:
		return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
			errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
	}
	return false
}

// retryable reports whether a failed attempt may be sent again.
func retryable(out upstream.Outcome, bodyTouched, replayable, idem bool) bool {
	switch out {
	case upstream.Success, upstream.ClientAbort, upstream.ClientBodyError, upstream.RequestInvalid:
		return false
	case upstream.ConnectError, upstream.TLSError:
		if !bodyTouched {
			return true
		}
	}
	return idem && replayable
}

// startConnectWindow starts the connect window of the request, whose
// attempt in flight never left: ConnectWindow connect timeouts from when
// that attempt was sent.
func (f *forward) startConnectWindow() {
	ct := DefaultConnectTimeout
	if t, ok := f.rt.cluster.Transport.(*Transport); ok {
		ct = connectTimeout(t.cfg)
	}
	f.connectBy = time.Now().Add(ConnectWindow*ct - (f.rq.Elapsed() - f.sent))
}

// connectWindowSpent reports whether the request's connect window leaves
// less than MinConnectTimeout: no other attempt is sent.
func (f *forward) connectWindowSpent() bool {
	return !f.connectBy.IsZero() && time.Until(f.connectBy) < MinConnectTimeout
}

// connectByKey is the context key of a request's connect deadline, for
// net/http's dialer: zero, or when the dial gives up.
type connectByKey struct{}

// withConnectBy sets the connect deadline of the outgoing request's
// net/http dial.
func (o *exchange) withConnectBy(t time.Time) {
	if tc, ok := o.req.Context().(*traceCtx); ok {
		tc.connectBy = t
	}
}

// connectBy bounds ctx by the connect deadline it carries, if any.
func connectBy(ctx context.Context) (context.Context, context.CancelFunc) {
	if t, ok := ctx.Value(connectByKey{}).(time.Time); ok && !t.IsZero() {
		return context.WithDeadline(ctx, t)
	}
	return ctx, func() {}
}

// reqBody is the outgoing request body: it streams the client's body,
// stamps activity on every read, records whether anything was read and
// whether the client's body failed (so the failure is the client's, never
// the destination's), fills the declared trailers at the end, and does not
// close the client's body, so that a connection that failed before reading
// can hand it to a retry. It is made per request with a body: the
// transport may still read it after RoundTrip returned.
type reqBody struct {
	src     io.Reader
	it      *idleTimer
	trIn    http.Header // the client's trailers, filled at its body's end
	trOut   http.Header // the declared trailers sent upstream
	touched atomic.Bool
	closed  atomic.Bool
	eof     atomic.Bool  // the client's body ended
	n       atomic.Int64 // bytes read
	failed  atomic.Pointer[bodyError]
}

type bodyError struct{ err error }

func (b *reqBody) Read(p []byte) (int, error) {
	b.touched.Store(true)
	n, err := b.src.Read(p)
	if n > 0 {
		b.it.touch()
		b.n.Add(int64(n))
	}
	switch {
	case err == io.EOF:
		b.eof.Store(true)
		copyTrailers(b.trOut, b.trIn)
	case err != nil && b.failed.Load() == nil:
		b.failed.Store(&bodyError{err})
	}
	return n, err
}

func (b *reqBody) Close() error { b.closed.Store(true); return nil }

// count notes the body bytes read so far in rec; b may be nil.
func (b *reqBody) count(rec *telemetry.Record) {
	if b != nil {
		rec.BytesIn = b.n.Load()
	}
}

// clientError returns the error the client's body failed with, or nil; b
// may be nil.
func (b *reqBody) clientError() error {
	if b == nil {
		return nil
	}
	if e := b.failed.Load(); e != nil {
		return e.err
	}
	return nil
}

// replayBody reads a body of known length up to limit into memory.
func replayBody(r *http.Request, limit int64) ([]byte, bool, error) {
	if r.Body == nil || r.ContentLength == 0 {
		return nil, true, nil
	}
	if r.ContentLength < 0 || r.ContentLength > limit {
		return nil, false, nil
	}
	buf := make([]byte, r.ContentLength)
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		return nil, false, err
	}
	return buf, true, nil
}

func newReplayReader(buf []byte) io.Reader { return bytes.NewReader(buf) }

// exclude returns available without the destinations already tried.
func exclude(available []*upstream.Destination, tried []*upstream.Destination) []*upstream.Destination {
	out := make([]*upstream.Destination, 0, len(available))
outer:
	for _, d := range available {
		for _, t := range tried {
			if d == t {
				continue outer
			}
		}
		out = append(out, d)
	}
	return out
}
