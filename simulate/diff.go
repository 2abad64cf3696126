package simulate

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/redact"
)

// DefaultMaxDiffProbes bounds the requests one [Diff] replays.
const DefaultMaxDiffProbes = 1000

// Change is one request whose decision differs between the base and the
// draft, with both results.
type Change struct {
	// Probe is the request, its credentials redacted.
	Probe Probe `json:"probe"`
	// Fields lists what changed: "kind", "host", "verdict" (a policy's
	// verdict, shadowed ones included), "route", "upstream", "status",
	// "location".
	Fields []string `json:"fields"`
	Before *Result  `json:"before"`
	After  *Result  `json:"after"`
}

// DiffReport is what a what-if found.
type DiffReport struct {
	// Compared counts the requests simulated against both.
	Compared int `json:"compared"`
	// Changes lists every request whose decision changes, in the order
	// of the requests.
	Changes []Change `json:"changes"`
	// Refused lists the requests that could not be simulated (a probe's
	// problem), with the reason.
	Refused []string `json:"refused,omitempty"`
}

// Diff simulates every probe against base and draft and reports each one
// whose decision changes: the host, a policy's verdict, the route, the
// upstream, the status (or the kind of outcome, or a redirect's
// Location). Probes past [DefaultMaxDiffProbes] are not simulated.
//
// The probes are typically a [Sample] of recent real requests. base is
// usually the live store and draft a Target with Draft set and Live set
// to that store, so destinations are compared on their live health. Give
// both targets the same Listener (or none, for sampled requests, whose
// peer is already the PROXY header's source when there was one).
//
// A draft a publish would refuse returns the refusal ([DraftRefused]);
// the draft is compiled once for all probes.
func Diff(base, draft Target, probes []Probe) (*DiffReport, error) {
	return DiffContext(context.Background(), base, draft, probes)
}

// DiffContext is [Diff] under ctx: when ctx ends, the simulation in
// progress stops and DiffContext returns the error [RunContext] returns,
// with no report. Both targets resolve (a draft compiles whole) before
// ctx is looked at.
func DiffContext(ctx context.Context, base, draft Target, probes []Probe) (*DiffReport, error) {
	rb, err := base.resolve()
	if err != nil {
		return nil, err
	}
	rd, err := draft.resolve()
	if err != nil {
		return nil, err
	}
	rep := &DiffReport{Changes: []Change{}}
	for i, p := range probes {
		if i == DefaultMaxDiffProbes {
			rep.Refused = append(rep.Refused, strconv.Itoa(len(probes)-i)+" requests past the limit of "+strconv.Itoa(DefaultMaxDiffProbes)+" not simulated")
			break
		}
		rq, err := p.check()
		if err != nil {
			rep.Refused = append(rep.Refused, probeName(&p)+": "+err.Error())
			continue
		}
		before, err := runResolved(ctx, &base, rb, rq)
		if err != nil {
			return nil, err
		}
		after, err := runResolved(ctx, &draft, rd, rq)
		if err != nil {
			return nil, err
		}
		rep.Compared++
		if fields := changed(&before.Outcome, &after.Outcome, before.Trace, after.Trace); len(fields) > 0 {
			p.Header = redact.Header(p.Header)
			rep.Changes = append(rep.Changes, Change{Probe: p, Fields: fields, Before: before, After: after})
		}
	}
	return rep, nil
}

// changed returns the fields of a decision that differ.
func changed(a, b *Outcome, ta, tb []Step) []string {
	var out []string
	up := func(o *Outcome) string {
		if o.Upstream == nil {
			return ""
		}
		return o.Upstream.ID
	}
	for _, f := range [...]struct {
		name string
		a, b string
	}{
		{"kind", string(a.Kind), string(b.Kind)},
		{"host", a.Host, b.Host},
		{"verdict", verdicts(ta), verdicts(tb)},
		{"route", a.Route, b.Route},
		{"upstream", up(a), up(b)},
		{"status", strconv.Itoa(a.Status), strconv.Itoa(b.Status)},
		{"location", a.Location, b.Location},
	} {
		if f.a != f.b {
			out = append(out, f.name)
		}
	}
	return out
}

// verdicts is the list of policy verdicts of a trace, in order.
func verdicts(trace []Step) string {
	var b strings.Builder
	for _, s := range trace {
		if s.Kind == "policy" {
			b.WriteString(s.Facts["scope"] + "/" + s.Facts["policy"] + "=" + s.Facts["verdict"] + ";")
		}
	}
	return b.String()
}

// Summary is one line for a log: how many requests were compared and how
// many change, by field.
func (r *DiffReport) Summary() string {
	count := map[string]int{}
	for _, c := range r.Changes {
		for _, f := range c.Fields {
			count[f]++
		}
	}
	s := "what-if: " + strconv.Itoa(r.Compared) + " requests compared, " + strconv.Itoa(len(r.Changes)) + " change"
	if len(count) > 0 {
		names := make([]string, 0, len(count))
		for k := range count {
			names = append(names, k)
		}
		slices.Sort(names)
		parts := make([]string, len(names))
		for i, k := range names {
			parts[i] = strconv.Itoa(count[k]) + " " + k
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	if len(r.Refused) > 0 {
		s += ", " + strconv.Itoa(len(r.Refused)) + " not simulated"
	}
	return s
}
