package snapshot

import (
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/proxy"
)

// limits maps an upstream's limits block onto its owners: maxInFlight
// and maxRetriesInFlight are the cluster's proxy.Limits, maxPending and
// maxConnectionsPerDestination its transport's (a change of those makes
// a new transport, as any client setting does).
func (r *run) limits(i int, l *config.UpstreamLimits, cu *compiledUpstream) {
	at := upPath(i, ".limits")
	lim := proxy.Limits{MaxInFlight: l.MaxInFlight, MaxRetriesInFlight: l.MaxRetriesInFlight}
	if err := proxy.CheckLimits(lim); err != nil {
		r.under(at, err, limitsPath) // said once here, not again by each route
	} else {
		cu.limits = lim
	}
	cc := proxy.ClientConfig{MaxConnsPerDestination: l.MaxConnectionsPerDestination, MaxPending: l.MaxPending}
	if err := cc.Validate(); err != nil {
		r.under(at, err, limitsPath)
	} else {
		cu.client.MaxConnsPerDestination, cu.client.MaxPending = cc.MaxConnsPerDestination, cc.MaxPending
	}
}

// limitsPath maps the owners' paths onto the limits block.
func limitsPath(p string) string {
	return renameHead(p, "maxConnsPerDestination", "maxConnectionsPerDestination")
}
