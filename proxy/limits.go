package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/h1client"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// Limits are a cluster's circuit breakers on the forwarder's side: past
// one, a request is answered 503 at once, with Retry-After
// ([OverloadRetryAfter]) and the error kind "overloaded" in its record,
// and counted as a trip of that [Limit] in the cluster's [Stats]. Nothing
// queues, and no destination is blamed: the flood is the clients', not
// the upstream's failure, so health never sees it. The zero value sets
// no limit. The limits on connections ([ClientConfig.MaxPending],
// [ClientConfig.MaxConnsPerDestination]) are the transport's.
//
// The counts are atomics in the cluster's Stats, kept per cluster ID
// across publishes, so a publish that changes a threshold counts on; one
// that sets a threshold where there was none counts the requests
// admitted from then on, not those already in flight. A Cluster with
// Limits needs Stats ([NewRoute] refuses one without). Mirrored copies
// are bounded by their mirror's own MaxInFlight, not by these.
type Limits struct {
	// MaxInFlight bounds the requests of the cluster in flight at once,
	// from their admission to the end of their answer (streams and
	// upgrades included); 0 means no limit.
	MaxInFlight int
	// MaxRetriesInFlight bounds the retries in flight at once across the
	// cluster's routes, each from its sending to its response header (as
	// a route's retry budget counts them); 0 means no limit. Past it no
	// retry is sent: the failure is answered as without retries (502,
	// 504), and the trip counted.
	MaxRetriesInFlight int
}

// MaxLimit bounds every threshold of [Limits] and the transport's.
const MaxLimit = 1 << 20

// OverloadRetryAfter is the Retry-After of a 503 past a limit: one
// second, the time a flood's backlog takes to move on a busy upstream,
// and short enough that a client that waits it loses little.
const OverloadRetryAfter = "1"

var retryAfter = []string{OverloadRetryAfter}

// Limit names one circuit breaker.
type Limit uint8

const (
	// LimitInFlight is [Limits.MaxInFlight].
	LimitInFlight Limit = iota
	// LimitPending is [ClientConfig.MaxPending].
	LimitPending
	// LimitRetries is [Limits.MaxRetriesInFlight].
	LimitRetries
	// LimitConnections is [ClientConfig.MaxConnsPerDestination]: a
	// request whose wait for a connection at the limit ended with its
	// deadline.
	LimitConnections
	numLimits
)

var limitNames = enum.Names[Limit]{"maxInFlight", "maxPending", "maxRetriesInFlight", "maxConnectionsPerDestination"}

// String returns the limit's name as the document writes it.
func (l Limit) String() string { return limitNames.Name(l) }

// LimitNames returns the names of the limits: the fields of a document's
// upstreams[].limits and the label values of their metrics.
func LimitNames() []string { return limitNames }

// limitCounters are a cluster's breaker counts, in its Stats.
type limitCounters struct {
	inFlight atomic.Int64
	_        [56]byte
	retries  atomic.Int64
	trips    [numLimits]atomic.Uint64
}

// InFlight returns the cluster's requests in flight, counted only while
// its [Limits.MaxInFlight] is set.
func (s *Stats) InFlight() int64 { return s.limits.inFlight.Load() }

// RetriesInFlight returns the cluster's retries in flight, counted only
// while its [Limits.MaxRetriesInFlight] is set.
func (s *Stats) RetriesInFlight() int64 { return s.limits.retries.Load() }

// Trips returns how many requests limit l refused (or, for
// [LimitRetries], how many retries it kept from being sent).
func (s *Stats) Trips(l Limit) uint64 {
	if l >= numLimits {
		return 0
	}
	return s.limits.trips[l].Load()
}

// CheckLimits reports every problem of l, each a [ValidationError] with
// a path relative to l, joined, or nil.
func CheckLimits(l Limits) error {
	var errs problem.List
	checkLimit(&errs, "maxInFlight", l.MaxInFlight)
	checkLimit(&errs, "maxRetriesInFlight", l.MaxRetriesInFlight)
	return errs.Err()
}

