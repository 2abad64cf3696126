package gatewayapi_test

import (
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
				if p.Want.Backend == "" {
					if o.Status != p.Want.Status || o.Kind == simulate.Forwarded {
						t.Errorf("%s: %s %d (route %q), want %d", &p, o.Kind, o.Status, o.Route, p.Want.Status)
					}
					continue
				}
				if o.Kind != simulate.Forwarded || o.Upstream == nil {
					t.Errorf("%s: %s %d (%s), want forwarded to %s", &p, o.Kind, o.Status, o.Reason, p.Want.Backend)
					continue
				}
				if o.Upstream.ID != gwconformance.Upstream(p.Want.Backend) || o.Route != p.Want.Route {
					t.Errorf("%s: route %s to %s (%s), want route %s to %s", &p, o.Route, o.Upstream.ID, o.Match, p.Want.Route, gwconformance.Upstream(p.Want.Backend))
				}
				for k, v := range p.Want.ResponseHeaders {
					if got := o.Header.Get(k); got != v && got != "" {
						t.Errorf("%s: response header %s %q, want %q", &p, k, got, v)
					}
				}
			}
		})
	}
}
