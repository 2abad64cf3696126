package balance

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/upstream"
)

// ownBackends is a cluster of backends of the caller's own, made as a
// user of balance alone makes it, and the Input of their requests.
func ownBackends(t testing.TB) (*upstream.Cluster, Input) {
	t.Helper()
	c, err := upstream.NewCluster("mine", []upstream.DestinationConfig{
		{ID: "a", Scheme: "http", Host: "127.0.0.1:1", Metadata: map[string]string{"zone": "a"}},
		{ID: "b", Scheme: "http", Host: "127.0.0.1:2", Metadata: map[string]string{"zone": "b"}},
		{ID: "c", Scheme: "http", Host: "127.0.0.1:3", Metadata: map[string]string{"zone": "a"}},
	})
	require.NoError(t, err)
	return c, Input{Request: &http.Request{Header: http.Header{"X-User": {"alice"}}}, Client: netip.MustParseAddr("192.0.2.7")}
}

// TestOwnBackendsRequestAllocatesNothing: the whole per-request sequence
// of a user who balances alone (load the members, pick, count the
// request in flight and out) allocates nothing, with every built-in
// policy, and the policies read the counts it keeps.
func TestOwnBackendsRequestAllocatesNothing(t *testing.T) {
	c, in := ownBackends(t)
	for name, p := range builtins(t) {
		t.Run(name, func(t *testing.T) {
			p.Pick(in, c.Members().Available) // builds any table
			allocs := testing.AllocsPerRun(200, func() {
				d := p.Pick(in, c.Members().Available)
				if d == nil {
					t.Fatal("nil pick")
				}
				d.Begin()
				d.End()
			})
			assert.Zero(t, allocs)
		})
	}

	// With a and c busy, LeastRequests sends every request to b, and
	// power of two choices every one whose draw has b.
	for _, d := range []*upstream.Destination{c.Destination("a"), c.Destination("c")} {
		d.Begin()
		defer d.End()
	}
	for range 20 {
		assert.Equal(t, "b", LeastRequests{}.Pick(in, c.Members().Available).ID())
	}
	picks := map[string]int{}
	for range 300 {
		picks[PowerOfTwoChoices{}.Pick(in, c.Members().Available).ID()]++
	}
	assert.Greater(t, picks["b"], 150, "b wins every draw it is in: two of three (%v)", picks)
}

// BenchmarkPickOwnBackends is one request of a user who balances alone:
// load the members, pick with power of two choices, Begin and End.
func BenchmarkPickOwnBackends(b *testing.B) {
	c, in := ownBackends(b)
	var p PowerOfTwoChoices
	b.ReportAllocs()
	for b.Loop() {
		d := p.Pick(in, c.Members().Available)
		d.Begin()
		d.End()
	}
}
