package proxy

import (
	"net/http"
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
	// destination, for passive health: a *health.Monitor serves as it is.
	// Client-side outcomes (the client went away, or its body failed) are
	// never reported: they are not the destination's doing.
	Observer upstream.Observer
	// Stats, when not nil, counts outcomes (client-side ones included),
	// retries and HTTP/1.1 fallbacks; keep one per cluster ID across
	// publishes.
	Stats *Stats
	// IdleTimeout cuts an exchange (request upload, response stream,
	// upgraded connection) when no data moved either way for this long;
	// 0 means [DefaultIdleTimeout], a negative value never.
	IdleTimeout time.Duration

	// Limits are the cluster's circuit breakers; the zero value sets
	// none. They are counted in Stats, which they need.
	Limits Limits
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
