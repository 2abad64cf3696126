package snapshot

import (
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGenerationConsistency: a request that starts on snapshot N is routed
// and forwarded entirely by N, even when N+1 re-points its route mid-request.
func TestGenerationConsistency(t *testing.T) {
	slow := startBackend(t, "old")
	hold, arrived := make(chan struct{}), make(chan struct{}, 1)
	slow.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "old")
	})
	fresh := startBackend(t, "new")

	store, pub := newPublisher(t)
	doc := &config.Document{
		Hosts: []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{Path: "/", Upstream: "old"}}}},
		Upstreams: []config.Upstream{
			{ID: "old", Destinations: []config.Destination{{ID: "d", Address: "http://" + slow.addr}}},
			{ID: "new", Destinations: []config.Destination{{ID: "d", Address: "http://" + fresh.addr}}},
		},
	}
	_, err := pub.Apply(testContext(t), doc)
	require.NoError(t, err)
	addr := serve(t, store)

	type result struct {
		status int
		body   string
	}
	done := make(chan result, 1)
	client := newClient(t)
	go func() {
		req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
		req.Host = "app.test"
		res, err := client.Do(req)
		if err != nil {
			done <- result{body: err.Error()}
			return
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		done <- result{res.StatusCode, string(b)}
	}()
	receive(t, arrived, 10*time.Second) // the request is inside snapshot N, at its upstream

	next := clone(doc)
	next.Hosts[0].Routes[0].Upstream = "new"
	next.Hosts[0].Server = "Generation-2"
	_, err = pub.Apply(testContext(t), next)
	require.NoError(t, err)

	status, body := get(t, client, addr, "app.test", "/")
	assert.Equal(t, 200, status)
	assert.Equal(t, "new /", body, "new requests use N+1")

	close(hold)
	r := receive(t, done, 10*time.Second)
	assert.Equal(t, 200, r.status)
	assert.Equal(t, "old", r.body, "the request started on N finishes on N")
}

// TestHealthContinuityAcrossPublishes: verdicts survive publishes that keep
// a destination; an address change resets them; remove and re-add is new.
func TestHealthContinuityAcrossPublishes(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	// A monitor that is never started: verdicts change only by the test's
	// hand and by the monitor's own rule (a check turned off resets them).
	mon := health.New(health.Options{})
	t.Cleanup(func() { mon.Close() })
	store := new(Store)
	pub := NewPublisher(PublisherConfig{Store: store, Compiler: Compiler{Health: mon}})
	doc := fleet(3, a, b)
	doc.Upstreams[0].Health.Passive.Enabled = true
	_, err := pub.Apply(testContext(t), doc)
	require.NoError(t, err)
	dest := func(u, d string) *upstream.Destination {
		return store.Load().Cluster(u).Upstream.Destination(d)
	}
	d0 := dest("u0", "d0")
	d0.SetActiveHealth(upstream.Unhealthy)
	d0.SetPassiveHealth(upstream.Healthy)

	// Unrelated changes: another host's route, another cluster's members,
	// this cluster's balancing policy and health settings.
	next := clone(doc)
	next.Hosts[1].Routes[0].Path = "/other"
	next.Upstreams[2].Destinations = next.Upstreams[2].Destinations[:1]
	next.Upstreams[0].LoadBalancing = "RoundRobin"
	next.Upstreams[0].Health.Active = config.ActiveHealth{Enabled: true, Interval: "30s"}
	_, err = pub.Apply(testContext(t), next)
	require.NoError(t, err)
	assert.Same(t, d0, dest("u0", "d0"))
	assert.Equal(t, upstream.Unhealthy, dest("u0", "d0").ActiveHealth())
	assert.Equal(t, upstream.Healthy, dest("u0", "d0").PassiveHealth())

	// Address change: fresh state.
	moved := clone(next)
	moved.Upstreams[0].Destinations[0].Address = "http://" + b.addr
	_, err = pub.Apply(testContext(t), moved)
	require.NoError(t, err)
	assert.NotSame(t, d0, dest("u0", "d0"))
	assert.Equal(t, upstream.Unknown, dest("u0", "d0").ActiveHealth())

	// Remove and re-add: a new destination.
	d1 := dest("u0", "d1")
	d1.SetActiveHealth(upstream.Unhealthy)
	removed := clone(moved)
	removed.Upstreams[0].Destinations = removed.Upstreams[0].Destinations[:1]
	_, err = pub.Apply(testContext(t), removed)
	require.NoError(t, err)
	assert.Nil(t, dest("u0", "d1"))
	assert.True(t, d1.Removed())
	_, err = pub.Apply(testContext(t), moved)
	require.NoError(t, err)
	assert.NotSame(t, d1, dest("u0", "d1"))
	assert.Equal(t, upstream.Unknown, dest("u0", "d1").ActiveHealth())
}
