package health_test

import (
	"fmt"
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
