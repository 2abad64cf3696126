package gate

import (
	"net/http"
	"sync"
)

var requestPool = sync.Pool{New: func() any { return new(Request) }}

// ServeHTTP runs the decision pipeline for one request. Every decision
// comes from this Gate.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := requestPool.Get().(*Request)
	rq.gate, rq.Tracer = g, g.tracer
	rq.start = sinceEpoch()
	rq.rw.w = w
	rq.metrics = g.unknown
	defer g.finish(rq, r)
	g.decide(&rq.rw, r, rq)
	rq.returned = true
}

func (g *Gate) release(rq *Request) {
	kept := rq.kept
	*rq = Request{}
	rq.kept = kept
	requestPool.Put(rq)
}

// Simulate runs the same pipeline for the simulator: every step reports to
// tr, stateful policies only look (a rate limit takes no token), deferred
// policies are not called, a drop is traced but not carried out, no
// counter moves, and the route's target is not called: the hand-over step
// names it. Answers the gate gives itself are written to w.
func (g *Gate) Simulate(w http.ResponseWriter, r *http.Request, tr *Tracer) {
	if tr != nil && tr.OnStep == nil {
		tr = nil // a zero Tracer: nothing to report to
	}
	rq := requestPool.Get().(*Request)
	rq.gate, rq.Tracer, rq.DryRun = g, tr, true
	defer g.release(rq)
	g.decide(w, r, rq)
}

func (g *Gate) decide(w http.ResponseWriter, r *http.Request, rq *Request) {
	tr := rq.Tracer
	rq.Conn = ConnInfoFrom(r.Context())
	g.resolveClient(r, rq)
	if tr != nil {
		tr.OnStep(Step{Kind: StepClient, Addr: rq.Client, Peer: rq.Peer, Scheme: rq.Scheme, Reason: rq.ClientSource.String()})
	}

	// ACME HTTP-01, on plain HTTP, before everything else.
	if g.challenges != nil && r.TLS == nil && (rq.Conn == nil || !rq.Conn.HTTP3) {
		if t := acmeToken(r); t != "" {
			if p := g.challenges.lookup(t); p != nil {
				w.Header()["Server"] = g.defServer
				p.write(w, r)
				if tr != nil {
					tr.OnStep(Step{Kind: StepACME, Status: p.status, Name: t})
				}
				return
			}
		}
	}

	h, match, key := g.hosts.lookup(rq.keyBuf[:0], r.Host)
	rq.Match = match
	if tr != nil {
		tr.OnStep(Step{Kind: StepHost, Match: match, Name: r.Host, Host: h})
	}
	if h == nil {
		if g.answerHook != nil && !rq.DryRun && g.answerHook(w, r, rq, g.def.status) {
			return
		}
		g.def.write(w, r)
		if tr != nil {
			tr.OnStep(Step{Kind: StepAnswer, Status: g.def.status, Reason: "unknown host"})
		}
		return
	}
	rq.Host, rq.metrics = h, h.metrics
	hdr := w.Header()
	hdr["Server"] = h.server

	if reason := tlsCheck(h, r, rq); reason != "" {
		if tr != nil {
			tr.OnStep(Step{Kind: StepTLS, Status: http.StatusMisdirectedRequest, Reason: reason})
		}
		g.answer(w, r, rq, http.StatusMisdirectedRequest)
		return
	}
	if tr != nil && (r.TLS != nil || r.ProtoMajor == 3) {
		tr.OnStep(Step{Kind: StepTLS, Reason: "ok"})
	}
	g.responseHeaders(hdr, r, rq, h, key)

	if reason := unsendable(r); reason != "" {
		if tr != nil {
			tr.OnStep(Step{Kind: StepRequest, Status: http.StatusBadRequest, Reason: reason})
		}
		g.answer(w, r, rq, http.StatusBadRequest)
		return
	}
	view, err := readRequestPath(r)
	if err != nil {
		if tr != nil {
			tr.OnStep(Step{Kind: StepPath, Status: http.StatusBadRequest, Reason: err.Error()})
		}
		g.answer(w, r, rq, http.StatusBadRequest)
		return
	}
	rq.Path, rq.ForwardPath = view.Match, view.Forward
	removeOwned(r.Header, h.owned)
	if len(h.chain.uses) > 0 && g.applyChain(&h.chain, w, r, rq) {
		return
	}
	if status, reason := checkLimits(&h.Limits, r); status != 0 {
		if tr != nil {
			tr.OnStep(Step{Kind: StepLimits, Status: status, Reason: reason})
		}
		g.answer(w, r, rq, status)
		return
	}
	if h.httpsPage != nil && rq.Scheme == schemeHTTP {
		g.httpsRedirect(w, r, rq, h, key)
		return
	}
	if h.robots != nil && rq.Path == "/robots.txt" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		decorate(w, r, rq)
		h.robots.write(w, r)
		if tr != nil {
			tr.OnStep(Step{Kind: StepAnswer, Status: http.StatusOK, Reason: "robots.txt"})
		}
		return
	}

	switch h.Kind {
	case HostRedirect:
		g.hostRedirect(w, r, rq, h)
		return
	case HostFixed:
		decorate(w, r, rq)
		h.fixed.write(w, r)
		if tr != nil {
			tr.OnStep(Step{Kind: StepAnswer, Status: h.fixed.status, Reason: "fixed host"})
		}
		return
	}

	var rt *Route
	if h.table.only {
		rt = scanPlain(h.table.linear, rq.Path) // the common host, inlined
	} else {
		rt = h.table.match(rq.Path, r, rq)
	}
	if rt == nil {
		if tr != nil {
			near, why := explainMiss(h, rq.Path, r, rq)
			tr.OnStep(Step{Kind: StepRoute, Path: rq.Path, Status: http.StatusNotFound, Reason: why, Nearest: near})
		}
		g.answer(w, r, rq, http.StatusNotFound)
		return
	}
	rq.Route, rq.metrics = rt, rt.metrics
	if rt.matcher.class == classTemplate {
		rt.matcher.matchTemplate(rq.Path, &rq.keep().pathValues)
	}
	if tr != nil {
		tr.OnStep(Step{Kind: StepRoute, Path: rq.Path, Name: rt.ID, Reason: explainRoute(h, rt, rq.Path, r, rq), Route: rt})
	}
	if need := view.Needs &^ rt.PathAllow; need != 0 {
		if tr != nil {
			tr.OnStep(Step{Kind: StepPath, Status: http.StatusBadRequest, Reason: need.refusal()})
		}
		g.answer(w, r, rq, http.StatusBadRequest)
		return
	}
	removeOwned(r.Header, rt.owned)
	if len(rt.chain.uses) > 0 && g.applyChain(&rt.chain, w, r, rq) {
		return
	}
	if rt.answer != nil {
		rt.serveAnswer(w, r, rq) // a redirect or fixed route
		return
	}

	limit := rt.MaxBodyBytes
	if limit == 0 {
		limit = h.Limits.MaxBodyBytes
	}
	if limit > 0 {
		rq.MaxBodyBytes = limit
		if r.ContentLength > limit {
			if tr != nil {
				tr.OnStep(Step{Kind: StepLimits, Status: http.StatusRequestEntityTooLarge, Reason: "declared body over limit"})
			}
			g.answer(w, r, rq, http.StatusRequestEntityTooLarge)
			return
		}
		if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody && !rq.DryRun {
			// One allocation, only for bodies of unknown length.
			r.Body = &limitedBody{rc: r.Body, left: limit}
		}
	}

	if tr != nil {
		tr.OnStep(Step{Kind: StepHandOver, Name: rt.ID, Reason: rt.Prefix, Route: rt, Request: rq})
	}
	if rq.DryRun {
		return
	}
	rq.inFlight = true
	rt.metrics.InFlight.Add(1)
	rt.Target.Forward(w, r, rq)
}

