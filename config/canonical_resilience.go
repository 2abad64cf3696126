package config

import (
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/proxy"
)

// outlier writes a health block's outlier block; what
// health.Config.Resolve fills in writes nothing.
func (e *canonEnc) outlier(o *OutlierHealth, def health.OutlierConfig) {
	m := e.open("outlier")
	e.integer("consecutiveGatewayErrors", o.ConsecutiveGatewayErrors, 0)
	e.integer("consecutive5xx", o.Consecutive5xx, 0)
	e.durationOr("baseEjectionTime", o.BaseEjectionTime, def.BaseEjectionTime)
	e.durationOr("maxEjectionTime", o.MaxEjectionTime, def.MaxEjectionTime)
	e.integer("maxEjectionPercent", o.MaxEjectionPercent, def.MaxEjectionPercent)
	e.close(m, false)
}

// retryConnectFailures writes a retry block's connectFailures; the
// default ("on") writes nothing.
func (e *canonEnc) retryConnectFailures(r *RouteRetry) {
	e.strDefault("connectFailures", r.ConnectFailures, proxy.ConnectFailuresNames()[0])
}
