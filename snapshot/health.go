package snapshot

import (
	"errors"
	"strings"
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
			Enabled:   h.Active.Enabled,
			Interval:  dur(h.Active.Interval),
			Timeout:   dur(h.Active.Timeout),
			Policy:    h.Active.Policy,
			Path:      h.Active.Path,
			Query:     h.Active.Query,
			Threshold: h.Active.Threshold,
		},
		ProbeFirst: h.ProbeFirst,
		Passive: health.PassiveConfig{
			Enabled:            h.Passive.Enabled,
			Policy:             h.Passive.Policy,
			Window:             dur(h.Passive.Window),
			MinRequests:        h.Passive.MinRequests,
			FailureRate:        h.Passive.FailureRate,
			ReactivationPeriod: dur(h.Passive.ReactivationPeriod),
		},
		Metadata: u.Metadata,
	}
	if c.Passive.Policy == "TransportFailureRateWith5xx" {
		c.Passive.Policy = health.PassiveFailureRateWith5xx
	}
	return c
}

// healthProblems converts the health package's problems into the
// snapshot's: paths into the upstream's health block or its metadata, and
// the document's names where they differ from the health config's (the
// rate limit is the document's failureRate).
func healthProblems(i int, errs []error) []*ValidationError {
	out := make([]*ValidationError, 0, len(errs))
	for _, err := range errs {
		var he *health.ValidationError
		if !errors.As(err, &he) {
			out = append(out, &ValidationError{Code: "upstream.health.invalid", Path: upPath(i, ".health"), Msg: err.Error()})
			continue
		}
		code, path := "upstream."+he.Code, upPath(i, ".health."+he.Path)
		if key, ok := strings.CutPrefix(he.Path, "metadata["); ok {
			path = joinKey(upPath(i, ".metadata"), strings.TrimSuffix(key, "]"))
		}
		out = append(out, &ValidationError{Code: code, Path: path, Msg: he.Msg})
	}
	return out
}
