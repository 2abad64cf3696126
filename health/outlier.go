package health

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/paduraksa/paduraksa/internal/clock"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/internal/seam"
	"github.com/paduraksa/paduraksa/upstream"
)

// OutlierConfig configures outlier ejection: a destination whose answers
// fail several times in a row is ejected, out of rotation for a while,
// whatever the passive window says. The zero value ejects nothing (both
// thresholds are off); zero durations and share take the defaults.
type OutlierConfig struct {
	// ConsecutiveGatewayErrors ejects a destination after this many
	// gateway errors in a row: 502, 503 and 504 answers, and transport
	// failures (connect, TLS, timeout, a broken response), which the
	// forwarder answers 502 or 504 for. Any other answer ends the run.
	// 0 is off.
	ConsecutiveGatewayErrors int
	// Consecutive5xx ejects a destination after this many answers of 500
	// or more (and transport failures) in a row; an answer below 500 ends
	// the run. 0 is off.
	Consecutive5xx int
	// BaseEjectionTime is how long the first ejection lasts; the n-th one
	// in a row lasts n times as long, capped at MaxEjectionTime. The count
	// falls by one for every BaseEjectionTime the destination then spends
	// in rotation. 0 means 30 s.
	BaseEjectionTime time.Duration
	// MaxEjectionTime caps an ejection's time; 0 means 300 s. It must not
	// be shorter than BaseEjectionTime.
	MaxEjectionTime time.Duration
	// MaxEjectionPercent is the largest share of the cluster's
	// destinations ejected at once, 1 to 100; 0 means 50. One destination
	// may always be ejected, so that a small cluster still ejects its
	// outlier (Envoy's always_eject_one_host): a cluster-wide fault never
	// empties more than the share, and when every destination is out the
	// availability policy decides (HealthyOrPanic serves from all).
	MaxEjectionPercent int
}

// Defaults of [OutlierConfig], and the ejection of a destination that
// refused a connection.
const (
	DefaultBaseEjectionTime   = 30 * time.Second
	DefaultMaxEjectionTime    = 300 * time.Second
	DefaultMaxEjectionPercent = 50

	// ConnectFailureEjectionTime is how long a destination that refused
	// a connection (a request to it never left: see
	// [upstream.Observation.NotSent]) stays out of rotation, unless an
	// active probe passes first. It is short: without active checks, the
	// destination is tried again after it, and a request that finds it
	// still refusing is sent elsewhere and ejects it again.
	ConnectFailureEjectionTime = 2 * time.Second
)

// enabled reports whether o ejects anything.
func (o OutlierConfig) enabled() bool { return o.ConsecutiveGatewayErrors > 0 || o.Consecutive5xx > 0 }

// outlierSettings is an OutlierConfig with its defaults applied.
type outlierSettings struct {
	enabled       bool
	gateway, five int64
	base, max     time.Duration
	percent       int
}

// resolveOutlier applies the defaults of o and records its problems.
func resolveOutlier(o OutlierConfig, s *outlierSettings, errs, warns *problem.List) {
	s.enabled = o.enabled()
	s.gateway, s.five = int64(o.ConsecutiveGatewayErrors), int64(o.Consecutive5xx)
	s.base = orDefault(o.BaseEjectionTime, DefaultBaseEjectionTime)
	s.max = orDefault(o.MaxEjectionTime, DefaultMaxEjectionTime)
	s.percent = o.MaxEjectionPercent
	if s.percent == 0 {
		s.percent = DefaultMaxEjectionPercent
	}
	if o.ConsecutiveGatewayErrors < 0 {
		errs.Add(CodeOutlierThresholdInvalid, "outlier.consecutiveGatewayErrors", "must not be negative (0 is off)")
	}
	if o.Consecutive5xx < 0 {
		errs.Add(CodeOutlierThresholdInvalid, "outlier.consecutive5xx", "must not be negative (0 is off)")
	}
	if o.BaseEjectionTime < 0 {
		errs.Add(CodeOutlierEjectionTimeInvalid, "outlier.baseEjectionTime", "must not be negative (0 means 30s)")
	}
	switch {
	case o.MaxEjectionTime < 0:
		errs.Add(CodeOutlierEjectionTimeInvalid, "outlier.maxEjectionTime", "must not be negative (0 means 300s)")
	case o.BaseEjectionTime >= 0 && s.max < s.base:
		errs.Add(CodeOutlierEjectionTimeInvalid, "outlier.maxEjectionTime",
			fmt.Sprintf("%v is shorter than the base ejection time %v", s.max, s.base))
	}
	if o.MaxEjectionPercent < 0 || o.MaxEjectionPercent > 100 {
		errs.Add(CodeOutlierPercentInvalid, "outlier.maxEjectionPercent", strconv.Itoa(o.MaxEjectionPercent)+" is not 1 to 100 (0 means 50)")
	}
	if !s.enabled && o != (OutlierConfig{}) && o.ConsecutiveGatewayErrors >= 0 && o.Consecutive5xx >= 0 {
		warns.Add(CodeOutlierOff, "outlier", "neither consecutiveGatewayErrors nor consecutive5xx is set: nothing is ejected")
	}
}

