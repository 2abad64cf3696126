package proxy

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/h1client"
	"github.com/paduraksa/paduraksa/upstream"
)

// Forward sends the request to a destination of the route's cluster and
// copies the answer back. It answers 503 when the cluster has no available
// destination (or the affinity failure policy says so), 502 when the
// destination cannot be reached or answers garbage, 504 when it times out,
// 404 for a path a stripping route does not cover. A request body the
// client failed to deliver (malformed or cut chunks, shorter than its
// Content-Length, below the minimum rate, over the body limit) is answered
// 400, 408 or 413 with the connection closed, and never held against the
// destination. A request the outgoing client refuses to send for what it
// holds (an upgrade HTTP/2 cannot carry, more header bytes than the
// upstream takes, and the rest unsendable.go lists) is answered 400 or
// 431 and never held against the destination either. A client that went
// away is a client abort: the destination is not blamed and the handler
// aborts (http.ErrAbortHandler), so net/http never completes the exchange
// with an answer of its own.
func (rt *Route) Forward(w http.ResponseWriter, r *http.Request, rq *gate.Request) {
	rq.Record.Upstream = rt.cluster.Upstream.ID()
	rid := rt.requestID(w, r, rq)
	path, status := rt.forwardPath(r, rq)
	if status != 0 {
		rt.answer(w, r, rq, status)
		return
	}
	o := exchangePool.Get().(*exchange)
	defer o.finish()
	if rt.cluster.Limits.MaxInFlight > 0 && !o.admit(rt.cluster) {
		// No defer of its own: one more would make Forward's defers
		// stack-allocated instead of open-coded (about 10 % of
		// BenchmarkForwardOwn). finish releases the admission.
		rt.overloaded(w, r, rq, LimitInFlight)
		return
	}
	f := forward{o: o, rt: rt, w: w, r: r, rq: rq, rid: rid}
	d, status := f.pick()
	if status != 0 {
		rt.answer(w, r, rq, status)
		return
	}
	f.prepare(path)
	rt.rw.rewriteQuery(&f)
	if f.retrying {
		rt.retry.live.Add(1)
		defer rt.retry.live.Add(-1)
	}
	if !f.startTimeouts() || !f.setBody() {
		return
	}
	if rt.mirror != nil {
		defer f.mirror().end(&rq.Record)
	}
	o.idle.start(rt.cluster.idle(), w)
	o.info.start(w, r)
	if res, d := f.attempts(d); res != nil {
		f.relay(res, d)
	}
}

// forward is what one forward keeps beside its pooled exchange. It lives
// on Forward's stack: storing it costs no write barrier, and nothing of
// it needs clearing, since nothing of it outlives the call.
type forward struct {
	o       *exchange
	rt      *Route
	w       http.ResponseWriter
	r       *http.Request
	rq      *gate.Request
	upgrade string   // the protocol the client asks to switch to, or ""
	rid     []string // the request ID sent, or nil

	members     *upstream.Members
	policy      balance.Policy
	in          balance.Input
	setAffinity bool // the affinity's cookie is to be set on the answer
	tried       [MaxRetryAttempts + MaxConnectRetries + 1]*upstream.Destination
	ntried      int
	nunsent     int           // retries of attempts that never left
	sent        time.Duration // when the attempt in flight was sent (gate.Request.Elapsed)
	connectBy   time.Time     // the connects of the attempts end by then; zero until one never left
	conns       int           // net/http's connections taken before the attempt
	direct      bool          // the attempt went through the direct client
	retrying    bool          // the route retries, and this is no upgrade
	idem        bool          // the method is idempotent
	replayable  bool          // the body can be sent again: none, or replay
	replay      []byte        // the body, buffered to be replayed
	body        *reqBody
	retryHeld   bool // a retry counted against Limits.MaxRetriesInFlight
}

// requestID returns the request ID the route's site sends and sets on
// the answer, or nil when the client's is passed on.
func (rt *Route) requestID(w http.ResponseWriter, r *http.Request, rq *gate.Request) []string {
	if rt.site == nil || rt.site.requestID == RequestIDPass {
		return nil
	}
	return rt.setRequestID(w, r, rq)
}

