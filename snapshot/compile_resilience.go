package snapshot

import (
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/proxy"
)

// outlierConfig maps an upstream's outlier block onto health's config.
func outlierConfig(o *config.OutlierHealth) health.OutlierConfig {
	return health.OutlierConfig{
		ConsecutiveGatewayErrors: o.ConsecutiveGatewayErrors,
		Consecutive5xx:           o.Consecutive5xx,
		BaseEjectionTime:         duration(o.BaseEjectionTime),
		MaxEjectionTime:          duration(o.MaxEjectionTime),
		MaxEjectionPercent:       o.MaxEjectionPercent,
	}
}

// connectFailures maps a route's retry.connectFailures onto proxy's
// setting, recording an unknown name at path.
func (r *run) connectFailures(path func() string, v string) proxy.ConnectFailures {
	return name(r, path, v, proxy.ParseConnectFailures, proxy.ConnectFailuresNames(), proxy.CodeRetryConnectFailuresUnknown)
}
