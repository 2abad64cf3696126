package gate

import (
	"sync"
	"sync/atomic"

	"github.com/paduraksa/paduraksa/internal/clock"
)

// State is the gate's long-lived state: what must outlive the immutable
// [Gate] that a publish replaces. It holds the tables of stateful policies
// (rate limits), keyed by policy ID, and the gate's counters.
//
// A config publish builds new policies through the same State:
// [State.RateLimit] returns the existing policy, buckets and all, when the
// ID's config is unchanged, and a fresh one otherwise. After a successful
// build, [State.Retain] forgets the IDs the new config no longer names.
// A Gate still serving the previous config keeps the objects it points at,
// so in-flight requests are unaffected.
//
// A State is safe for concurrent use. Its zero value is ready to use.
type State struct {
	mu     sync.Mutex
	limits map[string]*RateLimit

	passwordChecks atomic.Int64 // bcrypt checks running

	store atomic.Pointer[storeLink] // the cluster limits' store; nil: none

	clock clock.Clock // the rate limits' clock; zero: the real one

	counters Counters

	routes   map[routeKey]*RouteMetrics
	policies map[string]*PolicyMetrics
	chains   map[string]*chainPasses
	retains  uint64 // RetainMetrics calls, each marking what it keeps
}

// Counters are the gate's counters. They are atomics, safe to read at any
// time; a [State] keeps them across publishes.
type Counters struct {
	// HeaderFallback counts requests from a trusted proxy whose client
	// header was missing or malformed, so the peer (or, in Cloudflare
	// mode, X-Forwarded-For) was used instead.
	HeaderFallback atomic.Uint64
	// CloudflarePlainHTTP counts requests from a trusted Cloudflare peer
	// over plain HTTP for a plain-HTTP visitor (Flexible SSL).
	CloudflarePlainHTTP atomic.Uint64
	// ShadowWouldBlock counts decisions of shadowed policies that would
	// have stopped the request.
	ShadowWouldBlock atomic.Uint64
	// RateLimitTableFull counts requests a rate limit let through because
	// its table had no room for the client (fail-open).
	RateLimitTableFull atomic.Uint64
	// RateLimitStoreFallback counts decisions of cluster rate limits
	// ([RateLimitCluster]) taken by the local bucket because the store
	// failed, missed its deadline, was left alone after a failure, or was
	// detached.
	RateLimitStoreFallback atomic.Uint64
	// Dropped counts requests closed without an answer.
	Dropped atomic.Uint64
	// PasswordChecksRefused counts requests answered 503 because the
	// bound on concurrent password checks was reached.
	PasswordChecksRefused atomic.Uint64
}

// beginPasswordCheck takes one of the gateway's concurrent password
// checks, reporting false (and counting it) when all are taken. A request
// without a gate is not bounded.
func (rq *Request) beginPasswordCheck() bool {
	g := rq.gate
	if g == nil {
		return true
	}
	if g.state.passwordChecks.Add(1) > int64(g.maxPasswordChecks) {
		g.state.passwordChecks.Add(-1)
		if !rq.DryRun {
			g.state.counters.PasswordChecksRefused.Add(1)
		}
		return false
	}
	return true
}

func (rq *Request) endPasswordCheck() {
	if rq.gate != nil {
		rq.gate.state.passwordChecks.Add(-1)
	}
}

// Counters returns the state's counters.
func (s *State) Counters() *Counters { return &s.counters }

// RateLimit returns the rate-limit policy for cfg.ID: the existing one
// (with its buckets) when its config is unchanged, else a new one that
// replaces it.
func (s *State) RateLimit(cfg RateLimitConfig) (*RateLimit, error) {
	if err := s.checkStore(&cfg); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.limits[cfg.ID]; p != nil && p.cfg.equal(&cfg) {
		return p, nil
	}
	p, err := newRateLimit(cfg, &s.counters, s.clock, s)
	if err != nil {
		return nil, err
	}
	if s.limits == nil {
		s.limits = map[string]*RateLimit{}
	}
	s.limits[cfg.ID] = p
	return p, nil
}

// Retain forgets the stateful policies whose IDs keep does not report.
func (s *State) Retain(keep func(id string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.limits {
		if !keep(id) {
			delete(s.limits, id)
		}
	}
}