func (rt *Route) setRequestID(w http.ResponseWriter, r *http.Request, rq *gate.Request) []string {
	rid := rt.site.requestIDValue(r)
	w.Header()["X-Request-Id"] = rid
	rq.Record.RequestID = rid[0]
	return rid
}

// ForwardURL returns the path and the raw query rq would be sent
// upstream with: the route's rewrite of the path (its prefix stripped,
// added or replaced, its template filled, or the whole path replaced)
// and of the query applied. For a path the rewrite refuses it returns
// the status Forward would answer (404) instead. It sends and changes
// nothing: a simulation asks it at the gate's hand-over
// ([gate.Step.Request]).
func (rt *Route) ForwardURL(r *http.Request, rq *gate.Request) (path, rawQuery string, status int) {
	path, status = rt.forwardPath(r, rq)
	if status != 0 {
		return "", "", status
	}
	rawQuery = r.URL.RawQuery
	if rt.rw.query.active {
		rawQuery = rt.rw.query.apply(rawQuery)
	}
	return path, rawQuery, 0
}

// forwardPath returns the path to send, the route's rewrite applied, or
// the status of a path it refuses.
func (rt *Route) forwardPath(r *http.Request, rq *gate.Request) (string, int) {
	if p := rq.ForwardPath; p != "" && !rt.rw.active {
		return p, 0 // the gate's, as it is
	}
	return rt.rewritePath(r, rq)
}

func (rt *Route) rewritePath(r *http.Request, rq *gate.Request) (string, int) {
	path, view := rq.ForwardPath, rq.Path
	if path == "" {
		// Not decided by a gate: read the path the way a gate would.
		v, err := gate.ReadPath(gate.RequestPath(r))
		if err != nil || v.Needs != 0 {
			return "", http.StatusBadRequest
		}
		path, view = v.Forward, v.Match
	}
	if !rt.rw.active {
		return path, 0
	}
	return rt.rw.apply(path, view, rq)
}

// pick notes what the forward asks and chooses the destination: the
// affinity's, else the cluster's policy's among the available ones; 503
// when there is none, or the affinity's failure policy says so.
func (f *forward) pick() (*upstream.Destination, int) {
	c, r, rec := f.rt.cluster, f.r, &f.rq.Record
	f.upgrade = upgradeType(r)
	f.retrying = f.rt.retry.attempts > 0 && f.upgrade == ""
	f.idem = idempotent(r.Method)
	f.members = c.Upstream.Members()
	if f.policy = c.Policy; f.policy == nil {
		f.policy = defaultPolicy
	}
	f.in = balance.Input{Request: r, Client: f.rq.Client}
	var d *upstream.Destination
	if c.Affinity != nil {
		var ast balance.AffinityStatus
		if d, ast = c.Affinity.Find(r, f.members); ast == balance.AffinityFailed {
			rec.Error = "affinityFailed"
			return nil, http.StatusServiceUnavailable
		}
		f.setAffinity = ast.NeedsSet()
	}
	if d == nil {
		d = f.policy.Pick(f.in, f.members.Available)
	}
	if d == nil {
		rec.Error = "noDestination"
		return nil, http.StatusServiceUnavailable
	}
	return d, 0
}

// setBody sets the outgoing body: the client's, streamed through a
// reqBody, or, on a retrying route with an idempotent method, buffered up
// to the limit so that it can be replayed. A body the client failed to
// deliver is answered here, and setBody reports false.
func (f *forward) setBody() bool {
	f.replayable = f.o.req.Body == nil
	if f.retrying && f.idem && f.o.req.Body != nil {
		buf, ok, err := replayBody(f.r, f.rt.retry.bodyLimit)
		if err != nil {
			f.rt.clientBodyFailed(f.w, f.r, f.rq, err)
			return false
		}
		f.replay, f.replayable = buf, ok
		f.rq.Record.BytesIn = int64(len(buf))
	}
	if f.o.req.Body != nil && f.replay == nil {
		f.body = &reqBody{src: f.r.Body, it: &f.o.idle, trIn: f.r.Trailer, trOut: f.o.req.Trailer}
		f.o.req.Body = f.body
	}
	return true
}

