package health

import (
	"strconv"

	"github.com/paduraksa/paduraksa/upstream"
)

// ActivePolicy turns the result of one probe into the destination's active
// verdict. The [Monitor] calls it on a probe worker, once per probe, with the
// destination's run of consecutive failures already counted; the returned
// state replaces the active verdict and reason explains a change.
// Implementations must be safe for concurrent use.
type ActivePolicy interface {
	Evaluate(r ProbeResult) (state upstream.HealthState, reason string)
}

// ConsecutiveFailures is the built-in active policy: a destination becomes
// unhealthy after Threshold failed probes in a row, and healthy again on the
// first probe that passes.
type ConsecutiveFailures struct{}

var _ ActivePolicy = ConsecutiveFailures{}

// Evaluate implements [ActivePolicy].
func (ConsecutiveFailures) Evaluate(r ProbeResult) (upstream.HealthState, string) {
	if r.OK {
		return upstream.Healthy, "probe passed with status " + strconv.Itoa(r.StatusCode)
	}
	if r.ConsecutiveFailures >= r.Threshold {
		return upstream.Unhealthy, strconv.Itoa(r.ConsecutiveFailures) + " consecutive probes failed, last: " + describe(r)
	}
	return r.Destination.ActiveHealth(), ""
}

func describe(r ProbeResult) string {
	if r.Err != nil {
		return r.Outcome.String() + ": " + r.Err.Error()
	}
	return "status " + strconv.Itoa(r.StatusCode)
}
