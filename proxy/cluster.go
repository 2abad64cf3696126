package proxy

import (
	"math/rand/v2"
	"net/http"

	"github.com/paduraksa/paduraksa/upstream"
)

// Picker chooses a destination among the available ones. It must not
// allocate or lock on the request path. nil picks with power of two
// choices on in-flight counts.
type Picker interface {
	Pick(r *http.Request, available []*upstream.Destination) *upstream.Destination
}

// Cluster is one upstream cluster as a snapshot sees it: the live runtime
// state, the transport for its client settings and its policies. It is
// immutable; a publish builds a new one around the same runtime state.
type Cluster struct {
	// Upstream is the runtime state, shared by every snapshot.
	Upstream *upstream.Cluster
	// Transport sends requests to the cluster's destinations.
	Transport http.RoundTripper
	// Picker chooses a destination; nil means power of two choices.
	Picker Picker
}

// pick chooses a destination from the available ones, or nil.
func (c *Cluster) pick(r *http.Request, available []*upstream.Destination) *upstream.Destination {
	if c.Picker != nil {
		return c.Picker.Pick(r, available)
	}
	return powerOfTwo(available)
}

// powerOfTwo draws two distinct destinations and keeps the one with fewer
// requests in flight.
func powerOfTwo(ds []*upstream.Destination) *upstream.Destination {
	switch n := len(ds); n {
	case 0:
		return nil
	case 1:
		return ds[0]
	default:
		x := rand.Uint64()
		i := int((x & 0xffffffff) * uint64(n) >> 32)
		j := int((x >> 32) * uint64(n-1) >> 32)
		if j >= i {
			j++
		}
		a, b := ds[i], ds[j]
		if b.InFlight() < a.InFlight() {
			return b
		}
		return a
	}
}