func checkLimit(errs *problem.List, path string, n int) {
	if n < 0 || n > MaxLimit {
		errs.Add(CodeLimitInvalid, path, fmt.Sprintf("%d is not 0 (no limit) to %d", n, MaxLimit))
	}
}

// checkLimits adds the problems of a route's cluster's limits.
func checkLimits(errs *problem.List, c *Cluster) {
	if c == nil {
		return
	}
	errs.Under("cluster.limits", CodeLimitInvalid, CheckLimits(c.Limits))
	if c.Limits != (Limits{}) && c.Stats == nil {
		errs.Add(CodeLimitsStatsMissing, "cluster.stats", "limits are counted in the cluster's Stats: set one")
	}
}

// admit counts a request in flight on the cluster and reports whether
// it is within MaxInFlight; one that is not is not counted.
func (c *Cluster) admit() bool {
	lc := &c.Stats.limits
	if lc.inFlight.Add(1) > int64(c.Limits.MaxInFlight) {
		lc.inFlight.Add(-1)
		return false
	}
	return true
}

// leave ends a request admit counted.
func (c *Cluster) leave() { c.Stats.limits.inFlight.Add(-1) }

// admit admits the forward on c's MaxInFlight and, if it is within,
// keeps c for finish to release.
func (o *exchange) admit(c *Cluster) bool {
	if !c.admit() {
		return false
	}
	o.admitted = c
	return true
}

// beginRetry counts a retry in flight and reports whether it is within
// MaxRetriesInFlight; f remembers it, for endRetry.
func (f *forward) beginRetry() bool {
	c := f.rt.cluster
	if c.Limits.MaxRetriesInFlight <= 0 {
		return true
	}
	lc := &c.Stats.limits
	if lc.retries.Add(1) > int64(c.Limits.MaxRetriesInFlight) {
		lc.retries.Add(-1)
		lc.trips[LimitRetries].Add(1)
		return false
	}
	f.retryHeld = true
	return true
}

// endRetry ends the retry beginRetry counted, once its attempt returned.
func (f *forward) endRetry() {
	if f.retryHeld {
		f.retryHeld = false
		f.rt.cluster.Stats.limits.retries.Add(-1)
	}
}

// overloaded answers a request past limit l: 503 at once, with
// Retry-After, the error kind "overloaded", a trip counted.
func (rt *Route) overloaded(w http.ResponseWriter, r *http.Request, rq *gate.Request, l Limit) {
	if st := rt.cluster.Stats; st != nil && l < numLimits {
		st.limits.trips[l].Add(1)
	}
	rq.Record.Error = ErrorOverloaded
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(gate.Step{Kind: gate.StepAnswer, Status: http.StatusServiceUnavailable, Reason: l.String()})
	}
	w.Header()["Retry-After"] = retryAfter
	rt.answer(w, r, rq, http.StatusServiceUnavailable)
}

// ErrorOverloaded is the error kind of a request's record answered 503
// past a circuit breaker ([Limits]).
const ErrorOverloaded = "overloaded"

// overload returns the limit a failed attempt ran into on the
// transport's side, or numLimits: the direct client refused to queue
// the request (MaxPending), or its wait at MaxConnsPerDestination ended
// with the request's deadline. A wait the client ended by going away is
// a client abort, as any.
func overload(err error, clientGone bool) Limit {
	if errors.Is(err, h1client.ErrPending) {
		return LimitPending
	}
	var we *h1client.WaitError
	if errors.As(err, &we) && !clientGone {
		return LimitConnections
	}
	return numLimits
}

// checkClientLimits adds the problems of a ClientConfig's limits.
func (c ClientConfig) checkClientLimits(errs *problem.List) {
	checkLimit(errs, "maxConnsPerDestination", c.MaxConnsPerDestination)
	checkLimit(errs, "maxPending", c.MaxPending)
}

// Pending returns how many requests wait for a connection of the direct
// client now (see [ClientConfig.MaxPending]).
func (t *Transport) Pending() int64 {
	if t.h1 == nil {
		return 0
	}
	return t.h1.Pending()
}
