package proxy

import (
	"sync/atomic"

	"github.com/paduraksa/paduraksa/upstream"
)

// Stats counts a cluster's outcomes, retries and HTTP/1.1 fallbacks with
// lock-free counters. The zero value is ready; it is safe for concurrent
// use.
type Stats struct {
	outcomes  [upstream.NumOutcomes]atomic.Uint64 // one per outcome
	retries   atomic.Uint64
	unsent    atomic.Uint64               // retries of requests that never left
	fallbacks [numFallbacks]atomic.Uint64 // one per HTTP1Fallback

	limits limitCounters // the circuit breakers' counts (limits.go)
}

// Count returns how many exchanges ended with o: [upstream.Success] when a
// response was forwarded, [upstream.ClientAbort] when the client went away
// (logged as 499), [upstream.ClientBodyError] when its request body failed.
// The forwarder's answers that involve no destination (none available, a
// path the route does not cover) are not counted.
func (s *Stats) Count(o upstream.Outcome) uint64 {
	if int(o) >= len(s.outcomes) {
		return 0
	}
	return s.outcomes[o].Load()
}

// Retries returns how many retries were sent, those of
// [Stats.ConnectRetries] included.
func (s *Stats) Retries() uint64 { return s.retries.Load() }

// ConnectRetries returns how many retries were sent because the attempt
// before failed before any of the request was written (see
// [ConnectFailures]).
func (s *Stats) ConnectRetries() uint64 { return s.unsent.Load() }

func (s *Stats) add(o upstream.Outcome) {
	if s != nil && int(o) < len(s.outcomes) {
		s.outcomes[o].Add(1)
	}
}

// HTTP1Fallbacks returns how many attempts went through net/http's
// HTTP/1.1 client for reason f on a cluster whose client is
// [HTTP1Direct] (see [HTTP1Fallback]).
func (s *Stats) HTTP1Fallbacks(f HTTP1Fallback) uint64 {
	if int(f) >= len(s.fallbacks) {
		return 0
	}
	return s.fallbacks[f].Load()
}

func (s *Stats) addFallback(f HTTP1Fallback) {
	if s != nil && int(f) < len(s.fallbacks) {
		s.fallbacks[f].Add(1)
	}
}
