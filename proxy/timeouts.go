package proxy

import (
	"context"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/upstream"
)

// Timeouts are a route's time limits on the wait for an answer's head.
// The zero value sets none: a request waits as long as the cluster's
// client lets it (its ResponseHeaderTimeout, which the snapshot compiler
// sets to the idle timeout).
//
// Both end at the answer's head: a stream (a long body, server-sent
// events) or an upgraded connection whose head arrived in time is never
// cut by them, only by the cluster's idle timeout.
//
// What a timeout is held against: one that passes while the client's
// body is still being read (streamed to the upstream, or buffered to be
// replayed) is the client's, answered 408 with the connection closed and
// never observed, as a slow body is; any other is the attempt in
// progress's, whose destination was slow to answer: an [upstream.Timeout]
// outcome for its passive health, answered 504 when no other attempt
// follows.
//
// Cost: a route without timeouts runs no timer. With timeouts, each
// pooled exchange keeps one timer, made on its first use and re-armed per
// attempt, and each attempt sends with a context of its own that the
// timer cancels (a few small allocations a request).
type Timeouts struct {
	// Request bounds the time from the gate's start ([gate.Request.Start])
	// to the answer's head, retries included: past it the request is
	// answered 504 and not tried again (the access log's error is
	// requestTimeout). 0 means none.
	Request time.Duration
	// PerTry bounds each attempt, from when it is sent to its answer's
	// head. An attempt past it is an upstream.Timeout of its
	// destination; with the route's [Retry] on, an idempotent request
	// whose body can be replayed then moves to another destination (a
	// POST does not: it is answered 504). With Request, an attempt ends
	// at whichever passes first, and PerTry may not be longer than
	// Request. 0 means none.
	PerTry time.Duration
}

// CheckTimeouts reports every problem of t, each a [ValidationError] with
// a path relative to t, joined, or nil.
func CheckTimeouts(t Timeouts) error {
	var errs problem.List
	if t.Request < 0 {
		errs.Add(CodeTimeoutsRequestInvalid, "request", "negative (0 means none)")
	}
	switch {
	case t.PerTry < 0:
		errs.Add(CodeTimeoutsPerTryInvalid, "perTry", "negative (0 means none)")
	case t.Request > 0 && t.PerTry > t.Request:
		errs.Add(CodeTimeoutsPerTryInvalid, "perTry", t.PerTry.String()+" is longer than the request timeout, "+t.Request.String()+", which ends every attempt first")
	}
	return errs.Err()
}

// Timeouts returns the route's timeouts, as [NewRoute] was given them.
func (rt *Route) Timeouts() Timeouts { return rt.timeouts }

// firedBy says which timeout cut an attempt.
type firedBy uint8

const (
	notFired firedBy = iota
	byTry
	byRequest
)

// deadline runs a route's Timeouts for one pooled exchange: one timer,
// made on first use and kept with the exchange, armed for the earlier of
// the request's end and the attempt's, and stopped when the answer's head
// arrives. When it fires it cancels the attempt's context and, while the
// client's body is still being read, sets a past read deadline on the
// client's connection so the read ends (the idle timer does the same).
type deadline struct {
	mu      sync.Mutex // guards everything below
	t       *time.Timer
	armed   bool
	reqEnd  time.Duration // when the request timeout passes (since epoch); 0 none
	tryEnd  time.Duration // the same for the attempt in flight
	fired   firedBy       // what cut the attempt in flight, or the last one
	passed  bool          // the request timeout passed
	client  bool          // it fired while the client's body was being read
	reading bool          // the client's body is being read, and no reqBody says how far
	body    *reqBody      // the streamed body of the attempt in flight
	length  int64         // the client's Content-Length
	w       http.ResponseWriter
	cancel  context.CancelCauseFunc // the attempt's context; nil before the first
	spent   bool                    // cancel ran: the next attempt needs another context
}

// errTimedOut is the cause a timeout cancels an attempt's context with,
// and the error of an attempt it cut.
const errTimedOut = timeoutError("proxy: route timeout")

type timeoutError string

func (e timeoutError) Error() string { return string(e) }

// Outcome names the error's outcome for [upstream.ClassifyRoundTrip].
func (timeoutError) Outcome() upstream.Outcome { return upstream.Timeout }

func since() time.Duration { return time.Since(epoch) }

// startTimeouts arms the request timeout of a route that has one, before
// the client's body is read. It reports false when the request's time
// had passed already (spent in the gate), after answering 504.
func (f *forward) startTimeouts() bool {
	o, rt := f.o, f.rt
	if !rt.timed {
		return true
	}
	dl := &o.dl
	dl.mu.Lock()
	if dl.t == nil {
		dl.t = time.AfterFunc(time.Hour, dl.fire)
		dl.t.Stop()
	}
	now := since()
	dl.w, dl.length = f.w, f.r.ContentLength
	dl.reading = f.r.Body != nil && f.r.Body != http.NoBody && f.r.ContentLength != 0
	if d := rt.timeouts.Request; d > 0 {
		if st := f.rq.Start(); !st.IsZero() {
			d -= time.Since(st)
		}
		if d <= 0 {
			dl.passed, dl.fired = true, byRequest
			dl.mu.Unlock()
			rt.failed(f.w, f.r, f.rq, rt.cluster.Stats, upstream.Timeout)
			f.noteTimeout(true)
			return false
		}
		dl.reqEnd = now + d
	}
	dl.arm(now)
	dl.mu.Unlock()
	return true
}

