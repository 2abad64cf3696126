package admin

import "github.com/paduraksa/paduraksa/proxy"

// The circuit breakers' series (proxy.Limits and the transport's), by
// upstream and limit (proxy.LimitNames).
var (
	dLimit      = desc("upstream_limit", "A circuit breaker's threshold, 0 for none, by limit: maxInFlight, maxPending, maxRetriesInFlight, maxConnectionsPerDestination.", "upstream", "limit")
	dLimitTrips = desc("upstream_limit_trips_total", "Requests a circuit breaker answered 503 at once (for maxRetriesInFlight: retries it kept from being sent), by limit.", "upstream", "limit")
	dLimitNow   = desc("upstream_limit_current", "What a circuit breaker counts now: requests in flight (counted while maxInFlight is set), requests waiting for a connection of the direct HTTP/1.1 client (maxPending), retries in flight (counted while maxRetriesInFlight is set).", "upstream", "limit")
)

// limits reports a cluster's circuit breakers.
func (c collector) limits(up string, pc *proxy.Cluster) {
	st := pc.Stats
	if st == nil {
		return
	}
	var cc proxy.ClientConfig
	var pending int64
	if t, ok := pc.Transport.(*proxy.Transport); ok {
		cc, pending = t.Config(), t.Pending()
	}
	thresholds := [...]int{pc.Limits.MaxInFlight, cc.MaxPending, pc.Limits.MaxRetriesInFlight, cc.MaxConnsPerDestination}
	for i, name := range proxy.LimitNames() {
		c.gauge(dLimit, float64(thresholds[i]), up, name)
		c.counter(dLimitTrips, st.Trips(proxy.Limit(i)), up, name)
	}
	c.gauge(dLimitNow, float64(st.InFlight()), up, "maxInFlight")
	c.gauge(dLimitNow, float64(pending), up, "maxPending")
	c.gauge(dLimitNow, float64(st.RetriesInFlight()), up, "maxRetriesInFlight")
}
