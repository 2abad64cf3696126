package upstream

import "github.com/paduraksa/paduraksa/telemetry"

// NumOutcomes is the number of [Outcome] values.
const NumOutcomes = int(RequestInvalid) + 1

// Metrics count a destination's exchanges and health checks. They live
// on the long-lived Destination, so they survive publishes that keep it
// and go away with it.
type Metrics struct {
	// Outcomes counts the exchanges, one per attempt the forwarder sent
	// to the destination, by how each ended; TTFB is the time from
	// sending to the response header of those that got one.
	Outcomes [NumOutcomes]telemetry.Counter
	TTFB     telemetry.Histogram
	// Probe is the duration of the active health probes, ProbeFailures
	// counts the probes that failed, HealthChanges the changes of either
	// verdict (active or passive) and the ejections and returns.
	Probe                        telemetry.Histogram
	ProbeFailures, HealthChanges telemetry.Counter
	// Ejections counts the destination's ejections by [EjectReason],
	// Returns its returns to rotation from an ejection.
	Ejections [NumEjectReasons]telemetry.Counter
	Returns   telemetry.Counter
}

// Count counts one exchange that ended with out.
func (m *Metrics) Count(out Outcome) {
	if int(out) < NumOutcomes {
		m.Outcomes[out].Inc()
	}
}

// Metrics returns the destination's counters.
func (d *Destination) Metrics() *Metrics { return &d.metrics }
