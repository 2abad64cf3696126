package simulate

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/redact"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// finish puts the trace in the gateway's order and reads the outcome off
// it: refusal is a stage that closed the connection, resp what came back.
func (s *sim) finish(refusal *Outcome, resp *http.Response) error {
	s.mu.Lock()
	steps, served, wrote, handOver, proto, accepted := s.steps, s.served, s.wrote, s.handOver, s.proto, s.accepted
	s.mu.Unlock()
	rq := s.rq
	if rq.version == 3 {
		accepted = true
	}
	var trace []Step
	stage := func(st Step) { trace = append(trace, st) }

	// The connection stage.
	pp := s.t.Listener.ProxyProtocol
	switch {
	case rq.version == 3:
	case len(pp.TrustedProxies) > 0 && refusal != nil && refusal.Stage == "proxyProtocol":
		stage(Step{Kind: "proxyProtocol", Summary: "connection from " + rq.peer.String() + " closed: " + refusal.Reason, Facts: map[string]string{"peer": rq.peer.String(), "reason": refusal.Reason}})
	case len(pp.TrustedProxies) > 0:
		stage(Step{Kind: "proxyProtocol", Summary: "PROXY header from trusted " + rq.peer.Addr().String() + " names the client " + rq.proxy.String(), Facts: map[string]string{"peer": rq.peer.String(), "source": rq.proxy.String()}})
	case rq.proxy.IsValid():
		stage(Step{Kind: "proxyProtocol", Summary: "the listener takes no PROXY header: the HTTP server reads it as the request", Facts: map[string]string{"peer": rq.peer.String(), "reason": "not expected"}})
	}
	if accepted {
		addr := rq.peer.Addr()
		if rq.proxy.IsValid() && len(pp.TrustedProxies) > 0 {
			addr = rq.proxy.Addr()
		}
		if refusal != nil && refusal.Stage == "connections" {
			stage(Step{Kind: "connections", Summary: addr.String() + " refused: " + refusal.Reason, Facts: map[string]string{"addr": addr.String(), "reason": refusal.Reason}})
		} else {
			stage(Step{Kind: "connections", Summary: addr.String() + " admitted (the per-address cap counts live connections, which a simulation does not see)", Facts: map[string]string{"addr": addr.String()}})
		}
	}
	switch {
	case s.hs != nil:
		stage(*s.hs)
	case refusal != nil && refusal.Stage == "handshake":
		stage(Step{Kind: "handshake", Summary: "refused: " + refusal.Reason, Facts: map[string]string{"sni": rq.sni, "reason": refusal.Reason}})
	}

	out := Outcome{Protocol: proto}
	switch {
	case refusal != nil:
		out = *refusal
	case !served && resp != nil:
		out = Outcome{Kind: ServerRefused, Stage: "server", Status: resp.StatusCode, Reason: "answered by the HTTP server before the gate"}
		stage(Step{Kind: "server", Summary: strconv.Itoa(resp.StatusCode) + " from the HTTP server: the request never reached the gate", Status: resp.StatusCode})
	case !served:
		out = Outcome{Kind: ServerRefused, Stage: "server", Reason: "the HTTP server closed the connection"}
		stage(Step{Kind: "server", Summary: out.Reason})
	}
	if !served {
		if out.Kind != ServerRefused {
			out.Header = nil
		} else if resp != nil {
			out.Header = wireHeader(resp.Header)
		}
		s.result = Result{Outcome: out, Trace: trace}
		return nil
	}

	var headerStep *gate.Step
	for i := range steps {
		st := &steps[i]
		step := gateStep(st)
		if st.Kind == gate.StepClient && rq.proxy.IsValid() && len(pp.TrustedProxies) > 0 {
			step.Summary = strings.Replace(step.Summary, "the peer itself", "the PROXY header's source", 1)
		}
		if f := s.backend.forward; st.Kind == gate.StepHandOver && f != nil {
			if sum := forwardSummary(f); sum != "" {
				step.Summary += ": " + sum
			}
			if step.Facts == nil {
				step.Facts = map[string]string{}
			}
			for k, v := range map[string]string{"target": f.Target, "timeoutRequest": f.Request, "timeoutPerTry": f.PerTry} {
				if v != "" {
					step.Facts[k] = v
				}
			}
			if f.Status != 0 {
				step.Facts["status"] = strconv.Itoa(f.Status)
			}
		}
		trace = append(trace, step)
		switch st.Kind {
		case gate.StepHost:
			out.HostMatch = st.Match.String()
			if st.Host != nil && len(st.Host.Names) > 0 {
				out.Host = st.Host.Names[0]
			}
		case gate.StepRoute:
			out.Match = strings.TrimPrefix(st.Reason, "no route: ")
			if st.Route != nil {
				out.Route = routeName(st.Route)
			}
		case gate.StepHeaders:
			headerStep = st
		}
	}
	s.decide(&out, steps)
	switch out.Kind {
	case Forwarded, Dropped:
		out.Header = wireHeader(handOver)
	default:
		if resp != nil {
			out.Header = wireHeader(resp.Header)
			out.Status = resp.StatusCode
		}
		if wrote != 0 && wrote != out.Status {
			// The recorder and the wire disagree: say so rather than pick.
			out.Reason += " (the gate wrote " + strconv.Itoa(wrote) + ")"
		}
	}
	out.Headers = headerFacts(out.Header, headerStep, out.Kind)
	if out.Kind == Forwarded {
		if rt := steps[len(steps)-1].Route; rt != nil {
			pr, _ := rt.Target.(*proxy.Route)
			if b := &s.backend; b.split != nil {
				out.Split = b.split
				pr = b.side
				trace = append(trace, splitStep(b.split))
			}
			if u, st := s.upstream(pr); u != nil {
				out.Upstream = u
				trace = append(trace, st)
				if cs, ok := s.upstreamConnection(rt, steps); ok {
					u.Connection = &cs.conn
					trace = append(trace, cs.step)
				}
			}
			out.Forward = s.backend.forward
			if m := s.backend.mirror; m != nil {
				out.Mirror = m
				trace = append(trace, mirrorStep(m))
			}
		}
	}
	s.result = Result{Outcome: out, Trace: trace}
	return nil
}

