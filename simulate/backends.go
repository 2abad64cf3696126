package simulate

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
)

// Split is the side of a route's backends a request goes to.
type Split struct {
	// Upstream is the side's upstream ID and Side its index in the
	// route's backends.
	Upstream string `json:"upstream"`
	Side     int    `json:"side"`
	// Reason is a proxy.SplitReasonNames name: "weight", "sticky",
	// "forced" or "fallback"; Why says it for a person ("weight 90 of
	// 100", "sticky key cookie canary-side", "forced by header X-Canary:
	// always").
	Reason string `json:"reason"`
	Why    string `json:"why"`
}

// Mirror is whether a request would be copied to its route's mirror.
type Mirror struct {
	// Upstream is the mirror's upstream ID and Percent the share of the
	// route's requests it copies.
	Upstream string  `json:"upstream"`
	Percent  float64 `json:"percent"`
	// Copied is true when the request would be copied at the mirror's
	// percent (sampled at random per request, unless it is 100): its
	// body's declared length is within MaxBodyBytes (a body of unknown
	// length is copied only if it ends within it) and it is no upgrade.
	Copied       bool  `json:"copied"`
	MaxBodyBytes int64 `json:"maxBodyBytes"`
	// Reason says why, for a person.
	Reason string `json:"reason"`
}

// backendFacts are what the hand-over's target would do with the
// request: the split's side and the mirror.
type backendFacts struct {
	split   *Split
	side    *proxy.Route // the side's route
	mirror  *Mirror
	forward *Forward
}

// Forward is what a forwarded request would be sent with: the request
// target after the route's rewrite, and the route's time limits.
type Forward struct {
	// Target is the path and query the upstream would receive
	// ("/v2/items?x=1"); empty when the rewrite refuses the path, with
	// Status the answer (404).
	Target string `json:"target,omitempty"`
	Status int    `json:"status,omitempty"`
	// Rewritten reports whether the route's rewrite changes the target
	// (or refuses it): without, the request goes as the gate read it.
	Rewritten bool `json:"rewritten,omitempty"`
	// Request and PerTry are the route's timeouts (proxy.Timeouts), as Go
	// durations; empty for none.
	Request string `json:"request,omitempty"`
	PerTry  string `json:"perTry,omitempty"`
}

// forwardFacts asks the hand-over's target what it would send, while
// the gate's request is live: the path and query the route's rewrite
// makes (a split's side's, as its Forward would choose it, the counter
// left as it is) and the route's timeouts.
func forwardFacts(st *gate.Step, steps []gate.Step, r *http.Request) *Forward {
	if st.Route == nil {
		return nil
	}
	var pr *proxy.Route
	switch t := st.Route.Target.(type) {
	case *proxy.Route:
		pr = t
	case *proxy.Split:
		var client gate.Step
		for _, s := range steps {
			if s.Kind == gate.StepClient {
				client = s
			}
		}
		if c := t.Choose(r, client.Addr); c.Side >= 0 {
			pr = c.Route
		}
	}
	if pr == nil {
		return nil
	}
	f := &Forward{}
	path, query, status := pr.ForwardURL(r, st.Request)
	if status != 0 {
		f.Status, f.Rewritten = status, true
	} else {
		f.Target = path
		if query != "" {
			f.Target += "?" + query
		}
		f.Rewritten = path != st.Request.ForwardPath || query != r.URL.RawQuery
	}
	if tm := pr.Timeouts(); tm.Request > 0 || tm.PerTry > 0 {
		if tm.Request > 0 {
			f.Request = tm.Request.String()
		}
		if tm.PerTry > 0 {
			f.PerTry = tm.PerTry.String()
		}
	}
	return f
}

