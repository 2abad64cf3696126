package simulate

import (
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/config"
)

// TestSplitAndMirrorFacts: on a route with backends the outcome and the
// trace name the side and why (forced, sticky, weight), Want asserts
// them, and whether the request would be mirrored is said with the
// mirror's percent; nothing reaches the mirror.
func TestSplitAndMirrorFacts(t *testing.T) {
	var copies atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { copies.Add(1) })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	doc, err := config.Decode([]byte(`
hosts:
  - names: [app.example]
    routes:
      - id: web
        backends:
          - {upstream: stable, weight: 90}
          - {upstream: canary, weight: 10}
        split:
          sticky: {cookie: canary-side}
          force: [{header: X-Canary, value: always, upstream: canary}]
        mirror: {upstream: shadow, percent: 10}
      - id: all
        path: /all
        upstream: stable
        mirror: {upstream: shadow, maxBodyBytes: 1024}
      - id: none
        path: /none
        upstream: stable
        mirror: {upstream: shadow, percent: 0}
upstreams:
  - {id: stable, destinations: [{id: s1, address: "http://127.0.0.1:9"}]}
  - {id: canary, destinations: [{id: c1, address: "http://127.0.0.1:9"}]}
  - {id: shadow, destinations: [{id: m1, address: "http://` + ln.Addr().String() + `"}]}
`))
	require.NoError(t, err)
	x := NewTester(t, DraftTarget(doc))

	forced := x.Expect(Probe{URL: "http://app.example/x", Header: http.Header{"X-Canary": {"always"}}},
		Want{Route: "web", Upstream: "canary", Side: "canary", SideReason: "forced", Mirror: "shadow"})
	require.NotNil(t, forced)
	assert.Equal(t, "forced by header X-Canary: always", forced.Outcome.Split.Why)
	assert.Equal(t, 10.0, forced.Outcome.Mirror.Percent)
	assert.Contains(t, forced.Describe(), "backend canary (side 1): forced by header X-Canary: always")
	assert.Contains(t, forced.Describe(), "mirrored to shadow: 10% of the requests are copied, sampled at random (a simulation sends no copy)")

	sticky := x.Expect(Probe{URL: "http://app.example/x", Header: http.Header{"Cookie": {"canary-side=user-7"}}}, Want{SideReason: "sticky"})
	require.NotNil(t, sticky)
	assert.Equal(t, "sticky key cookie canary-side", sticky.Outcome.Split.Why)
	for range 5 {
		x.Expect(Probe{URL: "http://app.example/x", Header: http.Header{"Cookie": {"canary-side=user-7"}}},
			Want{Side: sticky.Outcome.Split.Upstream, Upstream: sticky.Outcome.Split.Upstream, SideReason: "sticky"})
	}
	weight := x.Expect(Probe{URL: "http://app.example/x"}, Want{SideReason: "weight"})
	require.NotNil(t, weight)
	assert.Regexp(t, `^weight (90|10) of 100 \(no cookie canary-side\)$`, weight.Outcome.Split.Why)

	x.Expect(Probe{URL: "http://app.example/all"}, Want{Route: "all", Upstream: "stable", Side: "", Mirror: "shadow"})
	all := x.Expect(Probe{URL: "http://app.example/all"}, Want{Mirror: "shadow"})
	require.NotNil(t, all)
	assert.Nil(t, all.Outcome.Split, "a route with one upstream has no split")
	assert.Equal(t, "every request is copied", all.Outcome.Mirror.Reason)
	x.Expect(Probe{URL: "http://app.example/none"}, Want{Route: "none", Mirror: "none"})
	x.Expect(Probe{Method: "POST", URL: "http://app.example/all", Header: http.Header{"Content-Length": {"1024"}}}, Want{Route: "all", Mirror: "shadow"})
	big := x.Expect(Probe{Method: "POST", URL: "http://app.example/all", Header: http.Header{"Content-Length": {"1025"}}}, Want{Route: "all", Mirror: "none"})
	require.NotNil(t, big)
	assert.Equal(t, "the body of 1025 bytes is over maxBodyBytes 1024 (counted as tooLarge)", big.Outcome.Mirror.Reason)

	assert.Zero(t, copies.Load(), "a simulation sends nothing to a mirror")
}