// ejection is a destination's ejection state. Guarded by Monitor.mu; the
// destination's own flag ([upstream.Destination.Ejected]) is set and
// cleared under the same lock.
type ejection struct {
	reason upstream.EjectReason
	count  int   // the ejection multiplier
	at     int64 // unix ns of the current (or last) ejection
	until  int64 // unix ns at which the current one ends
	back   int64 // unix ns of the last return
	gen    uint64
	t      clock.Timer
}

// Ejection is a destination's current ejection, as [Monitor.Ejection]
// reports it.
type Ejection struct {
	Reason upstream.EjectReason
	// Since and Until bound the ejection; Count is its multiplier (1 for
	// a first outlier ejection; 0 for a connection refused, which does
	// not grow).
	Since, Until time.Time
	Count        int
}

// Ejection returns the destination's current ejection, and false when it
// is in rotation. It is safe for concurrent use.
func (m *Monitor) Ejection(d *upstream.Destination) (Ejection, bool) {
	st, _ := d.Attached(seam.Open()).(*destState)
	if st == nil || m.timers == nil || !d.Ejected() {
		return Ejection{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	e := &st.ej
	if !d.Ejected() {
		return Ejection{}, false
	}
	return Ejection{Reason: e.reason, Since: time.Unix(0, e.at), Until: time.Unix(0, e.until), Count: e.count}, true
}

// refused ejects a destination a request to which never left, for
// ConnectFailureEjectionTime: a refused connection is a fact about the
// destination, not a judgement of a share of its traffic, so it is not
// held to the outlier share either. It needs no health config: the
// forwarder reports it for every cluster whose observer the monitor is.
func (m *Monitor) refused(d *upstream.Destination, o upstream.Observation) {
	if d.Ejected() || d.Removed() {
		return
	}
	st := stateOf(d)
	if st == nil {
		return
	}
	m.eject(d, st, upstream.EjectConnectFailure, nil, false,
		o.Outcome.String()+" before the request was written")
}

// observeOutlier counts an exchange in the destination's runs of gateway
// errors and 5xx answers and ejects it when a run reaches its threshold.
// On a success it costs two loads.
func (m *Monitor) observeOutlier(d *upstream.Destination, st *destState, s *settings, o upstream.Observation) {
	failed := o.Outcome.TransportFailure()
	gw := failed || o.Status == http.StatusBadGateway || o.Status == http.StatusServiceUnavailable || o.Status == http.StatusGatewayTimeout
	five := failed || o.Status >= 500
	if !gw {
		if st.gwRun.Load() != 0 {
			st.gwRun.Store(0)
		}
	}
	if !five {
		if st.fiveRun.Load() != 0 {
			st.fiveRun.Store(0)
		}
		return
	}
	if d.Ejected() {
		return
	}
	so := &s.outlier
	if gw && so.gateway > 0 {
		if n := st.gwRun.Add(1); n >= so.gateway {
			m.eject(d, st, upstream.EjectGatewayErrors, so, n == so.gateway, fmt.Sprintf("%d gateway errors in a row (%s)", n, describeObservation(o)))
			return
		}
	}
	if so.five > 0 {
		if n := st.fiveRun.Add(1); n >= so.five {
			m.eject(d, st, upstream.Eject5xx, so, n == so.five, fmt.Sprintf("%d 5xx in a row (%s)", n, describeObservation(o)))
		}
	}
}

func describeObservation(o upstream.Observation) string {
	if o.Status != 0 {
		return "last " + strconv.Itoa(o.Status)
	}
	return "last " + o.Outcome.String()
}

// eject takes d out of rotation for reason: an outlier's (so not nil)
// within the cluster's share, for its grown time; a refused connection's
// (so nil) for ConnectFailureEjectionTime. An outlier the share keeps in
// rotation stays a candidate at each failure of its run; logDenied logs
// the refusal, once per run.
func (m *Monitor) eject(d *upstream.Destination, st *destState, reason upstream.EjectReason, so *outlierSettings, logDenied bool, why string) {
	m.mu.Lock()
	if m.state == closed || d.Ejected() {
		m.mu.Unlock()
		return
	}
	now := m.clock.Now()
	e := &st.ej
	period := ConnectFailureEjectionTime
	if so != nil {
		if !shareAllows(d, so.percent) {
			m.mu.Unlock()
			if !logDenied {
				return
			}
			m.log.Warn("health: outlier not ejected: the cluster's share of ejected destinations is reached",
				"cluster", d.ClusterID(), "destination", d.ID(), "maxEjectionPercent", so.percent, "reason", why)
			return
		}
		if e.count > 0 && e.back > e.at {
			e.count -= int((now.UnixNano() - e.back) / int64(so.base))
			e.count = max(e.count, 0)
		}
		e.count++
		period = min(so.base*time.Duration(e.count), so.max)
		st.gwRun.Store(0)
		st.fiveRun.Store(0)
	}
	e.reason, e.at, e.until = reason, now.UnixNano(), now.Add(period).UnixNano()
	e.gen++
	gen := e.gen
	if e.t != nil {
		e.t.Stop()
	}
	e.t = m.clock.AfterFunc(period, func() { m.unEject(d, st, gen, "ejection time elapsed") })
	m.ejected[st] = struct{}{}
	d.SetEjected(seam.Open(), true)
	m.mu.Unlock()
	d.Metrics().Ejections[reason].Inc()
	m.changeEjection(d, upstream.Unknown, upstream.Unhealthy, reason, period,
		fmt.Sprintf("ejected (%s): %s; back in %v", reason, why, period))
}

// shareAllows reports whether one more of d's cluster may be ejected
// under percent: the share after the ejection is within it, or none is
// ejected yet.
func shareAllows(d *upstream.Destination, percent int) bool {
	all := d.Cluster().Members().All
	ejected := 0
	for _, x := range all {
		if x.Ejected() {
			ejected++
		}
	}
	return ejected == 0 || (ejected+1)*100 <= percent*len(all)
}

// unEject returns d to rotation, if its ejection is still the one of gen
// (or any, with gen 0).
func (m *Monitor) unEject(d *upstream.Destination, st *destState, gen uint64, why string) {
	m.mu.Lock()
	e := &st.ej
	if (gen != 0 && e.gen != gen) || !d.Ejected() {
		m.mu.Unlock()
		return
	}
	if e.t != nil {
		e.t.Stop()
		e.t = nil
	}
	delete(m.ejected, st)
	e.back = m.clock.Now().UnixNano()
	reason := e.reason
	d.SetEjected(seam.Open(), false)
	m.mu.Unlock()
	d.Metrics().Returns.Inc()
	m.changeEjection(d, upstream.Unhealthy, upstream.Unknown, reason, 0, "returned from ejection ("+reason.String()+"): "+why)
}

// probePassed ends d's ejection when it began before the probe did.
func (m *Monitor) probePassed(d *upstream.Destination, st *destState, start time.Time) {
	if !d.Ejected() {
		return
	}
	m.mu.Lock()
	gen, at := st.ej.gen, st.ej.at
	m.mu.Unlock()
	if at < start.UnixNano() {
		m.unEject(d, st, gen, "active probe passed")
	}
}

// endOutlier ends d's ejection when an outlier's rule made it: the
// cluster's outlier checks are off.
func (m *Monitor) endOutlier(d *upstream.Destination, st *destState) {
	m.mu.Lock()
	gen, reason := st.ej.gen, st.ej.reason
	m.mu.Unlock()
	st.gwRun.Store(0)
	st.fiveRun.Store(0)
	if reason != upstream.EjectConnectFailure {
		m.unEject(d, st, gen, "outlier checks turned off")
	}
}

func (m *Monitor) changeEjection(d *upstream.Destination, old, new upstream.HealthState, reason upstream.EjectReason, period time.Duration, msg string) {
	d.Metrics().HealthChanges.Inc()
	m.emit(Change{ClusterID: d.ClusterID(), DestinationID: d.ID(), Destination: d, Check: CheckEjection,
		Old: old, New: new, Reason: msg, EjectReason: reason, EjectedFor: period, Time: m.clock.Now()})
}