// attempts sends the request to d and, as the route's Retry allows, to
// other destinations. It returns the response and the destination that
// gave it, or answers the failure itself and returns nil.
func (f *forward) attempts(d *upstream.Destination) (*http.Response, *upstream.Destination) {
	token := false // a retry budget token held by the attempt in flight
	for n := 0; ; n++ {
		res, err := f.attempt(d, n)
		if token {
			f.rt.retry.release()
			token = false
		}
		f.endRetry()
		if err == nil {
			return res, d
		}
		if l := overload(err, f.r.Context().Err() != nil); l != numLimits {
			f.o.stop()
			f.body.count(&f.rq.Record)
			f.rt.overloaded(f.w, f.r, f.rq, l)
			return nil, nil
		}
		out, unsent, answered := f.failed(d, err)
		if answered {
			return nil, nil
		}
		if unsent && f.connectBy.IsZero() {
			f.startConnectWindow()
		}
		var next *upstream.Destination
		if next, token = f.retryTarget(n, out, err, unsent); next == nil {
			f.answerFailure(out)
			return nil, nil
		}
		d = next
	}
}

// attempt sends the request to d, the n-th destination tried, and
// records it; the destination's in-flight count is released unless a
// response came.
func (f *forward) attempt(d *upstream.Destination, n int) (*http.Response, error) {
	rq, rec := f.rq, &f.rq.Record
	if f.replay != nil {
		f.o.req.Body = io.NopCloser(newReplayReader(f.replay))
	}
	f.target(d)
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(gate.Step{Kind: gate.StepForward, Name: d.ID(), Reason: d.Host()})
	}
	d.Begin()
	sent := rq.Elapsed()
	f.sent = sent
	if n == 0 {
		rec.Gate = sent
	}
	rec.Destination, rec.Retries = d.ID(), n
	f.conns, f.direct = f.o.conns, false
	err := f.armTry()
	var res *http.Response
	if err == nil {
		res, err = f.tryReturned(f.send(d))
	}
	if err != nil {
		d.End()
		return nil, err
	}
	rec.TTFB = rq.Elapsed() - sent
	d.Metrics().TTFB.Observe(rec.TTFB)
	return res, nil
}

// failed classifies an attempt at d that failed with err, counts it and,
// unless it is the client's, reports it to the cluster's observer;
// unsent reports that nothing of the request was written. A failure of
// the client's body, or a refusal of what the request holds, is answered
// here (answered reports it): the destination did nothing wrong, and no
// other would do better.
func (f *forward) failed(d *upstream.Destination, err error) (out upstream.Outcome, unsent, answered bool) {
	rt, w, r, rq := f.rt, f.w, f.r, f.rq
	if berr := f.clientBodyError(); berr != nil {
		f.o.stop()
		rt.clientBodyFailed(w, r, rq, berr)
		return upstream.ClientBodyError, false, true
	}
	out = upstream.ClassifyRoundTrip(r.Context(), err)
	if f.o.dl.hasFired() {
		out = upstream.Timeout
	}
	if status := f.refusal(d, out, err); status != 0 {
		f.o.stop()
		f.body.count(&rq.Record)
		rt.requestRefused(w, r, rq, status)
		return upstream.RequestInvalid, false, true
	}
	if f.o.idle.hasFired() {
		out = upstream.Timeout
	}
	if !out.ClientSide() {
		if unsent = f.unsent(out, err); unsent && out == upstream.ResponseHeaderError {
			out = upstream.TLSError // the handshake broke off
		}
	}
	d.Metrics().Count(out)
	if !out.ClientSide() {
		rt.cluster.observe(upstream.Observation{Destination: d, Outcome: out, NotSent: unsent})
	}
	f.tried[f.ntried] = d
	f.ntried++
	return out, unsent, false
}

