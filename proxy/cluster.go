package proxy

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/upstream"
)

// Cluster is one upstream cluster as a snapshot sees it: the live runtime
// state, the transport for its client settings and its policies. It is
// immutable once a route uses it; a publish builds a new one around the same
// runtime state.
type Cluster struct {
	// Upstream is the runtime state, shared by every snapshot.
	Upstream *upstream.Cluster
	// Transport sends requests to the cluster's destinations; health
	// probes should use it too, so they speak the same version with the
	// same trust. When it is a *[Transport], TLS requests whose Host names
	// another server than the destination use a pool per name.
	Transport http.RoundTripper
	// Policy chooses a destination; nil means power of two choices.
	Policy balance.Policy
	// Affinity, when not nil, keeps a client on one destination.
	Affinity *balance.Affinity
	// Observer, when not nil, is told the outcome of every exchange with a
	// destination, for passive health. Client aborts are never reported.
	Observer Observer
	// Stats, when not nil, counts outcomes; keep one per cluster ID across
	// publishes.
	Stats *Stats
	// IdleTimeout cuts an exchange (request upload, response stream,
	// upgraded connection) when no data moved either way for this long;
	// 0 means [DefaultIdleTimeout], a negative value never.
	IdleTimeout time.Duration
}

// idle returns the effective idle timeout; 0 means never.
func (c *Cluster) idle() time.Duration {
	switch {
	case c.IdleTimeout == 0:
		return DefaultIdleTimeout
	case c.IdleTimeout < 0:
		return 0
	}
	return c.IdleTimeout
}

var defaultPolicy = balance.PowerOfTwoChoices{}

// Observation is the outcome of one exchange with a destination.
type Observation struct {
	Destination *upstream.Destination
	// Kind is ErrorNone when a response arrived; never ErrorClientAbort.
	Kind ErrorKind
	// Status is the upstream's status, 0 when none arrived.
	Status int
}

// Observer receives observations for passive health. Observe runs on the
// request path: it must not block, and must be safe for concurrent use.
type Observer interface {
	Observe(Observation)
}

// Stats counts a cluster's outcomes with lock-free counters. The zero value
// is ready; it is safe for concurrent use.
type Stats struct {
	kinds   [errorKindCount]atomic.Uint64
	retries atomic.Uint64
}

// Count returns how many exchanges ended with kind (ErrorNone: a response
// was forwarded; ErrorClientAbort: logged as 499).
func (s *Stats) Count(kind ErrorKind) uint64 {
	if int(kind) >= len(s.kinds) {
		return 0
	}
	return s.kinds[kind].Load()
}

// Retries returns how many retries were sent.
func (s *Stats) Retries() uint64 { return s.retries.Load() }

func (s *Stats) add(kind ErrorKind) {
	if s != nil {
		s.kinds[kind].Add(1)
	}
}