// decide reads the kind of outcome off the gate's last steps.
func (s *sim) decide(out *Outcome, steps []gate.Step) {
	if len(steps) == 0 {
		out.Kind, out.Stage = ServerRefused, "server"
		return
	}
	last := &steps[len(steps)-1]
	cause := last
	if last.Kind == gate.StepAnswer && len(steps) > 1 && last.Reason == "" {
		// rq.Answer reports the status after the step that chose it.
		cause = &steps[len(steps)-2]
	}
	out.Stage, out.Reason, out.Status = cause.Kind.String(), cause.Reason, cause.Status
	switch cause.Kind {
	case gate.StepHandOver:
		out.Kind, out.Reason, out.Status = Forwarded, "handed over to the route's target", 0
	case gate.StepDrop:
		out.Kind, out.Status = Dropped, 0
	case gate.StepRedirect:
		out.Kind, out.Location = Redirected, cause.Name
		if out.Reason == "" {
			out.Reason = "redirect host"
		}
	case gate.StepTLS:
		out.Kind = Misdirected
	case gate.StepRoute:
		out.Kind = NotFound
	case gate.StepAnswer:
		out.Kind = Answered
		if cause.Reason == "unknown host" {
			out.Kind, out.Stage = NotFound, "host"
		}
	default:
		out.Kind = Answered
	}
	// The policy that answered or dropped is the last policy step that
	// stopped the request.
	for i := len(steps) - 1; i >= 0; i-- {
		if st := &steps[i]; st.Kind == gate.StepPolicy && st.Mode == gate.Enforce && st.Verdict != gate.Continue && st.Verdict != gate.Defer {
			if (out.Kind == Answered || out.Kind == Dropped) && i >= len(steps)-3 {
				out.Policy, out.Stage = st.Name, "policy"
			}
			break
		}
	}
}

