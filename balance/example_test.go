package balance_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/upstream"
)

func members() *upstream.Cluster {
	c, err := upstream.NewCluster("catalog", []upstream.DestinationConfig{
		{ID: "catalog-1", Scheme: "http", Host: "127.0.0.1:5301", Metadata: map[string]string{"zone": "zone-a"}},
		{ID: "catalog-2", Scheme: "http", Host: "127.0.0.1:5311", Metadata: map[string]string{"zone": "zone-a"}},
		{ID: "catalog-3", Scheme: "http", Host: "127.0.0.1:5312", Metadata: map[string]string{"zone": "zone-b"}},
	})
	if err != nil {
		panic(err)
	}
	return c
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

// Balance over backends of your own, without a gateway: a cluster of
// their addresses (no registry, no config document), a policy, and the
// in-flight count around each request.
func Example_ownBackends() {
	var backends []upstream.DestinationConfig
	for _, name := range []string{"blue", "green"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, name)
		}))
		defer srv.Close()
		backends = append(backends, upstream.DestinationConfig{ID: name, Scheme: "http", Host: srv.Listener.Addr().String()})
	}
	c, err := upstream.NewCluster("mine", backends)
	if err != nil {
		panic(err)
	}
	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	get := func(p balance.Policy) string {
		d := p.Pick(balance.Input{}, c.Members().Available)
		if d == nil {
			return "no backend"
		}
		d.Begin() // PowerOfTwoChoices and LeastRequests read the count
		defer d.End()
		res, err := client.Get(d.Scheme() + "://" + d.Host() + "/")
		if err != nil {
			return err.Error()
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return string(body)
	}

	var rr balance.RoundRobin
	fmt.Println(get(&rr), get(&rr), get(&rr))
	c.Destination("blue").SetActiveHealth(upstream.Unhealthy) // your own check says so
	fmt.Println(get(&rr), get(&rr))
	c.Destination("green").SetActiveHealth(upstream.Unhealthy)
	c.SetAvailability(upstream.HealthyAndUnknown) // no panic mode: none is none
	fmt.Println(get(&rr))
	// Output:
	// blue green blue
	// green green
	// no backend
}
