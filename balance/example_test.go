package balance_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/upstream"
)

func members() *upstream.Cluster {
	var reg upstream.Registry
	reg.Plan([]upstream.ClusterConfig{{ID: "catalog", Destinations: []upstream.DestinationConfig{
		{ID: "catalog-1", Scheme: "http", Host: "127.0.0.1:5301", Metadata: map[string]string{"zone": "zone-a"}},
		{ID: "catalog-2", Scheme: "http", Host: "127.0.0.1:5311", Metadata: map[string]string{"zone": "zone-a"}},
		{ID: "catalog-3", Scheme: "http", Host: "127.0.0.1:5312", Metadata: map[string]string{"zone": "zone-b"}},
	}}}).Commit()
	return reg.Cluster("catalog")
}

// Build a cluster's policy by name and pick with it.
func ExamplePolicies() {
	policies := balance.Policies{Zone: "zone-b"}
	p, err := policies.New(balance.Config{Policy: balance.PolicyPreferLocalZone})
	if err != nil {
		panic(err)
	}
	c := members()
	fmt.Println(p.Pick(balance.Input{}, c.Members().Available).ID())

	// The zone is down: the other zone takes over.
	c.Destination("catalog-3").SetActiveHealth(upstream.Unhealthy)
	fmt.Println(p.Pick(balance.Input{}, c.Members().Available).Zone())
	// Output:
	// catalog-3
	// zone-a
}

// Register a custom policy on an instance.
func ExamplePolicies_Register() {
	var policies balance.Policies
	err := policies.Register("Last", func(balance.Config) (balance.Policy, error) { return last{}, nil })
	if err != nil {
		panic(err)
	}
	p, _ := policies.New(balance.Config{Policy: "Last"})
	fmt.Println(p.Pick(balance.Input{}, members().Members().Available).ID())
	// Output: catalog-3
}

type last struct{}

func (last) Pick(_ balance.Input, av []*upstream.Destination) *upstream.Destination {
	if len(av) == 0 {
		return nil
	}
	return av[len(av)-1]
}

// Active-passive failover.
func ExampleFirstAlphabetical() {
	c := members()
	fmt.Println(balance.FirstAlphabetical{}.Pick(balance.Input{}, c.Members().Available).ID())
	c.Destination("catalog-1").SetActiveHealth(upstream.Unhealthy)
	fmt.Println(balance.FirstAlphabetical{}.Pick(balance.Input{}, c.Members().Available).ID())
	// Output:
	// catalog-1
	// catalog-2
}

// Keep a client on its destination with a hashed cookie.
func ExampleAffinity() {
	key := []byte("a secret made once per gateway..") // balance.NewAffinityKey() in real use
	aff, err := balance.NewAffinity(balance.AffinityConfig{KeyName: "affinity"}, key)
	if err != nil {
		panic(err)
	}
	c := members()
	first := httptest.NewRequest("GET", "/books", nil)
	d, status := aff.Find(first, c.Members())
	fmt.Println(d == nil, status)

	d = balance.FirstAlphabetical{}.Pick(balance.Input{Request: first}, c.Members().Available)
	w := httptest.NewRecorder()
	aff.Set(w, first, d)
	fmt.Println(w.Header().Get("Set-Cookie"))

	next := httptest.NewRequest("GET", "/books", nil)
	next.Header.Set("Cookie", w.Header().Get("Set-Cookie"))
	d, status = aff.Find(next, c.Members())
	fmt.Println(d.ID(), status)
	// Output:
	// true none
	// affinity=700ba44ab608d46d; Path=/; HttpOnly; SameSite=Lax
	// catalog-1 matched
}

// Consistent hashing on a header.
func ExampleConsistentHash() {
	m, err := balance.NewConsistentHash(balance.HashConfig{Source: balance.HashHeader, Name: "X-Tenant"})
	if err != nil {
		panic(err)
	}
	c := members()
	r := &http.Request{Header: http.Header{"X-Tenant": {"acme"}}}
	a := m.Pick(balance.Input{Request: r}, c.Members().Available)
	b := m.Pick(balance.Input{Request: r}, c.Members().Available)
	fmt.Println(a == b)
	// Output: true
}
