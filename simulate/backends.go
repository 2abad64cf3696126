package simulate

import (
	"net/http"
	"strconv"

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
	split  *Split
	side   *proxy.Route // the side's route
	mirror *Mirror
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