// unsent reports whether an attempt that failed with out and err never
// wrote a byte of the request: the direct client could not connect, or
// net/http's client (or the cluster's own round tripper) failed to
// connect, to time out connecting or to shake hands without taking a
// connection for the request (no GotConn), which it writes on nothing
// else. A connection net/http took and lost counts as written, even when
// it then failed to dial another one.
func (f *forward) unsent(out upstream.Outcome, err error) bool {
	if f.direct {
		var de *h1client.DialError
		return errors.As(err, &de)
	}
	switch out {
	case upstream.ConnectError, upstream.Timeout:
	case upstream.TLSError:
		if errors.Is(err, errTooManyNames) {
			return false // no handshake was tried: the cluster's limit
		}
	default:
		return false
	}
	return f.o.conns == f.conns && (f.body == nil || !f.body.touched.Load())
}

// refusal returns the status of a failure that is the outgoing client's
// refusal of what the request holds (see unsendable.go; the direct
// client refuses what net/http's does), or 0.
func (f *forward) refusal(d *upstream.Destination, out upstream.Outcome, err error) int {
	if out != upstream.ResponseHeaderError {
		return 0
	}
	return f.rt.refusal(&f.o.req, d.Scheme(), err)
}

// retryTarget returns the destination to try after the n-th attempt
// failed with out, and whether that retry holds a budget token; nil when
// the route's Retry allows no other attempt or no destination is left.
// An attempt that never left (unsent) is retried under ConnectFailures
// while it has retries left, else as Attempts allows; a connect that
// timed out is not, once every destination is out of rotation (panic):
// each retry would cost the client another connect timeout.
func (f *forward) retryTarget(n int, out upstream.Outcome, err error, unsent bool) (*upstream.Destination, bool) {
	rr := &f.rt.retry
	if f.o.dl.requestPassed() || f.connectWindowSpent() {
		return nil, false
	}
	if unsent && rr.connect && f.nunsent < MaxConnectRetries &&
		(out != upstream.Timeout || !f.rt.cluster.Upstream.Members().Panic) {
		return f.unsentTarget()
	}
	touched := f.body != nil && f.body.touched.Load()
	if !f.retrying || n-f.nunsent >= rr.attempts || !retryable(out, touched, f.replayable, f.idem) {
		return nil, false
	}
	free := n == 0 && dropped(out, err) // outside the budget
	if !free && !rr.acquire() {
		return nil, false
	}
	next := f.policy.Pick(f.in, exclude(f.members.Available, f.tried[:f.ntried]))
	if next == nil || !f.beginRetry() {
		if !free {
			rr.release()
		}
		return nil, false
	}
	if st := f.rt.cluster.Stats; st != nil {
		st.retries.Add(1)
	}
	return next, !free
}

// unsentTarget returns the destination to send a request that never
// left to, and whether the retry holds a budget token: the first such
// retry of a request holds none.
func (f *forward) unsentTarget() (*upstream.Destination, bool) {
	rr := &f.rt.retry
	token := f.nunsent > 0
	if token && !rr.acquireConnect(f.members) {
		return nil, false
	}
	// The members now, without the destinations that refused: health
	// took them out of the available set at once.
	next := f.policy.Pick(f.in, exclude(f.rt.cluster.Upstream.Members().Available, f.tried[:f.ntried]))
	if next == nil || !f.beginRetry() { // maxRetriesInFlight counts these too
		if token {
			rr.release()
		}
		return nil, false
	}
	f.nunsent++
	if st := f.rt.cluster.Stats; st != nil {
		st.retries.Add(1)
		st.unsent.Add(1)
	}
	return next, token
}

// answerFailure answers the last failed attempt: 502, 504 for a timeout,
// and nothing to a client that went away, whose handler is aborted.
func (f *forward) answerFailure(out upstream.Outcome) {
	passed := f.o.dl.requestPassed()
	f.o.stop()
	f.body.count(&f.rq.Record)
	f.rt.failed(f.w, f.r, f.rq, f.rt.cluster.Stats, out)
	f.noteTimeout(passed)
	if out == upstream.ClientAbort {
		panic(http.ErrAbortHandler)
	}
}

