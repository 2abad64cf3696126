package redislimit_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/fleet/internal/redistest"
	"github.com/paduraksa/paduraksa/fleet/redislimit"
	"github.com/paduraksa/paduraksa/gate"
)

// BenchmarkDecision is one rate-limit decision of a local limit and of a
// cluster limit on a Redis on loopback: what a cluster limit adds to a
// request.
func BenchmarkDecision(b *testing.B) {
	redis := redistest.Start(b)
	cfg := gate.RateLimitConfig{ID: "bench", Requests: 1 << 30, Period: time.Second, Burst: 1 << 20}
	rq := &gate.Request{Client: netip.MustParseAddr("192.0.2.1")}
	b.Run("local", func(b *testing.B) {
		l, err := new(gate.State).RateLimit(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			l.Evaluate(nil, rq)
		}
	})
	b.Run("cluster", func(b *testing.B) {
		store, err := redislimit.New(redislimit.Config{URL: redis.URL, Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		state := new(gate.State)
		state.SetRateLimitStore(gate.RateLimitStoreConfig{Store: store, Timeout: time.Second})
		c := cfg
		c.Buckets = gate.RateLimitCluster
		in, err := state.RateLimit(c)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if d := in.Evaluate(nil, rq); d.Reason != "allowed by the cluster store" {
				b.Fatal(d.Reason)
			}
		}
	})
}
