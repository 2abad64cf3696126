package config

// upstreamLimits writes an upstream's limits block, each limit left out
// when it is 0 (none), the block when all are.
func (e *canonEnc) upstreamLimits(l *UpstreamLimits) {
	if *l == (UpstreamLimits{}) {
		return
	}
	m := e.open("limits")
	e.integer("maxInFlight", l.MaxInFlight, 0)
	e.integer("maxPending", l.MaxPending, 0)
	e.integer("maxRetriesInFlight", l.MaxRetriesInFlight, 0)
	e.integer("maxConnectionsPerDestination", l.MaxConnectionsPerDestination, 0)
	e.close(m, false)
}
