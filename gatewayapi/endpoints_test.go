package gatewayapi_test

import (
	"testing"

	"github.com/paduraksa/paduraksa/gatewayapi"
)

// endpointObjects is a route to svc-a whose EndpointSlice has the given
// endpoints (YAML flow list items).
func endpointObjects(endpoints string) string {
	return gw + route("    - backendRefs: [{name: svc-a, port: 8080}]") + `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: a, labels: {kubernetes.io/service-name: svc-a}}
addressType: IPv4
ports: [{port: 8080}]
endpoints: [` + endpoints + `]
`
}

// A terminating endpoint that still serves is drained beside ready
// ones, and serves when none is ready (a rollout replacing every
// endpoint fails no request); one that no longer serves, or is not
// ready and not terminating, is left out.
func TestTerminatingEndpoints(t *testing.T) {
	const (
		ready      = `{addresses: [10.0.0.1]}`
		readyToo   = `{addresses: [10.0.0.2], conditions: {ready: true, serving: true}}`
		leaving    = `{addresses: [10.0.0.3], conditions: {ready: false, serving: true, terminating: true}}`
		gone       = `{addresses: [10.0.0.4], conditions: {ready: false, serving: false, terminating: true}}`
		unknown    = `{addresses: [10.0.0.5], conditions: {ready: false, terminating: true}}`
		starting   = `{addresses: [10.0.0.6], conditions: {ready: false, serving: false}}`
		leavingDup = `{addresses: [10.0.0.1], conditions: {ready: false, serving: true, terminating: true}}`
	)
	for _, tc := range []struct {
		name      string
		endpoints string
		want      map[string]bool // address: drained
	}{
		{"beside ready ones", ready + "," + leaving + "," + readyToo + "," + gone + "," + unknown + "," + starting,
			map[string]bool{"http://10.0.0.1:8080": false, "http://10.0.0.2:8080": false, "http://10.0.0.3:8080": true}},
		{"none ready", leaving + "," + gone + "," + starting,
			map[string]bool{"http://10.0.0.3:8080": false}},
		{"ready in one place, terminating in another", leavingDup + "," + ready,
			map[string]bool{"http://10.0.0.1:8080": false}},
	} {
		objs, err := gatewayapi.Decode([]byte(endpointObjects(tc.endpoints)))
		if err != nil {
			t.Fatal(tc.name, err)
		}
		res, err := gatewayapi.Translate(objs, gatewayapi.Options{})
		if err != nil {
			t.Fatal(tc.name, err)
		}
		if len(res.Document.Upstreams) != 1 {
			t.Fatalf("%s: upstreams %+v", tc.name, res.Document.Upstreams)
		}
		got := map[string]bool{}
		for _, d := range res.Document.Upstreams[0].Destinations {
			if _, twice := got[d.Address]; twice {
				t.Errorf("%s: %s twice", tc.name, d.Address)
			}
			got[d.Address] = d.Drain
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: destinations %v, want %v", tc.name, got, tc.want)
		}
		for a, drained := range tc.want {
			if g, ok := got[a]; !ok || g != drained {
				t.Errorf("%s: %s drained=%v (present %v), want drained=%v", tc.name, a, g, ok, drained)
			}
		}
	}
}
