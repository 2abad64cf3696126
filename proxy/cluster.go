package proxy

import (
	"net/http"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/upstream"
)

// Cluster is one upstream cluster as a snapshot sees it: the live runtime
// state, the transport for its client settings and its policies. It is
// immutable; a publish builds a new one around the same runtime state.
type Cluster struct {
	// Upstream is the runtime state, shared by every snapshot.
	Upstream *upstream.Cluster
	// Transport sends requests to the cluster's destinations.
	Transport http.RoundTripper
	// Policy chooses a destination; nil means power of two choices.
	Policy balance.Policy
}

var defaultPolicy = balance.P2C{}