// arm starts the timer for the earlier end, if any. dl.mu is held.
func (dl *deadline) arm(now time.Duration) {
	end := dl.reqEnd
	if dl.tryEnd != 0 && (end == 0 || dl.tryEnd < end) {
		end = dl.tryEnd
	}
	if end == 0 {
		dl.armed = false
		dl.t.Stop()
		return
	}
	dl.armed = true
	dl.t.Reset(max(end-now, 0))
}

// armTry starts the per-try timeout of an attempt about to be sent and
// gives the attempt a context the timer can cancel. It returns an error,
// and sends nothing, when the request timeout passed already.
func (f *forward) armTry() error {
	o, rt := f.o, f.rt
	if !rt.timed {
		return nil
	}
	dl := &o.dl
	dl.mu.Lock()
	defer dl.mu.Unlock()
	now := since()
	if dl.passed || (dl.reqEnd != 0 && now >= dl.reqEnd) {
		dl.passed, dl.fired = true, byRequest
		return errTimedOut
	}
	dl.fired, dl.client, dl.reading, dl.body = notFired, false, false, f.body
	dl.tryEnd = 0
	if d := rt.timeouts.PerTry; d > 0 {
		dl.tryEnd = now + d
	}
	if dl.cancel == nil || dl.spent {
		// The one outgoing request takes the attempt's context: a
		// context.CancelCauseFunc the timer calls, under the 1xx trace.
		ctx, cancel := context.WithCancelCause(f.r.Context())
		o.req = *o.req.WithContext(&traceCtx{Context: ctx, trace: &o.trace})
		dl.cancel, dl.spent = cancel, false
	}
	dl.arm(now)
	return nil
}

// tryReturned ends the per-try timeout of the attempt that returned res
// or err. Once an answer's head arrived no timeout runs any more; one
// that fired as it arrived wins: the response is closed and the attempt
// is a timeout.
func (f *forward) tryReturned(res *http.Response, err error) (*http.Response, error) {
	if !f.rt.timed {
		return res, err
	}
	dl := &f.o.dl
	dl.mu.Lock()
	fired := dl.fired != notFired
	dl.tryEnd, dl.body = 0, nil
	switch {
	case fired:
		dl.armed = false
		dl.t.Stop()
	case err == nil:
		dl.reqEnd, dl.armed = 0, false
		dl.t.Stop()
	default:
		dl.arm(since()) // the request's own end, between attempts
	}
	dl.mu.Unlock()
	if fired && err == nil {
		res.Body.Close()
		return nil, errTimedOut
	}
	return res, err
}

// fire runs on the timer's goroutine.
func (dl *deadline) fire() {
	dl.mu.Lock()
	defer dl.mu.Unlock()
	if !dl.armed {
		return
	}
	now := since()
	switch {
	case dl.reqEnd != 0 && now >= dl.reqEnd:
		dl.fired, dl.passed = byRequest, true
	case dl.tryEnd != 0 && now >= dl.tryEnd:
		dl.fired = byTry
	default:
		dl.arm(now) // early: a Reset raced this run
		return
	}
	dl.armed = false
	dl.client = dl.reading || (dl.body != nil && !dl.body.complete(dl.length))
	if dl.cancel != nil && !dl.spent {
		dl.cancel(errTimedOut)
		dl.spent = true
	}
	if dl.client && dl.w != nil {
		// The client's body read may be blocked: a past deadline ends it,
		// and the exchange answers 408.
		http.NewResponseController(dl.w).SetReadDeadline(time.Now())
	}
}

// stop disarms the timer and releases the last attempt's context; no
// fire runs for this exchange after it.
func (dl *deadline) stop() {
	if dl.t == nil {
		return
	}
	dl.mu.Lock()
	dl.t.Stop()
	if dl.cancel != nil && !dl.spent {
		dl.cancel(nil) // the attempt's context, done with
	}
	dl.armed, dl.reqEnd, dl.tryEnd, dl.fired, dl.passed, dl.client, dl.reading = false, 0, 0, notFired, false, false, false
	dl.body, dl.length, dl.w, dl.cancel, dl.spent = nil, 0, nil, nil, false
	dl.mu.Unlock()
}

// hasFired reports whether a timeout cut the last attempt.
func (dl *deadline) hasFired() bool {
	if dl.t == nil {
		return false
	}
	dl.mu.Lock()
	defer dl.mu.Unlock()
	return dl.fired != notFired
}

// requestPassed reports whether the request timeout passed: no attempt
// follows.
func (dl *deadline) requestPassed() bool {
	if dl.t == nil {
		return false
	}
	dl.mu.Lock()
	defer dl.mu.Unlock()
	return dl.passed || (dl.reqEnd != 0 && since() >= dl.reqEnd)
}

// clientBodyError returns the error the client's body failed with, or,
// when a timeout fired while it was still being read, the read
// deadline's: a slow body is the client's, whatever timer cut it.
func (f *forward) clientBodyError() error {
	if err := f.body.clientError(); err != nil {
		return err
	}
	dl := &f.o.dl
	if dl.t == nil {
		return nil
	}
	dl.mu.Lock()
	defer dl.mu.Unlock()
	if dl.fired != notFired && dl.client {
		return os.ErrDeadlineExceeded
	}
	return nil
}

// noteTimeout names a passed request timeout in the request's record.
func (f *forward) noteTimeout(passed bool) {
	if passed && f.rq.Record.Error == upstream.Timeout.String() {
		f.rq.Record.Error = "requestTimeout"
	}
}

// complete reports whether the client's body was read to its end:
// io.EOF seen, or as many bytes as its Content-Length.
func (b *reqBody) complete(length int64) bool {
	return b.eof.Load() || (length >= 0 && b.n.Load() >= length)
}
