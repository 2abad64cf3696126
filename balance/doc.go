// Package balance picks the destination of each proxied request: the
// load-balancing policies and session affinity.
//
// # Policies
//
// A [Policy] has one method, Pick, which chooses among a cluster's available
// destinations ([upstream.Members.Available], after health checks). The
// built-in policies are named by the policy they implement, and their
// names ([PolicyNames]) are the ones a config document uses:
// [PowerOfTwoChoices] (the default), [LeastRequests], [RoundRobin],
// [Random], [FirstAlphabetical] (active-passive failover),
// [PreferLocalZone] (prefer the gateway's zone, with spillover) and
// [ConsistentHash] (Maglev hashing on a header, a cookie or the client
// address). [SlowStart] wraps any of them to ramp up a destination that
// has just become available.
//
// A [Policies] value builds each cluster's policy from its [Config] by name,
// and holds the policies users register with [Policies.Register]. There is no
// package-level registry.
//
// # Used alone
//
// The policies pick among [upstream.Destination] values, and a program
// with backends of its own makes them without a gateway, a registry or a
// config document: [upstream.NewCluster] takes their IDs and addresses.
// Per request it picks from the cluster's available set and counts the
// request in flight, which PowerOfTwoChoices and LeastRequests read:
//
//	c, err := upstream.NewCluster("mine", []upstream.DestinationConfig{
//		{ID: "blue", Scheme: "http", Host: "10.0.0.1:8080"},
//		{ID: "green", Scheme: "http", Host: "10.0.0.2:8080"},
//	})
//	...
//	d := balance.PowerOfTwoChoices{}.Pick(balance.Input{}, c.Members().Available)
//	if d == nil { /* none available */ }
//	d.Begin()
//	defer d.End()
//	// send the request to d.Host()
//
// Its own health checks take a backend out with
// d.SetActiveHealth(upstream.Unhealthy) (or a health.Monitor does). That
// sequence allocates nothing (a test asserts it for every built-in
// policy; BenchmarkPickOwnBackends measures it).
//
// # Validation
//
// [Policies.Validate] and [AffinityConfig.Validate] return every problem at
// once, each a [ValidationError] with a stable code (listed in errors.go)
// and a path relative to the config; the constructors refuse what they
// refuse. The names of each set of built-in values ([AffinityModeNames],
// [CookieSameSiteNames], ...) are the ones the config types take, and a
// config document takes the same.
//
// The forwarder does, per request:
//
//	m := cluster.Members()
//	d, st := affinity.Find(r, m) // when the cluster has affinity
//	if st == balance.AffinityFailed { /* 503 */ }
//	if d == nil {
//		d = policy.Pick(balance.Input{Request: r, Client: addr}, m.Available)
//	}
//	if d == nil { /* 503: no available destination */ }
//	if st.NeedsSet() { affinity.Set(w, r, d) }
//	d.Begin(); defer d.End()
//
// # Affinity
//
// [Affinity] keeps a client on one destination with a hashed cookie (the
// default), an ARR-style cookie or a header. The key is an HMAC of the
// cluster and destination IDs under a secret key that the gateway makes once
// ([NewAffinityKey]) and keeps across publishes. When the key leads to no
// available destination, the failure policy either redistributes (pick
// again, renew the key) or answers 503.
//
// # Concurrency and cost
//
// Every policy and Affinity is safe for concurrent use and takes no lock.
// Pick and Find allocate nothing in steady state (tests assert it with
// testing.AllocsPerRun). Policies that need a per-cluster table
// (PreferLocalZone's zone split, ConsistentHash's lookup table, Affinity's
// key table) key it by the identity of the members slice and rebuild it,
// behind an atomic pointer, on
// the first call after the set changes; concurrent calls meanwhile use a
// table-free method instead of waiting. Stateful policies (RoundRobin, the
// table holders) belong to one cluster: [Policies.New] returns a new one per
// call.
//
// # Differences from YARP
//
//   - Affinity keys are keyed hashes (HMAC-SHA-256 with a gateway secret),
//     not plain hashes of the destination ID, so a key reveals nothing and
//     cannot be computed by a client for a destination it was not sent to.
//     Replicas behind one load balancer must share the key.
//   - LeastRequests breaks ties at a random position instead of always
//     taking the first destination.
//   - Zone preference, consistent hashing and slow start are built in; YARP
//     leaves them to custom policies.
//   - Policies receive a small [Input] by value instead of the whole request
//     context, so that building it costs nothing.
package balance
