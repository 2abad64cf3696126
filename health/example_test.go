package health_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/upstream"
)

// The publisher's side: after each publish, hand every cluster with its
// health config to the monitor. The forwarder's side: the monitor is its
// observer (proxy.Cluster{Observer: m}), told the outcome of every
// exchange; here ten failed connects are observed by hand.
func ExampleMonitor() {
	var reg upstream.Registry
	reg.Plan([]upstream.ClusterConfig{{ID: "catalog", Destinations: []upstream.DestinationConfig{
		{ID: "catalog-1", Scheme: "http", Host: "127.0.0.1:5301"},
		{ID: "catalog-2", Scheme: "http", Host: "127.0.0.1:5311"},
	}}}).Commit()
	c := reg.Cluster("catalog")

	m := health.New(health.Options{})
	defer m.Close()
	m.Subscribe(func(ch health.Change) {
		fmt.Printf("%s/%s %s: %v -> %v\n", ch.ClusterID, ch.DestinationID, ch.Check, ch.Old, ch.New)
	})
	err := m.Update(health.ClusterHealth{Cluster: c, Config: health.Config{
		Passive: health.PassiveConfig{Enabled: true},
	}})
	if err != nil {
		panic(err)
	}

	d := c.Destination("catalog-2")
	for range 10 {
		m.Observe(upstream.Observation{Destination: d, Outcome: upstream.ConnectError})
	}
	for _, d := range c.Members().Available {
		fmt.Println("available:", d.ID())
	}
	// Output:
	// catalog/catalog-2 passive: unknown -> unhealthy
	// available: catalog-1
}

// Validation returns errors and warnings with stable codes and relative
// paths.
func ExampleConfig_Validate() {
	cfg := health.Config{
		Active:  health.ActiveConfig{Enabled: true, Interval: -time.Second},
		Passive: health.PassiveConfig{Enabled: true, ReactivationPeriod: 10 * time.Second},
	}
	errs, warnings := cfg.Validate()
	for _, err := range errs {
		e := err.(*health.ValidationError)
		fmt.Println("error:", e.Code, "at", e.Path)
	}
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	// Output:
	// error: health.active.interval.invalid at active.interval
	// warning: passive.reactivationPeriod: reactivation period 10s is shorter than the 1m0s detection window: destinations return after 1m0s; shorten passive.window to return sooner (health.passive.reactivationPeriod.raised)
}

// Active checks alone: the monitor probes each destination's health path
// and tells every change to its subscribers. Here one backend passes its
// probes and the other answers 503, both on loopback.
func ExampleMonitor_Start() {
	backend := func(status int) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
		}))
	}
	up, down := backend(http.StatusOK), backend(http.StatusServiceUnavailable)
	defer up.Close()
	defer down.Close()
	c, err := upstream.NewCluster("catalog", []upstream.DestinationConfig{
		{ID: "catalog-1", Scheme: "http", Host: up.Listener.Addr().String()},
		{ID: "catalog-2", Scheme: "http", Host: down.Listener.Addr().String()},
	})
	if err != nil {
		panic(err)
	}

	m := health.New(health.Options{})
	defer m.Close()
	changes := make(chan health.Change, 8)
	m.Subscribe(func(ch health.Change) { changes <- ch })
	err = m.Update(health.ClusterHealth{Cluster: c, Config: health.Config{
		Active: health.ActiveConfig{Enabled: true, Interval: 50 * time.Millisecond, Timeout: 50 * time.Millisecond, Path: "/health", Threshold: 1},
	}})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := m.Start(ctx); err != nil {
		panic(err)
	}

	var seen []string // the two destinations are probed in parallel
	for len(seen) < 2 {
		select {
		case ch := <-changes:
			seen = append(seen, fmt.Sprintf("%s %s: %v -> %v (%s)", ch.DestinationID, ch.Check, ch.Old, ch.New, ch.Reason))
		case <-time.After(10 * time.Second):
			panic("no change within 10s")
		}
	}
	slices.Sort(seen)
	for _, s := range seen {
		fmt.Println(s)
	}
	for _, d := range c.Members().Available {
		fmt.Println("available:", d.ID())
	}
	// Output:
	// catalog-1 active: unknown -> healthy (probe passed with status 200)
	// catalog-2 active: unknown -> unhealthy (1 consecutive probes failed, last: status 503)
	// available: catalog-1
}

// Outlier ejection: three 503 answers in a row eject a destination for
// the base time (the next ejection in a row lasts twice as long); a
// refused connection (a request that never left) ejects one at once,
// without any health config. Both are events with a reason.
func ExampleOutlierConfig() {
	var reg upstream.Registry
	reg.Plan([]upstream.ClusterConfig{{ID: "api", Destinations: []upstream.DestinationConfig{
		{ID: "api-1", Scheme: "http", Host: "127.0.0.1:5401"},
		{ID: "api-2", Scheme: "http", Host: "127.0.0.1:5402"},
		{ID: "api-3", Scheme: "http", Host: "127.0.0.1:5403"},
		{ID: "api-4", Scheme: "http", Host: "127.0.0.1:5404"},
	}}}).Commit()
	c := reg.Cluster("api")

	m := health.New(health.Options{})
	defer m.Close()
	m.Subscribe(func(ch health.Change) {
		fmt.Printf("%s %s: %s for %v\n", ch.DestinationID, ch.Check, ch.EjectReason, ch.EjectedFor)
	})
	err := m.Update(health.ClusterHealth{Cluster: c, Config: health.Config{
		Outlier: health.OutlierConfig{ConsecutiveGatewayErrors: 3, BaseEjectionTime: 10 * time.Second},
	}})
	if err != nil {
		panic(err)
	}
	for range 3 {
		m.Observe(upstream.Observation{Destination: c.Destination("api-1"), Outcome: upstream.Success, Status: 503})
	}
	m.Observe(upstream.Observation{Destination: c.Destination("api-4"), Outcome: upstream.ConnectError, NotSent: true})
	for _, d := range c.Members().Available {
		fmt.Println("available:", d.ID())
	}
	// Output:
	// api-1 ejection: consecutiveGatewayErrors for 10s
	// api-4 ejection: connectFailure for 2s
	// available: api-2
	// available: api-3
}
