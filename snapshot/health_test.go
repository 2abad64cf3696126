package snapshot

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestActiveHealthThroughPublisher: a published upstream with active health
// on gets probed; a destination whose health endpoint fails leaves the
// rotation, and requests keep flowing to the other one.
func TestActiveHealthThroughPublisher(t *testing.T) {
	good, bad := startBackend(t, "good"), startBackend(t, "bad")
	var failing atomic.Bool
	failing.Store(true)
	bad.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("bad " + r.URL.Path))
	})

	mon := health.New(health.Options{})
	ctx := testContext(t)
	require.NoError(t, mon.Start(ctx))
	defer mon.Close()
	changes := make(chan health.Change, 16)
	defer mon.Subscribe(func(c health.Change) {
		select {
		case changes <- c:
		default: // never block the monitor
		}
	})()

	store := new(Store)
	pub := NewPublisher(PublisherConfig{Store: store, Compiler: Compiler{Health: mon}})
	doc := &config.Document{
		Hosts: []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{Upstream: "u"}}}},
		Upstreams: []config.Upstream{{
			ID: "u",
			Destinations: []config.Destination{
				{ID: "good", Address: "http://" + good.addr},
				{ID: "bad", Address: "http://" + bad.addr},
			},
			Health: config.HealthCheck{Active: config.ActiveHealth{Enabled: true, Interval: "20ms", Timeout: "10s", Path: "/healthz"}},
		}},
	}
	_, err := pub.Apply(ctx, doc)
	require.NoError(t, err)

	deadline := time.After(10 * time.Second)
	for marked := false; !marked; {
		select {
		case c := <-changes:
			marked = c.DestinationID == "bad" && c.New == upstream.Unhealthy
		case <-deadline:
			t.Fatal("the failing destination was never marked unhealthy")
		}
	}
	avail := store.Load().Cluster("u").Upstream.Members().Available
	require.Len(t, avail, 1)
	assert.Equal(t, "good", avail[0].ID())

	addr := serve(t, store)
	c := newClient(t)
	for range 20 {
		status, body := get(t, c, addr, "app.test", "/x")
		require.Equal(t, 200, status)
		require.Equal(t, "good /x", body)
	}

	// A publish that changes the health settings keeps the verdict.
	next := clone(doc)
	next.Upstreams[0].Health.Active.Interval = "1h"
	_, err = pub.Apply(ctx, next)
	require.NoError(t, err)
	assert.Equal(t, upstream.Unhealthy, store.Load().Cluster("u").Upstream.Destination("bad").ActiveHealth())
}

// TestHealthProblemsUseDocumentPaths: what the health package refuses is
// reported with its codes at the document's paths, under the upstream's
// health block or its metadata, with a monitor and without one. A 1 ms
// window and a failure rate of 1 used to pass the document and be refused
// (or ignored) by health at paths no document has.
func TestHealthProblemsUseDocumentPaths(t *testing.T) {
	mon := health.New(health.Options{})
	defer mon.Close()
	doc := &config.Document{Upstreams: []config.Upstream{
		{ID: "a", Health: config.HealthCheck{Passive: config.PassiveHealth{Enabled: true, FailureRate: 1, Window: "1ms"}}},
		{ID: "b", Metadata: map[string]string{health.MetadataThreshold: "0", health.MetadataRateLimit: "0x1p-1"}},
	}}
	want := []string{
		health.CodePassiveWindowInvalid + " upstreams[0].health.passive.window",
		health.CodePassiveFailureRateInvalid + " upstreams[0].health.passive.failureRate",
		health.CodeActiveThresholdInvalid + ` upstreams[1].metadata["ConsecutiveFailuresHealthPolicy.Threshold"]`,
		health.CodePassiveFailureRateInvalid + ` upstreams[1].metadata["TransportFailureRateHealthPolicy.RateLimit"]`,
	}
	c := Compiler{Health: mon}
	_, err := c.compileDocument(doc)
	assert.Equal(t, want, problemList(t, err))
	assert.Equal(t, want, codePaths(Validate(doc)), "without a monitor, the same rules")
}
