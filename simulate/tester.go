package simulate

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"strings"
)

// T is the part of *testing.T a [Tester] uses.
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Tester checks a config's behaviour in a user's own go test, one call
// per case:
//
//	func TestGateway(t *testing.T) {
//		doc, err := config.Decode(configBytes)
//		...
//		gw := simulate.NewTester(t, simulate.DraftTarget(doc))
//		gw.Expect(simulate.Probe{URL: "https://app.example/admin", Peer: simulate.MustPeer("192.0.2.10")}, simulate.Want{Status: 403})
//		gw.Expect(simulate.Probe{URL: "https://api.example.com/v2/users"}, simulate.Want{Upstream: "v2"})
//	}
//
// A failed case reports what the request got instead, with the trace.
// A Tester is safe for concurrent use (parallel subtests may share one).
// Make it with [NewTester]: the zero Tester has no test to report to, and
// its Expect panics.
type Tester struct {
	t      T
	target Target
	res    *resolved
}

// NewTester returns a Tester for target. A draft is compiled once, as a
// publish would compile it; a store is read at each case. A draft a publish would refuse
// fails t at once with every problem.
func NewTester(t T, target Target) *Tester {
	t.Helper()
	res, err := target.resolve()
	if err != nil {
		t.Fatalf("%s", fatal(err))
		return nil
	}
	return &Tester{t: t, target: target, res: res}
}

// Want is what a request must get. Only the fields that are set are
// checked; at least one must be.
type Want struct {
	Kind     Kind
	Status   int
	Upstream string // the upstream's ID
	Route    string // the route's ID, or its prefix when it has none
	Policy   string // the policy that answered or dropped
	Location string // a redirect's target
	Host     string // the matched host's first name
	// Side is the upstream ID of the split's side (on a route with
	// backends) and SideReason why it was chosen: weight, sticky, forced
	// or fallback ([proxy.SplitReasonNames]).
	Side       string
	SideReason string
	// Mirror is the upstream ID of the route's mirror when the request
	// would be copied (sampled, or at the mirror's percent), or "none"
	// when it would not be (no mirror, an upgrade, a body over the
	// limit).
	Mirror string
}

// Expect runs probe and reports through t every way its outcome differs
// from want, with the trace. It returns the result (nil when the probe is
// refused, which fails t too).
func (x *Tester) Expect(probe Probe, want Want) *Result {
	x.t.Helper()
	name := probeName(&probe)
	if want == (Want{}) {
		x.t.Errorf("%s: a Want needs at least one field set", name)
		return nil
	}
	rq, err := probe.check()
	target := x.res
	if err == nil && x.target.Draft == nil {
		target, err = x.target.resolve() // the live gateway as it is now
	}
	var res *Result
	if err == nil {
		res, err = runResolved(context.Background(), &x.target, target, rq)
	}
	if err != nil {
		x.t.Errorf("%s: %v", name, err)
		return nil
	}
	if diff := want.diff(&res.Outcome); diff != "" {
		x.t.Errorf("%s: %s\n%s", name, diff, res.Describe())
	}
	return res
}

// diff returns how o differs from w, or "".
func (w *Want) diff(o *Outcome) string {
	var out []string
	check := func(what, got, want string) {
		if want != "" && got != want {
			out = append(out, what+" "+quoteOrNone(got)+", want "+strconv.Quote(want))
		}
	}
	check("kind", string(o.Kind), string(w.Kind))
	if w.Status != 0 && o.Status != w.Status {
		out = append(out, "status "+strconv.Itoa(o.Status)+", want "+strconv.Itoa(w.Status))
	}
	up := ""
	if o.Upstream != nil {
		up = o.Upstream.ID
	}
	check("upstream", up, w.Upstream)
	check("route", o.Route, w.Route)
	check("policy", o.Policy, w.Policy)
	check("location", o.Location, w.Location)
	check("host", o.Host, w.Host)
	side, why := "", ""
	if o.Split != nil {
		side, why = o.Split.Upstream, o.Split.Reason
	}
	check("side", side, w.Side)
	check("side reason", why, w.SideReason)
	mirror := "none"
	if m := o.Mirror; m != nil && m.Copied {
		mirror = m.Upstream
	}
	check("mirror", mirror, w.Mirror)
	return strings.Join(out, "; ")
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return strconv.Quote(s)
}

// probeName names a probe in messages: "GET https://a.example/x from
// 192.0.2.10".
func probeName(p *Probe) string {
	m := p.Method
	if m == "" {
		m = "GET"
	}
	s := m + " " + p.URL
	if p.Peer.IsValid() {
		s += " from " + p.Peer.Addr().String()
	}
	if p.ProxyProtocol.IsValid() {
		s += " (PROXY header for " + p.ProxyProtocol.Addr().String() + ")"
	}
	return s
}

// ParsePeer parses a peer address: an IP address with or without a port
// ("192.0.2.10", "192.0.2.10:4000", "[2001:db8::1]:443"); without one the
// port is 0, which a [Probe] takes as its default.
func ParsePeer(s string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(a, 0), nil
}

// MustPeer is [ParsePeer] for tests and examples: it panics on an error,
// like netip.MustParseAddr.
func MustPeer(s string) netip.AddrPort {
	ap, err := ParsePeer(s)
	if err != nil {
		panic(err)
	}
	return ap
}

// Describe returns the outcome and the trace for a person, one line each.
func (r *Result) Describe() string {
	var b strings.Builder
	o := &r.Outcome
	b.WriteString("outcome: " + string(o.Kind))
	if o.Status != 0 {
		b.WriteString(" " + strconv.Itoa(o.Status))
	}
	if o.Upstream != nil {
		b.WriteString(" to upstream " + o.Upstream.ID)
	}
	if o.Location != "" {
		b.WriteString(" to " + o.Location)
	}
	b.WriteString(" (" + o.Stage)
	if o.Policy != "" {
		b.WriteString(" " + o.Policy)
	}
	if o.Reason != "" {
		b.WriteString(": " + o.Reason)
	}
	b.WriteString(")\n")
	if o.Match != "" {
		b.WriteString("  route match: " + o.Match + "\n")
	}
	if sp := o.Split; sp != nil {
		b.WriteString("  split: " + sp.Upstream + ", " + sp.Why + "\n")
	}
	if m := o.Mirror; m != nil {
		if m.Copied {
			b.WriteString("  mirror: copied to " + m.Upstream + ", " + m.Reason + "\n")
		} else {
			b.WriteString("  mirror: not copied to " + m.Upstream + ", " + m.Reason + "\n")
		}
	}
	for _, h := range o.Headers {
		if h.Value != "" {
			b.WriteString("  header " + h.Name + ": " + h.Value + "\n")
		} else {
			b.WriteString("  header " + h.Name + " absent: " + h.Absent + "\n")
		}
	}
	b.WriteString("trace:\n")
	for i, st := range r.Trace {
		b.WriteString("  " + strconv.Itoa(i+1) + ". " + st.String() + "\n")
	}
	return b.String()
}

// fatal is the message of a target that cannot be tested: the error with
// the package's prefix, once ([DraftRefused] says it already).
func fatal(err error) string {
	var dr *DraftRefused
	if errors.As(err, &dr) {
		return err.Error()
	}
	return "simulate: " + err.Error()
}
