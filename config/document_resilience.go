package config

// OutlierHealth configures outlier ejection: a health.OutlierConfig,
// whose package owns every rule and default. Absent (both thresholds 0)
// means no outlier ejection; a destination that refuses a connection is
// ejected anyway, for a short time, with or without this block.
type OutlierHealth struct {
	// ConsecutiveGatewayErrors ejects a destination after this many 502,
	// 503 or 504 answers or transport failures in a row; 0 is off.
	ConsecutiveGatewayErrors int `json:"consecutiveGatewayErrors,omitempty"`
	// Consecutive5xx ejects a destination after this many answers of 500
	// or more (or transport failures) in a row; 0 is off.
	Consecutive5xx int `json:"consecutive5xx,omitempty"`
	// BaseEjectionTime is the first ejection's time, multiplied by the
	// number of ejections in a row; default 30s.
	BaseEjectionTime Duration `json:"baseEjectionTime,omitempty"`
	// MaxEjectionTime caps it; default 300s.
	MaxEjectionTime Duration `json:"maxEjectionTime,omitempty"`
	// MaxEjectionPercent is the largest share of the upstream's
	// destinations ejected at once, 1 to 100 (one may always be);
	// default 50.
	MaxEjectionPercent int `json:"maxEjectionPercent,omitempty"`
}