// applyChain runs a chain and carries out its decision. It reports
// whether the request was answered (or dropped).
func (g *Gate) applyChain(c *chain, w http.ResponseWriter, r *http.Request, rq *Request) bool {
	d, _ := g.run(c, r, rq)
	switch d.Verdict {
	case Continue:
		return false
	case Drop:
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(Step{Kind: StepDrop, Reason: d.Reason})
		}
		if rq.DryRun {
			return true
		}
		g.state.counters.Dropped.Add(1)
		panic(http.ErrAbortHandler)
	}
	p := d.Page
	if p == nil {
		p = internalErrorPage
	}
	decorate(w, r, rq)
	p.write(w, r)
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepAnswer, Status: p.status, Reason: d.Reason})
	}
	return true
}

// answer writes one of the gate's own answers with the host's or the
// route's headers.
func (g *Gate) answer(w http.ResponseWriter, r *http.Request, rq *Request, status int) {
	decorate(w, r, rq)
	rq.Answer(w, r, status)
}

// decorate adds the matched route's headers, or the host's, to an answer
// the gate gives itself ([AnswerHeaders]).
func decorate(w http.ResponseWriter, r *http.Request, rq *Request) {
	var ah AnswerHeaders
	if rt := rq.Route; rt != nil && rt.answerHeaders != nil {
		ah = rt.answerHeaders
	} else if h := rq.Host; h != nil {
		ah = h.AnswerHeaders
	}
	if ah != nil {
		ah.SetAnswerHeaders(w.Header(), r)
	}
}

// responseHeaders applies stage 2: Alt-Svc on TCP HTTPS for HTTP/3 hosts,
// HSTS when the trusted scheme is HTTPS and the name is neither an IP
// literal nor a loopback name.
func (g *Gate) responseHeaders(hdr http.Header, r *http.Request, rq *Request, h *Host, key []byte) {
	if h.altSvc != nil && r.TLS != nil && r.ProtoMajor < 3 && (rq.Conn == nil || !rq.Conn.HTTP3) {
		hdr["Alt-Svc"] = h.altSvc
	}
	if h.hsts != nil && rq.Scheme == schemeHTTPS && !ipOrLoopback(key) {
		hdr["Strict-Transport-Security"] = h.hsts
	}
	if tr := rq.Tracer; tr != nil {
		traceHeaders(tr, hdr, r, rq, h, key)
	}
}

// ipOrLoopback reports whether a host key is an IP literal, localhost or
// a name under localhost.
func ipOrLoopback(key []byte) bool {
	s := key
	if len(s) == 0 {
		return true
	}
	ip := true
	for _, c := range s {
		if c == ':' {
			return true // IPv6 literal
		}
		if (c < '0' || c > '9') && c != '.' {
			ip = false
		}
	}
	if ip {
		return true
	}
	const lh = "localhost"
	return string(s) == lh || (len(s) > len(lh) && string(s[len(s)-len(lh)-1:]) == "."+lh)
}
