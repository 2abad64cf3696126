package upstream_test

import (
	"fmt"

	"github.com/paduraksa/paduraksa/upstream"
)

// Runtime state survives a publish that keeps a destination at its address;
// an address change starts fresh.
func ExampleRegistry() {
	var reg upstream.Registry
	publish := func(addrB string) {
		reg.Plan([]upstream.ClusterConfig{{ID: "api", Destinations: []upstream.DestinationConfig{
			{ID: "a", Scheme: "http", Host: "10.0.0.1:80"},
			{ID: "b", Scheme: "http", Host: addrB},
		}}}).Commit()
	}
	publish("10.0.0.2:80")
	api := reg.Cluster("api")
	api.Destination("a").SetActiveHealth(upstream.Unhealthy)
	api.Destination("b").SetActiveHealth(upstream.Unhealthy)

	publish("10.0.0.9:80") // b moves, a stays
	fmt.Println("a:", api.Destination("a").ActiveHealth())
	fmt.Println("b:", api.Destination("b").ActiveHealth())
	for _, d := range api.Members().Available {
		fmt.Println("available:", d.ID(), d.Host())
	}
	// Output:
	// a: unhealthy
	// b: unknown
	// available: b 10.0.0.9:80
}
