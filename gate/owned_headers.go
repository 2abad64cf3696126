package gate

import (
	"net/http"
	"slices"
)

// HeaderOwner is implemented by a policy that sets request headers for the
// upstream, like [ForwardAuth]'s identity headers. The gate removes the
// client's own values of these headers from every request to a host or
// route whose chain names the policy, whatever the policy's mode (a
// forward-auth that is off or shadowed must not let clients set the
// identity its upstream trusts), and the forwarder refuses them as
// request trailers and in their underscore spelling.
type HeaderOwner interface {
	Policy
	// OwnedHeaders returns the canonical header names the policy owns.
	// The slice must not change.
	OwnedHeaders() []string
}

// ownedHeaders returns the union of the headers the chain's policies own.
func ownedHeaders(uses []PolicyUse) []string {
	var out []string
	for _, u := range uses {
		if o, ok := u.Policy.(HeaderOwner); ok {
			for _, k := range o.OwnedHeaders() {
				if !slices.Contains(out, k) {
					out = append(out, k)
				}
			}
		}
	}
	return out
}

func removeOwned(h http.Header, owned []string) {
	for _, k := range owned {
		delete(h, k)
	}
}

// Owns reports whether the canonical header name k is owned by a policy of
// the request's host or route chain (see [HeaderOwner]), or is a header
// some route of the host matches on ([HeaderMatch]). The forwarder sends
// neither in another spelling (X_Canary on a host that keeps underscores)
// nor as a trailer, so what the upstream reads is what the gate decided
// on.
func (rq *Request) Owns(k string) bool {
	if h := rq.Host; h != nil && (slices.Contains(h.owned, k) || slices.Contains(h.matched, k)) {
		return true
	}
	return rq.Route != nil && slices.Contains(rq.Route.owned, k)
}

// SetUpstreamHeader records a header a policy established for the
// upstream (forward-auth's identity). The forwarder sends these after
// every header of the client's and its own, so nothing a client sends,
// Connection-listed names included, can remove or replace them. It
// allocates the first time.
func (rq *Request) SetUpstreamHeader(k string, v []string) {
	if rq.Upstream == nil {
		rq.Upstream = make(http.Header, 4)
	}
	rq.Upstream[k] = v
}
