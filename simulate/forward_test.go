package simulate

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/config"
)

// TestForwardFacts: the hand-over says the path and query the upstream
// would receive after the route's rewrite, and the route's timeouts, on
// a route with one upstream and on a split's side; a route that
// rewrites nothing and has no timeouts keeps the hand-over's summary.
func TestForwardFacts(t *testing.T) {
	doc, err := config.Decode([]byte(`
hosts:
  - names: [app.example]
    routes:
      - id: v1
        path: /v1
        upstream: stable
        rewrite: {replacePrefix: /v2, query: {set: {a: "1"}, remove: [drop]}}
        timeouts: {request: 10s, perTry: 2s}
      - id: full
        path: /full
        backends: [{upstream: stable}, {upstream: canary}]
        rewrite: {path: /fixed}
        timeouts: {request: 1500ms}
      - id: plain
        path: /plain
        upstream: stable
upstreams:
  - {id: stable, destinations: [{id: s1, address: "http://127.0.0.1:9"}]}
  - {id: canary, destinations: [{id: c1, address: "http://127.0.0.1:9"}]}
`))
	require.NoError(t, err)
	handOver := func(r *Result) Step {
		for _, st := range r.Trace {
			if st.Kind == "hand-over" {
				return st
			}
		}
		t.Fatalf("no hand-over in %s", r.Describe())
		return Step{}
	}

	r, err := Run(DraftTarget(doc), Probe{URL: "http://app.example/v1/items?drop=x&b=2"})
	require.NoError(t, err)
	assert.Equal(t, &Forward{Target: "/v2/items?b=2&a=1", Rewritten: true, Request: "10s", PerTry: "2s"}, r.Outcome.Forward)
	st := handOver(r)
	assert.Equal(t, "handed over to the target of route v1: rewritten to /v2/items?b=2&a=1; timeouts: request 10s, perTry 2s", st.Summary)
	assert.Equal(t, "/v2/items?b=2&a=1", st.Facts["target"])
	assert.Equal(t, "2s", st.Facts["timeoutPerTry"])

	r, err = Run(DraftTarget(doc), Probe{URL: "http://app.example/full/x?q=1"})
	require.NoError(t, err)
	require.NotNil(t, r.Outcome.Split)
	assert.Equal(t, &Forward{Target: "/fixed?q=1", Rewritten: true, Request: "1.5s"}, r.Outcome.Forward)
	assert.Equal(t, "handed over to the target of route full: rewritten to /fixed?q=1; timeout: request 1.5s", handOver(r).Summary)

	r, err = Run(DraftTarget(doc), Probe{URL: "http://app.example/plain/x?q=1"})
	require.NoError(t, err)
	assert.Equal(t, &Forward{Target: "/plain/x?q=1"}, r.Outcome.Forward)
	assert.Equal(t, "handed over to the target of route plain", handOver(r).Summary)
}
