package proxy

import (
	"errors"
	"io"
	"net/http"
	"os"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
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
	c := rt.cluster
	rec := &rq.Record
	rec.Upstream = c.Upstream.ID()
	var rid []string
	if rt.site != nil && rt.site.requestID != RequestIDPass {
		rid = rt.site.requestIDValue(r)
		w.Header()["X-Request-Id"] = rid
		rec.RequestID = rid[0]
	}
	path, view := rq.ForwardPath, rq.Path
	if path == "" {
		// Not decided by a gate: read the path the way a gate would.
		v, err := gate.ReadPath(gate.RequestPath(r))
		if err != nil || v.Needs != 0 {
			rt.answer(w, r, rq, http.StatusBadRequest)
			return
		}
		path, view = v.Forward, v.Match
	}
	if rt.rw.active {
		p, status := rt.rw.apply(path, view)
		if status != 0 {
			rt.answer(w, r, rq, status)
			return
		}
		path = p
	}
	up := upgradeType(r)

	m := c.Upstream.Members()
	var d *upstream.Destination
	var ast balance.AffinityStatus
	if c.Affinity != nil {
		if d, ast = c.Affinity.Find(r, m); ast == balance.AffinityFailed {
			rec.Error = "affinityFailed"
			rt.answer(w, r, rq, http.StatusServiceUnavailable)
			return
		}
	}
	policy := c.Policy
	if policy == nil {
		policy = defaultPolicy
	}
	in := balance.Input{Request: r, Client: rq.Client}
	if d == nil {
		d = policy.Pick(in, m.Available)
	}
	if d == nil {
		rec.Error = "noDestination"
		rt.answer(w, r, rq, http.StatusServiceUnavailable)
		return
	}

	o := exchangePool.Get().(*exchange)
	o.prepare(rt, r, rq, path, up, rid)

	// The body: streamed through a wrapper, or, on a retrying route with
	// an idempotent method, buffered up to the limit so it can be replayed.
	retrying := rt.retry.attempts > 0 && up == ""
	idem := idempotent(r.Method)
	replayable := o.req.Body == nil
	var replay []byte
	var rb *reqBody
	if retrying {
		rt.retry.live.Add(1)
		defer rt.retry.live.Add(-1)
		if idem && o.req.Body != nil {
			buf, ok, err := replayBody(r, rt.retry.bodyLimit)
			if err != nil {
				o.release()
				rt.clientBodyFailed(w, r, rq, err)
				return
			}
			replay, replayable = buf, ok
			rec.BytesIn = int64(len(buf))
		}
	}
	if o.req.Body != nil && replay == nil {
		rb = &reqBody{src: r.Body, it: &o.idle, trIn: r.Trailer, trOut: o.req.Trailer}
		o.req.Body = rb
	}

	o.idle.start(c.idle(), w)
	o.info.mu.Lock()
	o.info.w, o.info.received, o.info.relayed, o.info.http10 = w, 0, 0, r.ProtoMajor == 1 && r.ProtoMinor == 0
	o.info.mu.Unlock()

	var res *http.Response
	held := false
	tried := o.tried[:0]
	for attempt := 0; ; attempt++ {
		if replay != nil {
			o.req.Body = io.NopCloser(newReplayReader(replay))
		}
		o.target(rt, r, d)
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(gate.Step{Kind: gate.StepForward, Name: d.ID(), Reason: d.Host()})
		}
		d.Begin()
		sent := rq.Elapsed()
		if attempt == 0 {
			rec.Gate = sent
		}
		rec.Destination, rec.Retries = d.ID(), attempt
		var err error
		res, err = o.roundTripper(rt, r, d).RoundTrip(&o.req)
		if held {
			rt.retry.release()
			held = false
		}
		if err == nil {
			rec.TTFB = rq.Elapsed() - sent
			d.Metrics().TTFB.Observe(rec.TTFB)
			break
		}
		d.End()
		if berr := rb.clientError(); berr != nil {
			// The client's body failed, and the transport with it: the
			// destination did nothing wrong.
			o.info.done()
			o.idle.stop()
			rt.clientBodyFailed(w, r, rq, berr)
			return
		}
		out := upstream.ClassifyRoundTrip(r.Context(), err)
		if out == upstream.ResponseHeaderError {
			if status := rt.refusal(&o.req, d.Scheme(), err); status != 0 {
				// The outgoing client refused what the request holds:
				// the destination never saw it, and no other would.
				o.info.done()
				o.idle.stop()
				rb.count(rec)
				rt.requestRefused(w, r, rq, status)
				if rb == nil && r.Trailer == nil {
					o.release()
				}
				return
			}
		}
		if o.idle.hasFired() {
			out = upstream.Timeout
		}
		d.Metrics().Count(out)
		if !out.ClientSide() {
			c.observe(d, out, 0)
		}
		tried = append(tried, d)
		free := attempt == 0 && dropped(out, err) // outside the budget
		if retrying && attempt < rt.retry.attempts && retryable(out, rb != nil && rb.touched.Load(), replayable, idem) && (free || rt.retry.acquire()) {
			if next := policy.Pick(in, exclude(m.Available, tried)); next != nil {
				held = !free
				if c.Stats != nil {
					c.Stats.retries.Add(1)
				}
				d = next
				continue
			}
			if !free {
				rt.retry.release()
			}
		}
		o.info.done()
		o.idle.stop()
		rb.count(rec)
		rt.failed(w, r, rq, c.Stats, out)
		if rb == nil && r.Trailer == nil {
			o.release()
		}
		if out == upstream.ClientAbort {
			panic(http.ErrAbortHandler)
		}
		return
	}
	o.info.done()
	out, cut := rt.complete(w, r, rq, o, res, d, up, rid, ast.NeedsSet())
	if out == upstream.BodyError && rb.clientError() != nil {
		// The response was cut because the upload failed: the client's
		// doing, like an abort.
		out = upstream.ClientBodyError
	}
	rb.count(rec)
	d.Metrics().Count(out)
	if out != upstream.Success {
		rec.Error = out.String()
	}
	if out.ClientSide() {
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(gate.Step{Kind: gate.StepAnswer, Status: 499, Reason: out.String()})
		}
	} else {
		c.observe(d, out, res.StatusCode)
	}
	c.Stats.add(out)
	if out == upstream.Success && (rb == nil || rb.closed.Load()) && r.Trailer == nil {
		o.release()
	}
	if cut {
		// The header is gone already: abort the client's stream so a
		// truncated body never looks complete.
		panic(http.ErrAbortHandler)
	}
}

// complete relays the response and releases the destination's in-flight
// count, whatever the response holds.
func (rt *Route) complete(w http.ResponseWriter, r *http.Request, rq *gate.Request, o *exchange, res *http.Response, d *upstream.Destination, up string, rid []string, setAffinity bool) (out upstream.Outcome, cut bool) {
	defer d.End()
	out, cut = rt.respond(w, r, rq, o, res, d, up, rid, setAffinity)
	if fired := o.idle.stop(); fired && out != upstream.Success && out != upstream.ClientBodyError {
		out = upstream.Timeout
	}
	return out, cut
}

// observe reports an exchange to the cluster's observer; status is 0 when
// no response header arrived.
func (c *Cluster) observe(d *upstream.Destination, out upstream.Outcome, status int) {
	if c.Observer != nil {
		c.Observer.Observe(upstream.Observation{Destination: d, Outcome: out, Status: status})
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