// wireHeader returns the response headers without Date, which only
// says when, and with credentials redacted.
func wireHeader(h http.Header) http.Header {
	if h == nil {
		return nil
	}
	h = h.Clone()
	delete(h, "Date")
	return redact.Header(h)
}

// headerFacts says, for each header of the response-headers step, what
// the answer carries or why it carries none.
func headerFacts(h http.Header, step *gate.Step, kind Kind) []HeaderFact {
	absent := map[string]string{}
	if step != nil {
		for _, f := range step.Headers {
			absent[f.Name] = f.Absent
		}
	}
	out := make([]HeaderFact, 0, 4)
	for _, name := range [...]string{"Server", "Alt-Svc", "Strict-Transport-Security", "X-Request-Id"} {
		if v := h[name]; len(v) > 0 {
			out = append(out, HeaderFact{Name: name, Value: v[0]})
			continue
		}
		why, ok := absent[name]
		switch {
		case name == "X-Request-Id":
			why = "the host keeps the client's (requestId pass)"
			if kind == Forwarded {
				why = "the host passes the upstream's (requestId pass)"
			}
		case !ok && step == nil:
			why = "answered before the response-headers stage"
		case why == "":
			why = "removed"
		}
		out = append(out, HeaderFact{Name: name, Absent: why})
	}
	return out
}

// upstream describes where a route forwards: the upstream, its
// destinations as the target's document names them, and each one's
// health now in the live gateway.
func (s *sim) upstream(pr *proxy.Route) (*Upstream, Step) {
	if pr == nil || pr.Cluster() == nil || pr.Cluster().Upstream == nil {
		return nil, Step{}
	}
	id := pr.Cluster().Upstream.ID()
	u := &Upstream{ID: id, Destinations: []Destination{}}
	var live *upstream.Cluster
	if s.res.live != nil {
		if c := s.res.live.Cluster(id); c != nil {
			live = c.Upstream
		}
	}
	switch {
	case live == nil && s.res.kind == kindDraft && s.res.live == nil:
		u.Note = "a draft's destinations have no health until it is published"
	case live == nil && s.res.kind == kindDraft:
		u.Note = "the live gateway has no upstream " + id + ": health unknown until the draft is published"
	case live == nil:
		u.Note = "the live gateway has no upstream " + id + ": health unknown"
	case s.res.kind == kindLive:
		u.Note = "live health"
	default:
		u.Note = "health of the live destinations with the same upstream ID, destination ID and address; the others are unknown"
	}
	var members *upstream.Members
	if live != nil {
		members = live.Members()
	}
	if doc := s.res.snap.Document(); doc != nil {
		for i := range doc.Upstreams {
			if doc.Upstreams[i].ID != id {
				continue
			}
			for _, d := range doc.Upstreams[i].Destinations {
				dst := Destination{ID: d.ID, Address: d.Address, Health: upstream.Unknown.String()}
				if ld := liveDestination(members, d); ld != nil {
					dst.Live, dst.Health = true, ld.Health().String()
					for _, a := range members.Available {
						if a == ld {
							dst.Available = true
						}
					}
				}
				if dst.Available {
					u.Available++
				}
				u.Destinations = append(u.Destinations, dst)
			}
		}
	}
	facts := map[string]string{"upstream": id, "available": strconv.Itoa(u.Available) + "/" + strconv.Itoa(len(u.Destinations)), "note": u.Note}
	sum := "upstream " + id + ": " + facts["available"] + " destinations available"
	for _, d := range u.Destinations {
		facts["destination."+d.ID] = d.Address + " " + d.Health
		sum += "; " + d.ID + " " + d.Address + " " + d.Health
	}
	return u, Step{Kind: "upstream", Summary: sum + " (" + u.Note + ")", Facts: facts}
}

// liveDestination returns the live member with d's ID and address, or nil.
func liveDestination(m *upstream.Members, d config.Destination) *upstream.Destination {
	if m == nil {
		return nil
	}
	scheme, host, err := config.ParseAddress(d.Address)
	if err != nil {
		return nil
	}
	for _, ld := range m.All {
		if ld.ID() == d.ID && ld.Scheme() == scheme && ld.Host() == host {
			return ld
		}
	}
	return nil
}
