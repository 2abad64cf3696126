package health

import (
	"fmt"
	"sync/atomic"

	"github.com/paduraksa/paduraksa/internal/clock"
	"github.com/paduraksa/paduraksa/internal/seam"
	"github.com/paduraksa/paduraksa/upstream"
)

// PassivePolicy judges a destination from the outcomes of proxied requests
// in its window. The [Monitor] keeps the window (a lock-free ring of time
// buckets per destination) and asks the policy two questions; both run on
// the request path, so they must be fast, must not block and should not
// allocate. Implementations must be safe for concurrent use.
type PassivePolicy interface {
	// Failure reports whether an exchange counts as a failure. It is never
	// called with a client-side outcome ([upstream.Outcome.ClientSide]):
	// those are not the destination's doing, and are not counted at all.
	Failure(o upstream.Observation) bool
	// Unhealthy reports whether a destination whose window holds w is
	// unhealthy. It is called after each failure while the destination's
	// passive verdict is not Unhealthy already.
	Unhealthy(w Window) bool
}

// Window is what a destination's passive window holds, with the cluster's
// thresholds.
type Window struct {
	// Requests and Failures are counted in the window, the current outcome
	// included.
	Requests, Failures int64
	// MinRequests and RateLimit are the cluster's settings.
	MinRequests int64
	RateLimit   float64
}

// FailureRate is the built-in passive policy: a destination is unhealthy when
// its window holds at least MinRequests outcomes and more than RateLimit of
// them are failures. Failures are transport failures
// ([upstream.Outcome.TransportFailure]: connect, TLS, timeout, response
// header and body errors); with Count5xx, completed exchanges whose status
// is 500 or more count too (the FailureRateWith5xx policy).
type FailureRate struct {
	Count5xx bool
}

var _ PassivePolicy = FailureRate{}

// Failure implements [PassivePolicy].
func (p FailureRate) Failure(o upstream.Observation) bool {
	return o.Outcome.TransportFailure() || (p.Count5xx && o.Outcome == upstream.Success && o.Status >= 500)
}

// Unhealthy implements [PassivePolicy].
func (FailureRate) Unhealthy(w Window) bool {
	return w.Requests >= w.MinRequests && w.Requests > 0 &&
		float64(w.Failures) > w.RateLimit*float64(w.Requests)
}

// ringBuckets is the number of time buckets in a passive window.
const ringBuckets = 10

// ring counts requests and failures over a sliding window of ringBuckets
// buckets. Each bucket is one word: the low 24 bits of its epoch (time /
// width), then 20 bits of requests and 20 bits of failures, saturating. A
// writer that finds an old epoch in the bucket resets it with the same CAS
// that counts, so updates take no lock and allocate nothing.
type ring struct {
	width int64 // bucket width in nanoseconds
	b     [ringBuckets]atomic.Uint64
}

const (
	epochBits = 24
	epochMask = 1<<epochBits - 1
	countBits = 20
	countMax  = 1<<countBits - 1
)

func newRing(window int64) *ring {
	return &ring{width: max(window/ringBuckets, 1)}
}

// add counts one outcome at now (unix nanoseconds).
func (r *ring) add(now int64, failure bool) {
	e := uint64(now/r.width) & epochMask
	slot := &r.b[(now/r.width)%ringBuckets]
	var f uint64
	if failure {
		f = 1
	}
	for {
		w := slot.Load()
		n := e<<(2*countBits) | 1<<countBits | f
		if w != 0 && w>>(2*countBits) == e {
			req, fail := w>>countBits&countMax, w&countMax
			req = min(req+1, countMax)
			fail = min(fail+f, countMax)
			n = e<<(2*countBits) | req<<countBits | fail
		}
		if slot.CompareAndSwap(w, n) {
			return
		}
	}
}

// sum returns the requests and failures counted in the window ending at
// now.
func (r *ring) sum(now int64) (requests, failures int64) {
	e := uint64(now/r.width) & epochMask
	for i := range r.b {
		w := r.b[i].Load()
		if w == 0 || (e-w>>(2*countBits))&epochMask >= ringBuckets {
			continue
		}
		requests += int64(w >> countBits & countMax)
		failures += int64(w & countMax)
	}
	return requests, failures
}

