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

// A cluster of fixed destinations, without a registry: verdicts move
// destinations out of the available set and back.
func ExampleNewCluster() {
	c, err := upstream.NewCluster("api", []upstream.DestinationConfig{
		{ID: "b", Scheme: "http", Host: "10.0.0.2:80"},
		{ID: "a", Scheme: "http", Host: "10.0.0.1:80"},
	})
	if err != nil {
		panic(err)
	}
	c.Destination("a").SetActiveHealth(upstream.Unhealthy)
	for _, d := range c.Members().Available {
		fmt.Println("available:", d.ID(), d.Host())
	}
	_, err = upstream.NewCluster("api", []upstream.DestinationConfig{
		{ID: "a", Scheme: "http", Host: "10.0.0.1:80"},
		{ID: "a", Scheme: "ftp", Host: "http://10.0.0.3"},
	})
	fmt.Println(err)
	// Output:
	// available: b 10.0.0.2:80
	// destinations[1].id: "a" is also destinations[0] (upstream.destination.id.duplicate)
	// destinations[1].scheme: scheme "ftp" is not http or https (upstream.destination.scheme.invalid)
	// destinations[1].host: "http://10.0.0.3": a host:port, not a URL (no "/") (upstream.destination.host.invalid)
}
