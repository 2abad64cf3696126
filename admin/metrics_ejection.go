package admin

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// The series of connect-failure retries and ejections.
var (
	dConnRetries = desc("upstream_connect_retries_total", "Retries of requests that never left (connection refused or reset, connect timeout, failed TLS handshake or PROXY header), by upstream; counted in upstream_retries_total too.", "upstream")
	dEjected     = desc("destination_ejected", "1 while the destination is ejected (out of rotation for a refused connection or as an outlier), else 0.", "upstream", "destination")
	dEjections   = desc("destination_ejections_total", "Ejections of a destination, by reason (upstream.EjectReasonNames: connectFailure, consecutiveGatewayErrors, consecutive5xx).", "upstream", "destination", "reason")
	dReturns     = desc("destination_ejection_returns_total", "Returns of a destination to rotation from an ejection.", "upstream", "destination")

	ejectionDescs = []*prometheus.Desc{dConnRetries, dEjected, dEjections, dReturns}
)

// connectRetries reports an upstream's retries of requests that never left.
func (c collector) connectRetries(st *proxy.Stats, up string) {
	c.counter(dConnRetries, st.ConnectRetries(), up)
}

// ejections reports a destination's ejection state and counts.
func (c collector) ejections(d *upstream.Destination, up, id string) {
	c.gauge(dEjected, b2f(d.Ejected()), up, id)
	dm := d.Metrics()
	for i, reason := range upstream.EjectReasonNames() {
		c.counter(dEjections, dm.Ejections[i].Load(), up, id, reason)
	}
	c.counter(dReturns, dm.Returns.Load(), up, id)
}