// reset forgets every count.
func (r *ring) reset() {
	for i := range r.b {
		r.b[i].Store(0)
	}
}

type reactivation struct {
	t   clock.Timer
	gen uint64
}

// A Monitor is the forwarder's observer as it is: a hand-built
// proxy.Cluster gets passive health with Observer set to the monitor.
var _ upstream.Observer = (*Monitor)(nil)

// Observe counts one exchange with a destination in its passive window and
// marks the destination unhealthy when its cluster's passive policy says
// so. The forwarder calls it once per exchange that reached the round
// trip. It takes no lock and allocates nothing, except on the exchange
// that changes the verdict. Client-side outcomes and observations
// without a destination are ignored.
//
// An observation whose request never left ([upstream.Observation.NotSent])
// ejects its destination at once, for [ConnectFailureEjectionTime], in
// any cluster, with or without a health config: the forwarder reports it
// only to the observer of the destination's cluster. Outlier runs and
// the passive window count only in the clusters the monitor checks, with
// those checks on.
func (m *Monitor) Observe(o upstream.Observation) {
	d := o.Destination
	if o.Outcome.ClientSide() || d == nil || m.timers == nil {
		return
	}
	if o.NotSent {
		m.refused(d, o)
	}
	st, _ := d.Attached(seam.Open()).(*destState)
	if st == nil {
		return
	}
	cs := st.cs.Load()
	if cs == nil {
		return
	}
	s := cs.s.Load()
	if s.outlier.enabled {
		m.observeOutlier(d, st, s, o)
	}
	r := st.ring.Load()
	if !s.passive.enabled || r == nil {
		return
	}
	failure := s.passive.policy.Failure(o)
	now := m.clock.Now().UnixNano()
	r.add(now, failure)
	if !failure || d.PassiveHealth() == upstream.Unhealthy {
		return
	}
	req, fail := r.sum(now)
	w := Window{Requests: req, Failures: fail, MinRequests: s.passive.minRequests, RateLimit: s.passive.rateLimit}
	if s.passive.policy.Unhealthy(w) {
		m.markPassive(d, st, s, w, now)
	}
}

func (m *Monitor) markPassive(d *upstream.Destination, st *destState, s *settings, w Window, now int64) {
	old := d.SetPassiveHealth(upstream.Unhealthy)
	if old == upstream.Unhealthy {
		return // another request got there first
	}
	st.passiveAt.Store(now)
	gen := st.passiveGen.Add(1)
	period := s.passive.reactivation
	m.change(d, CheckPassive, old, upstream.Unhealthy, fmt.Sprintf(
		"%d of %d requests failed in the %v window (limit %g); reactivation in %v",
		w.Failures, w.Requests, s.passive.window, w.RateLimit, period))
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state == closed {
		return
	}
	if r, ok := m.timers[st]; ok {
		r.t.Stop()
	}
	m.timers[st] = reactivation{gen: gen, t: m.clock.AfterFunc(period, func() { m.reactivate(d, st, gen) })}
}

func (m *Monitor) reactivate(d *upstream.Destination, st *destState, gen uint64) {
	m.mu.Lock()
	if r, ok := m.timers[st]; ok && r.gen == gen {
		delete(m.timers, st)
	}
	m.mu.Unlock()
	if st.passiveGen.Load() != gen {
		return
	}
	if r := st.ring.Load(); r != nil {
		r.reset()
	}
	if old := d.SetPassiveHealth(upstream.Unknown); old != upstream.Unknown {
		m.change(d, CheckPassive, old, upstream.Unknown, "reactivation period elapsed")
	}
}

// endPassive ends a passive verdict before its reactivation.
func (m *Monitor) endPassive(d *upstream.Destination, st *destState, reason string) {
	st.passiveGen.Add(1)
	m.mu.Lock()
	if r, ok := m.timers[st]; ok {
		r.t.Stop()
		delete(m.timers, st)
	}
	m.mu.Unlock()
	if r := st.ring.Load(); r != nil {
		r.reset()
	}
	if old := d.SetPassiveHealth(upstream.Unknown); old != upstream.Unknown {
		m.change(d, CheckPassive, old, upstream.Unknown, reason)
	}
}
