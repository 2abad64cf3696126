package snapshot

import (
	"errors"
	"strconv"
	"time"

	"github.com/paduraksa/paduraksa/health"
)

// healthConfig maps an upstream's health block to the health package's
// config. Durations were validated before; a bad one here reads as 0 (the
// default) rather than failing twice.
func healthConfig(u *Upstream) health.Config {
	h := &u.Health
	dur := func(d Duration) time.Duration { v, _ := ParseDuration(d, 0); return v }
	c := health.Config{
		Availability: h.Availability,
		Active: health.ActiveConfig{
			Enabled:    h.Active.Enabled,
			Interval:   dur(h.Active.Interval),
			Timeout:    dur(h.Active.Timeout),
			Policy:     h.Active.Policy,
			Path:       h.Active.Path,
			Query:      h.Active.Query,
			ProbeFirst: h.ProbeFirst,
		},
		Passive: health.PassiveConfig{
			Enabled:            h.Passive.Enabled,
			Policy:             h.Passive.Policy,
			Window:             dur(h.Passive.Window),
			MinRequests:        h.Passive.MinRequests,
			RateLimit:          h.Passive.FailureRate,
			ReactivationPeriod: dur(h.Passive.ReactivationPeriod),
		},
		Metadata: u.Metadata,
	}
	if c.Passive.Policy == "TransportFailureRateWith5xx" {
		c.Passive.Policy = health.PassiveFailureRateWith5xx
	}
	if t := h.Active.Threshold; t > 0 {
		md := make(map[string]string, len(u.Metadata)+1)
		for k, v := range u.Metadata {
			md[k] = v
		}
		md[health.MetadataThreshold] = strconv.Itoa(t)
		c.Metadata = md
	}
	return c
}

// healthProblems converts the health package's problems into the
// snapshot's, under the upstream's path.
func healthProblems(i int, errs []error) []*ValidationError {
	out := make([]*ValidationError, 0, len(errs))
	for _, err := range errs {
		var he *health.ValidationError
		if errors.As(err, &he) {
			out = append(out, &ValidationError{Code: "upstream." + he.Code, Path: upPath(i, ".health."+he.Path), Msg: he.Msg})
		} else {
			out = append(out, &ValidationError{Code: "upstream.health.invalid", Path: upPath(i, ".health"), Msg: err.Error()})
		}
	}
	return out
}