// relay copies the response from d to the client, then counts, observes
// and records how the exchange ended.
func (f *forward) relay(res *http.Response, d *upstream.Destination) {
	c, rq := f.rt.cluster, f.rq
	f.o.info.done()
	out, cut := f.complete(res, d)
	if out == upstream.BodyError && f.body.clientError() != nil {
		// The response was cut because the upload failed: the client's
		// doing, like an abort.
		out = upstream.ClientBodyError
	}
	f.body.count(&rq.Record)
	d.Metrics().Count(out)
	if out != upstream.Success {
		rq.Record.Error = out.String()
	}
	if out.ClientSide() {
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(gate.Step{Kind: gate.StepAnswer, Status: 499, Reason: out.String()})
		}
	} else {
		c.observe(upstream.Observation{Destination: d, Outcome: out, Status: res.StatusCode})
	}
	c.Stats.add(out)
	if cut {
		// The header is gone already: abort the client's stream so a
		// truncated body never looks complete.
		panic(http.ErrAbortHandler)
	}
}

// complete relays the response and releases the destination's in-flight
// count, whatever the response holds.
func (f *forward) complete(res *http.Response, d *upstream.Destination) (out upstream.Outcome, cut bool) {
	defer d.End()
	out, cut = f.respond(res, d)
	if fired := f.o.idle.stop(); fired && out != upstream.Success && out != upstream.ClientBodyError {
		out = upstream.Timeout
	}
	return out, cut
}

// observe reports an exchange to the cluster's observer.
func (c *Cluster) observe(o upstream.Observation) {
	if c.Observer != nil {
		c.Observer.Observe(o)
	}
}

// answer writes one of the gate's answers with the route's response rules.
func (rt *Route) answer(w http.ResponseWriter, r *http.Request, rq *gate.Request, status int) {
	rt.respRules.apply(w.Header())
	rq.Answer(w, r, status)
}

// failed answers a round trip that produced no response.
func (rt *Route) failed(w http.ResponseWriter, r *http.Request, rq *gate.Request, st *Stats, out upstream.Outcome) {
	st.add(out)
	rq.Record.Error = out.String()
	switch out {
	case upstream.ClientAbort:
		rq.Record.Status = 499
		// The client is gone: nobody reads an answer. Logged as 499.
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(gate.Step{Kind: gate.StepAnswer, Status: 499, Reason: out.String()})
		}
	case upstream.Timeout:
		rt.answer(w, r, rq, http.StatusGatewayTimeout)
	default:
		rt.answer(w, r, rq, http.StatusBadGateway)
	}
}

// requestRefused answers a request the outgoing client refused to send
// (see unsendable.go): 400, or 431 for a header list over the upstream's
// limit. It is counted as [upstream.RequestInvalid], never observed.
func (rt *Route) requestRefused(w http.ResponseWriter, r *http.Request, rq *gate.Request, status int) {
	rt.cluster.Stats.add(upstream.RequestInvalid)
	rq.Record.Error = upstream.RequestInvalid.String()
	rt.answer(w, r, rq, status)
}

// clientBodyFailed answers a request whose body the client failed to
// deliver: 413 over a limit, 408 too slow, 400 otherwise (malformed or cut
// chunks, shorter than its Content-Length), and closes an HTTP/1.x
// connection, whose framing is lost.
func (rt *Route) clientBodyFailed(w http.ResponseWriter, r *http.Request, rq *gate.Request, err error) {
	rt.cluster.Stats.add(upstream.ClientBodyError)
	rq.Record.Error = upstream.ClientBodyError.String()
	if r.ProtoMajor == 1 {
		w.Header()["Connection"] = connClose
	}
	rt.answer(w, r, rq, clientBodyStatus(err))
}

func clientBodyStatus(err error) int {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, gate.ErrBodyTooLarge), errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
}