// forwardSummary says, for the hand-over step, what the route's rewrite
// and timeouts do to f; "" when neither does anything.
func forwardSummary(f *Forward) string {
	var parts []string
	switch {
	case f.Status != 0:
		parts = append(parts, "the rewrite refuses the path ("+strconv.Itoa(f.Status)+")")
	case f.Rewritten:
		parts = append(parts, "rewritten to "+f.Target)
	}
	switch {
	case f.Request != "" && f.PerTry != "":
		parts = append(parts, "timeouts: request "+f.Request+", perTry "+f.PerTry)
	case f.Request != "":
		parts = append(parts, "timeout: request "+f.Request)
	case f.PerTry != "":
		parts = append(parts, "timeout: perTry "+f.PerTry)
	}
	return strings.Join(parts, "; ")
}

// handOverFacts reads the split's choice and the mirror's decision for r
// off the hand-over's target, as its Forward would make them, and
// changes nothing: the weighted counter is read, not moved, and nothing
// is sent.
func handOverFacts(steps []gate.Step, r *http.Request) backendFacts {
	var b backendFacts
	n := len(steps)
	if n == 0 || steps[n-1].Kind != gate.StepHandOver || steps[n-1].Route == nil {
		return b
	}
	var pr *proxy.Route
	switch t := steps[n-1].Route.Target.(type) {
	case *proxy.Split:
		var client gate.Step
		for _, st := range steps {
			if st.Kind == gate.StepClient {
				client = st
			}
		}
		c := t.Choose(r, client.Addr)
		if c.Side < 0 {
			return b
		}
		b.split = &Split{Upstream: c.Upstream, Side: c.Side, Reason: c.Reason.String(), Why: c.Why}
		b.side, pr = c.Route, c.Route
	case *proxy.Route:
		pr = t
	}
	if pr != nil {
		if m := pr.Mirror(); m != nil {
			b.mirror = mirrorFacts(m, r)
		}
	}
	return b
}

func mirrorFacts(m *proxy.Mirror, r *http.Request) *Mirror {
	cfg := m.Config()
	f := &Mirror{Upstream: m.Upstream(), Percent: cfg.Percent, MaxBodyBytes: cfg.MaxBodyBytes, Copied: true}
	pct := strconv.FormatFloat(cfg.Percent, 'g', -1, 64) + "%"
	switch {
	case cfg.Percent == 0:
		f.Copied, f.Reason = false, "the mirror copies 0% of the requests"
	case r.Header.Get("Upgrade") != "" && r.ProtoMajor == 1:
		f.Copied, f.Reason = false, "an upgrade is never mirrored"
	case r.ContentLength > cfg.MaxBodyBytes:
		f.Copied, f.Reason = false, "the body of "+strconv.FormatInt(r.ContentLength, 10)+" bytes is over maxBodyBytes "+strconv.FormatInt(cfg.MaxBodyBytes, 10)+" (counted as tooLarge)"
	case cfg.Percent == 100:
		f.Reason = "every request is copied"
	default:
		f.Reason = pct + " of the requests are copied, sampled at random"
	}
	if f.Copied && r.ContentLength < 0 {
		f.Reason += "; a body of unknown length is copied if it ends within maxBodyBytes " + strconv.FormatInt(cfg.MaxBodyBytes, 10)
	}
	return f
}

func splitStep(sp *Split) Step {
	return Step{Kind: "split", Summary: "backend " + sp.Upstream + " (side " + strconv.Itoa(sp.Side) + "): " + sp.Why,
		Facts: map[string]string{"upstream": sp.Upstream, "reason": sp.Reason, "why": sp.Why}}
}

func mirrorStep(m *Mirror) Step {
	sum := "mirrored to " + m.Upstream + ": " + m.Reason
	if !m.Copied {
		sum = "not mirrored to " + m.Upstream + ": " + m.Reason
	}
	return Step{Kind: "mirror", Summary: sum + " (a simulation sends no copy)",
		Facts: map[string]string{"upstream": m.Upstream, "percent": strconv.FormatFloat(m.Percent, 'g', -1, 64), "copied": strconv.FormatBool(m.Copied),
			"maxBodyBytes": strconv.FormatInt(m.MaxBodyBytes, 10)}}
}
