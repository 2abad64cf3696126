package gatewayapi_test

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"testing"

	"github.com/paduraksa/paduraksa/gatewayapi"
	"github.com/paduraksa/paduraksa/internal/gwconformance"
	"github.com/paduraksa/paduraksa/simulate"
)

// translateCase translates a case's objects with the conformance
// Services, whose endpoints listen on ports.
func translateCase(t *testing.T, c gwconformance.Case, ports map[string]int) *gatewayapi.Result {
	t.Helper()
	objs, err := gatewayapi.Decode(append(append([]byte{}, c.Objects...), gwconformance.Backends(ports)...))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	res, err := gatewayapi.Translate(objs, gatewayapi.Options{})
	if err != nil {
		t.Fatalf("Translate: %v", err)
	}
	return res
}

// TestConformance runs every conformance case through the simulator:
// each probe is decided by the route and upstream the case names, or
// answered with its status. The same cases run through the reference
// daemon over real sockets (examples/paduraksad).
func TestConformance(t *testing.T) {
	cases, err := gwconformance.Load("testdata/conformance")
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]int{"svc-a": 9001, "svc-b": 9002, "svc-c": 9003}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			res := translateCase(t, c, ports)
			for _, p := range c.Probes {
				h := http.Header{}
				for k, vs := range p.Headers {
					for _, v := range vs {
						h.Add(k, v)
					}
				}
				r, err := simulate.Run(simulate.Target{Draft: &res.Document}, simulate.Probe{Method: p.Method, URL: "http://" + p.Host + p.Path, Header: h})
				if err != nil {
					t.Fatalf("%s: %v", &p, err)
				}
				o := &r.Outcome
				if p.Want.Backend == "" && len(p.Want.Shares) == 0 {
					if o.Status != p.Want.Status || o.Kind == simulate.Forwarded {
						t.Errorf("%s: %s %d (route %q), want %d", &p, o.Kind, o.Status, o.Route, p.Want.Status)
					}
					for k, v := range p.Want.ResponseHeaders {
						if got := o.Header.Get(k); got != v {
							t.Errorf("%s: response header %s %q, want %q", &p, k, got, v)
						}
					}
					continue
				}
				if o.Kind != simulate.Forwarded || o.Upstream == nil {
					t.Errorf("%s: %s %d (%s), want forwarded", &p, o.Kind, o.Status, o.Reason)
					continue
				}
				if o.Route != p.Want.Route {
					t.Errorf("%s: route %s (%s), want route %s", &p, o.Route, o.Match, p.Want.Route)
				}
				if len(p.Want.Shares) > 0 {
					checkShare(t, &p, o)
				} else if o.Upstream.ID != gwconformance.Upstream(p.Want.Backend) {
					t.Errorf("%s: to %s, want %s", &p, o.Upstream.ID, gwconformance.Upstream(p.Want.Backend))
				}
				for k, v := range p.Want.ResponseHeaders {
					if got := o.Header.Get(k); got != v && got != "" {
						t.Errorf("%s: response header %s %q, want %q", &p, k, got, v)
					}
				}
				checkMirror(t, &p, o)
				checkForward(t, &p, o)
			}
		})
	}
}

// checkShare checks the side the simulator would send a weighted probe
// to: chosen by weight, one of the case's Services, with a weight whose
// share of the route's is the Service's within the case's tolerance.
func checkShare(t *testing.T, p *gwconformance.Probe, o *simulate.Outcome) {
	t.Helper()
	sp := o.Split
	if sp == nil || sp.Reason != "weight" {
		t.Errorf("%s: split %+v, want one by weight", p, sp)
		return
	}
	var svc string
	for s := range p.Want.Shares {
		if gwconformance.Upstream(s) == sp.Upstream {
			svc = s
		}
	}
	var w, total float64
	if _, err := fmt.Sscanf(sp.Why, "weight %g of %g", &w, &total); err != nil || svc == "" || total == 0 {
		t.Errorf("%s: side %s (%s), want one of %v by weight", p, sp.Upstream, sp.Why, p.Want.Shares)
		return
	}
	if share := 100 * w / total; math.Abs(share-p.Want.Shares[svc]) > p.Want.Tolerance {
		t.Errorf("%s: side %s has %s, %.1f%%; want %.1f%% ± %g", p, sp.Upstream, sp.Why, share, p.Want.Shares[svc], p.Want.Tolerance)
	}
}

// checkMirror checks the mirror the simulator reports.
func checkMirror(t *testing.T, p *gwconformance.Probe, o *simulate.Outcome) {
	t.Helper()
	m := o.Mirror
	switch {
	case p.Want.Mirror == "" && m != nil:
		t.Errorf("%s: mirrored to %s, want no mirror", p, m.Upstream)
	case p.Want.Mirror == "":
	case m == nil:
		t.Errorf("%s: no mirror, want %s", p, p.Want.Mirror)
	case m.Upstream != gwconformance.Upstream(p.Want.Mirror) || m.Percent != cmp.Or(p.Want.MirrorPercent, 100):
		t.Errorf("%s: mirrored to %s at %g%%, want %s at %g%%", p, m.Upstream, m.Percent, p.Want.Mirror, cmp.Or(p.Want.MirrorPercent, 100))
	}
}

// checkForward checks what the simulator's hand-over says the upstream
// would receive (the rewritten path and query) and the route's timeouts.
func checkForward(t *testing.T, p *gwconformance.Probe, o *simulate.Outcome) {
	t.Helper()
	f := o.Forward
	if f == nil {
		t.Errorf("%s: no forward facts", p)
		return
	}
	if p.Want.Path != "" && f.Target != p.Want.Path {
		t.Errorf("%s: would send %q, want %q", p, f.Target, p.Want.Path)
	}
	got := gwconformance.Timeouts{Request: f.Request, PerTry: f.PerTry}
	want := gwconformance.Timeouts{}
	if p.Want.Timeouts != nil {
		want = *p.Want.Timeouts
	}
	if got != want {
		t.Errorf("%s: timeouts %+v, want %+v", p, got, want)
	}
}
