package balance

import (
	"math/rand/v2"
	"net/http"
	"net/netip"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
)

// Input is what a policy may look at to pick a destination. It is a small
// struct passed by value, so building it costs no allocation.
type Input struct {
	// Request is the client's request; it may be nil for policies that do
	// not read it. Policies must not modify it.
	Request *http.Request
	// Client is the resolved client address (after trusted proxies); the
	// zero Addr means unknown.
	Client netip.Addr
	// Now is the time of the decision, if the caller has read the clock
	// already; the zero value makes time-dependent policies read their own.
	Now time.Time
}

// Policy picks one destination for a request among the available ones.
//
// available is a cluster's [upstream.Members.Available] (or another slice
// that is never modified after it is first passed); it may be empty, and
// then Pick returns nil. Pick runs on every request: it must not block, take
// locks or do I/O, and the built-in policies allocate nothing in steady state
// (a policy with a per-cluster table rebuilds it once, on the first Pick after
// the available set changes). Implementations must be safe for concurrent
// use.
type Policy interface {
	Pick(in Input, available []*upstream.Destination) *upstream.Destination
}

// Names of the built-in policies, as [Config.Policy] spells them.
const (
	PolicyPowerOfTwoChoices = "PowerOfTwoChoices"
	PolicyLeastRequests     = "LeastRequests"
	PolicyRoundRobin        = "RoundRobin"
	PolicyRandom            = "Random"
	PolicyFirstAlphabetical = "FirstAlphabetical"
	PolicyPreferLocalZone   = "PreferLocalZone"
	PolicyConsistentHash    = "ConsistentHash"
)

var (
	_ Policy = PowerOfTwoChoices{}
	_ Policy = LeastRequests{}
	_ Policy = (*RoundRobin)(nil)
	_ Policy = Random{}
	_ Policy = FirstAlphabetical{}
	_ Policy = (*PreferLocalZone)(nil)
	_ Policy = (*ConsistentHash)(nil)
	_ Policy = (*SlowStart)(nil)
)

// twoDistinct draws two distinct indices in [0, n), n >= 2, from one random
// word: Lemire's multiply-shift on each half, no division.
func twoDistinct(n int) (int, int) {
	r := rand.Uint64()
	i := int((r >> 32) * uint64(n) >> 32)
	j := int((r & 0xffffffff) * uint64(n-1) >> 32)
	if j >= i {
		j++
	}
	return i, j
}

// lesser returns the destination with fewer requests in flight, a on ties.
func lesser(a, b *upstream.Destination) *upstream.Destination {
	if b.InFlight() < a.InFlight() {
		return b
	}
	return a
}
