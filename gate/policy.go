package gate

import (
	"log/slog"
	"net/http"
	"strconv"
)

// Policy is one step of a host's or a route's chain. Evaluate must be safe
// for concurrent use and, on every path that does not return [Defer],
// allocate nothing. When rq.DryRun is set (the simulator), a stateful
// policy reports what it would do without changing its state, and an
// outbound one does not call out.
type Policy interface {
	// ID names the policy in traces, logs and counters.
	ID() string
	// Evaluate decides about one request. Host chains run before a route
	// is known: rq.Route is nil there.
	Evaluate(r *http.Request, rq *Request) Decision
}

// AsyncPolicy is a policy that may need to wait for something outside the
// process (forward-auth). When Evaluate returns [Defer], the gate calls
// Await on the request's goroutine and uses its decision instead. Await may
// allocate and block; it must respect r.Context().
type AsyncPolicy interface {
	Policy
	Await(r *http.Request, rq *Request) Decision
}

// Verdict is what a policy decided.
type Verdict uint8

const (
	// Continue passes the request to the next step.
	Continue Verdict = iota
	// Respond answers with the decision's page.
	Respond
	// Challenge answers with the decision's page, which asks the client to
	// prove something (401 with WWW-Authenticate, a proof-of-work page).
	Challenge
	// Drop closes the connection without an answer. The gate does it by
	// panicking with [http.ErrAbortHandler], which net/http (HTTP/1.1:
	// closes the connection; HTTP/2: resets the stream) and quic-go handle
	// without logging.
	Drop
	// Defer asks the gate to call the policy's Await (see [AsyncPolicy]).
	Defer
)

var verdictNames = [...]string{"continue", "respond", "challenge", "drop", "defer"}

// String returns the verdict's name.
func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return "invalid"
}

// Decision is a policy's small value answer. Page is required for Respond
// and Challenge; Reason is a constant string for the trace and logs.
type Decision struct {
	Verdict Verdict
	Page    *Page
	Reason  string
}

// Mode says how a chain runs a policy.
type Mode uint8

const (
	// Enforce applies the policy's decision (the zero value).
	Enforce Mode = iota
	// Shadow evaluates the policy, counts and logs what it would have
	// done, and continues.
	Shadow
	// Off skips the policy.
	Off
)

// PolicyUse places a policy in a chain.
type PolicyUse struct {
	Policy Policy
	Mode   Mode
}

// Page is a precomputed answer: status, headers and body, written with
// shared header values (no allocation). Build it once with [NewPage]: the
// zero Page has no status and is no answer (net/http panics on writing
// it).
type Page struct {
	status        int
	contentType   []string
	contentLength []string
	extra         []pageHeader
	body          []byte
}

type pageHeader struct {
	key   string
	value []string
}

// NewPage builds a page. contentType defaults to "text/plain;
// charset=utf-8"; header holds extra headers (Retry-After,
// WWW-Authenticate, Location, ...), canonicalised here.
func NewPage(status int, contentType string, body []byte, header http.Header) *Page {
	if contentType == "" {
		contentType = DefaultContentType
	}
	p := &Page{
		status:        status,
		contentType:   headerValue(contentType),
		contentLength: headerValue(strconv.Itoa(len(body))),
		body:          body,
	}
	for k, vs := range header {
		if len(vs) == 0 {
			continue
		}
		p.extra = append(p.extra, pageHeader{http.CanonicalHeaderKey(k), append([]string(nil), vs...)[:len(vs):len(vs)]})
	}
	return p
}

// statusPage is the default page of a status: "403 Forbidden\n".
func statusPage(status int, header http.Header) *Page {
	return NewPage(status, "", []byte(strconv.Itoa(status)+" "+http.StatusText(status)+"\n"), header)
}

// Status returns the page's status code.
func (p *Page) Status() int { return p.status }

// Body returns the page's body; it must not be modified.
func (p *Page) Body() []byte { return p.body }

func (p *Page) write(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Content-Type"] = p.contentType
	h["Content-Length"] = p.contentLength
	h["X-Content-Type-Options"] = nosniff
	for _, e := range p.extra {
		h[e.key] = e.value
	}
	w.WriteHeader(p.status)
	if r.Method != http.MethodHead {
		w.Write(p.body)
	}
}

var internalErrorPage = statusPage(http.StatusInternalServerError, nil)

// chain is a compiled policy chain.
type chain struct {
	scope   Scope
	uses    []PolicyUse
	metrics []*PolicyMetrics // by use, from the State
	passes  *chainPasses     // from the State; nil: each use counts its own
}

// run evaluates the chain. It returns the first enforced decision that is
// not Continue (with the policy's index), or Continue.
func (g *Gate) run(c *chain, r *http.Request, rq *Request) (Decision, int) {
	tr := rq.Tracer
	// While every use continues, the chain's one pass counts for them.
	pending := c.passes != nil && !rq.DryRun
	for i := range c.uses {
		u := &c.uses[i]
		if u.Mode == Off {
			if tr != nil {
				tr.OnStep(Step{Kind: StepPolicy, Scope: c.scope, Index: i, Name: u.Policy.ID(), Mode: Off, Reason: "off"})
			}
			continue
		}
		d := u.Policy.Evaluate(r, rq)
		if d.Verdict == Defer {
			if rq.DryRun {
				if tr != nil {
					tr.OnStep(Step{Kind: StepPolicy, Scope: c.scope, Index: i, Name: u.Policy.ID(), Mode: u.Mode, Verdict: Defer, Reason: d.Reason})
				}
				continue
			}
			if ap, ok := u.Policy.(AsyncPolicy); ok {
				d = ap.Await(r, rq)
			} else {
				d = Decision{Verdict: Respond, Page: internalErrorPage, Reason: "policy deferred without Await"}
			}
		}
		if tr != nil {
			tr.OnStep(Step{Kind: StepPolicy, Scope: c.scope, Index: i, Name: u.Policy.ID(), Mode: u.Mode, Verdict: d.Verdict, Reason: d.Reason, Status: d.status()})
		}
		if d.Verdict == Continue && pending {
			continue
		}
		if pending {
			c.countAllowed(i)
			pending = false
		}
		if !rq.DryRun {
			c.count(i, d, u.Mode == Shadow)
		}
		if d.Verdict == Continue {
			continue
		}
		if u.Mode == Shadow {
			g.shadowed(u.Policy, d, r, rq)
			continue
		}
		return d, i
	}
	if pending {
		c.passes.n.Inc()
	}
	return Decision{}, -1
}

func (d Decision) status() int {
	if d.Page != nil {
		return d.Page.status
	}
	return 0
}

// shadowed counts and logs a decision a shadowed policy would have taken.
func (g *Gate) shadowed(p Policy, d Decision, r *http.Request, rq *Request) {
	if rq.DryRun {
		return
	}
	g.state.counters.ShadowWouldBlock.Add(1)
	if g.logger != nil {
		g.logger.LogAttrs(r.Context(), slog.LevelInfo, "gate: shadowed policy would have blocked",
			slog.String("policy", p.ID()), slog.String("verdict", d.Verdict.String()),
			slog.Int("status", d.status()), slog.String("reason", d.Reason),
			slog.String("client", rq.Client.String()), slog.String("host", r.Host))
	}
}
