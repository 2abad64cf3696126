package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/internal/clock"
	"github.com/paduraksa/paduraksa/internal/seam"
	"github.com/paduraksa/paduraksa/upstream"
)

// Options configures a [Monitor]. The zero value is ready to use.
type Options struct {
	// Logger receives every health change at Warn, and changes of a
	// cluster's availability mode (panic, empty); nil discards.
	Logger *slog.Logger
	// Workers bounds the number of probes in flight; 0 means 4.
	Workers int
	// Clock tells the monitor the time: of the probe schedule, passive
	// windows, the availability stamps that slow start reads, and change
	// events. Timers (the schedule's, reactivation) run on the real clock.
	// Nil means time.Now.
	Clock func() time.Time
	// ActivePolicies, PassivePolicies and Availability hold custom policies
	// by name, next to the built-in ones (which they cannot replace). They
	// are copied by New.
	ActivePolicies  map[string]ActivePolicy
	PassivePolicies map[string]PassivePolicy
	Availability    map[string]upstream.AvailabilityFunc
	// ProbeRequests builds probe requests; nil means GET on the health
	// address, path and query.
	ProbeRequests ProbeRequestFactory
}

// ClusterHealth is one cluster as [Monitor.Update] receives it.
type ClusterHealth struct {
	Cluster *upstream.Cluster
	Config  Config
	// Transport sends the cluster's probes. Pass the forwarder's transport
	// for the cluster, so that probes use its HTTP version, TLS settings and
	// connection pool; nil means http.DefaultTransport.
	Transport http.RoundTripper
}

// Monitor runs the health checks of every cluster: active probes on a
// bounded pool of workers, passive windows fed by [Monitor.Observe], the
// reactivation of passive verdicts, and each cluster's availability policy.
// Verdicts live on the [upstream.Destination] objects, so they survive every
// [Monitor.Update] that keeps a destination.
//
// Owner: the gateway creates one Monitor, calls Start once, Update after
// every config publish (one writer), and Close at shutdown. Observe and
// Subscribe are safe for concurrent use at any time.
//
// Make a Monitor with [New]. The zero Monitor checks nothing: its Start
// and Update return [ErrNotNew] (no goroutine starts), Observe ignores
// what it is told and Close does nothing.
type Monitor struct {
	opts   Options
	log    *slog.Logger
	clock  clock.Clock
	probes ProbeRequestFactory

	mu       sync.Mutex
	clusters map[*upstream.Cluster]*clusterState
	timers   map[*destState]reactivation
	ejected  map[*destState]struct{} // destinations with an ejection timer
	state    lifecycle
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	wake chan struct{}
	jobs chan probeJob

	subMu sync.Mutex
	subs  atomic.Pointer[[]*subscriber]
}

// lifecycle is where a [Monitor] is in its life: Start moves it from
// unstarted to started, Close from either to closed, for good.
type lifecycle uint8

const (
	unstarted lifecycle = iota
	started
	closed
)

// availabilityMode is how a cluster serves, as its members view says: from
// its available destinations, from all of them because none is healthy
// (panic), or not at all. The monitor logs each change of mode.
type availabilityMode uint8

const (
	modeNormal availabilityMode = iota
	modePanic
	modeEmpty
)

// modeOf returns the mode that mem puts its cluster in.
func modeOf(mem *upstream.Members) availabilityMode {
	switch {
	case mem.Panic:
		return modePanic
	case len(mem.Available) == 0 && len(mem.All) > 0:
		return modeEmpty
	}
	return modeNormal
}

// clusterState is the monitor's view of one cluster.
type clusterState struct {
	m *Monitor
	c *upstream.Cluster
	s atomic.Pointer[settings]

	// Guarded by Monitor.mu.
	next    time.Time
	running bool

	// Guarded by the cluster's refresh lock (refresh runs under it).
	gen  uint64
	mode availabilityMode

	created atomic.Bool // a destination got its state in a refresh
}

// destState is the per-destination state, attached to the destination.
type destState struct {
	cs         atomic.Pointer[clusterState]
	ring       atomic.Pointer[ring]
	fails      atomic.Int64 // consecutive failed probes
	passiveAt  atomic.Int64 // unix ns of the last passive Unhealthy verdict
	passiveGen atomic.Uint64
	last       atomic.Pointer[Change] // the latest change, for LastChange
	gwRun      atomic.Int64           // gateway errors in a row (outlier)
	fiveRun    atomic.Int64           // 5xx in a row (outlier)

	// Guarded by Monitor.mu.
	ej ejection

	// Guarded by the cluster's refresh lock.
	avail bool
	seen  uint64
}

// New returns a monitor. Call [Monitor.Start] to begin probing.
func New(o Options) *Monitor {
	o.ActivePolicies = maps.Clone(o.ActivePolicies)
	o.PassivePolicies = maps.Clone(o.PassivePolicies)
	o.Availability = maps.Clone(o.Availability)
	if o.Workers <= 0 {
		o.Workers = 4
	}
	m := &Monitor{
		opts:     o,
		log:      o.Logger,
		clock:    clock.WithNow(o.Clock),
		probes:   o.ProbeRequests,
		clusters: map[*upstream.Cluster]*clusterState{},
		timers:   map[*destState]reactivation{},
		ejected:  map[*destState]struct{}{},
		wake:     make(chan struct{}, 1),
		jobs:     make(chan probeJob, o.Workers),
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.probes == nil {
		m.probes = defaultProbeRequests{}
	}
	return m
}

// Validate checks c against the built-in and the registered policies; see
// [Config.Validate].
func (m *Monitor) Validate(c Config) (errs, warnings []error) {
	_, errs, warnings = resolve(c, &m.opts)
	return errs, warnings
}

// Start starts the scheduler and the probe workers; they run until ctx is
// done or Close is called. Start may be called once.
func (m *Monitor) Start(ctx context.Context) error {
	if m.jobs == nil {
		return ErrNotNew
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != unstarted {
		return errors.New("health: Start called twice or after Close")
	}
	m.state = started
	ctx, m.cancel = context.WithCancel(ctx)
	m.wg.Add(1)
	go m.schedule(ctx)
	for range m.opts.Workers {
		m.wg.Add(1)
		go m.work(ctx)
	}
	return nil
}

// Close stops probing and pending reactivations and waits for the probe
// goroutines to end. Verdicts stay as they are. Close is idempotent.
func (m *Monitor) Close() error {
	m.mu.Lock()
	if m.cancel != nil {
		m.cancel()
	}
	m.state = closed
	for st, r := range m.timers {
		r.t.Stop()
		delete(m.timers, st)
	}
	for st := range m.ejected {
		if st.ej.t != nil {
			st.ej.t.Stop()
			st.ej.t = nil
		}
		delete(m.ejected, st)
	}
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// Update installs the health settings of every cluster after a config
// publish: the clusters given are exactly the ones to check from now on
// (clusters left out stop being probed). Verdicts, passive windows and
// probe counters stay on the destinations, so a publish that changes
// policies, intervals or unrelated clusters changes no verdict. Turning a
// check off resets its verdicts to Unknown, since nothing would update
// them any more.
//
// Update validates everything first and changes nothing when a config is
// invalid. The caller is the single snapshot publisher.
func (m *Monitor) Update(clusters ...ClusterHealth) error {
	if m.jobs == nil {
		return ErrNotNew
	}
	prepared := make([]*settings, len(clusters))
	var errs []error
	for i, ch := range clusters {
		if ch.Cluster == nil {
			errs = append(errs, fmt.Errorf("health: clusters[%d]: nil cluster", i))
			continue
		}
		s, es, _ := resolve(ch.Config, &m.opts)
		for _, e := range es {
			errs = append(errs, fmt.Errorf("health: cluster %q: %w", ch.Cluster.ID(), e))
		}
		s.transport = ch.Transport
		if s.transport == nil {
			s.transport = http.DefaultTransport
		}
		prepared[i] = s
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}

	now := m.clock.Now()
	m.mu.Lock()
	next := make(map[*upstream.Cluster]*clusterState, len(clusters))
	states := make([]*clusterState, len(clusters))
	prevs := make([]*settings, len(clusters))
	for i, ch := range clusters {
		cs := m.clusters[ch.Cluster]
		if cs == nil {
			cs = &clusterState{m: m, c: ch.Cluster}
		}
		s := prepared[i]
		prev := cs.s.Swap(s)
		switch {
		case !s.active.enabled:
		case prev == nil || !prev.active.enabled:
			cs.next = now
		case s.active.interval < prev.active.interval:
			cs.next = minTime(cs.next, now.Add(s.active.interval))
		}
		next[ch.Cluster] = cs
		states[i], prevs[i] = cs, prev
	}
	var removed []*upstream.Cluster
	for c := range m.clusters {
		if next[c] == nil {
			removed = append(removed, c)
		}
	}
	m.clusters = next
	m.mu.Unlock()

	for _, c := range removed {
		c.OnRefresh(seam.Open(), nil)
	}
	for i, cs := range states {
		s := prepared[i]
		if !s.active.enabled || !s.passive.enabled || !s.outlier.enabled {
			m.resetDisabled(cs, s)
		}
		cs.c.OnRefresh(seam.Open(), cs.refresh)
		cs.c.SetAvailability(s.avail)
		if cs.created.Swap(false) && s.active.enabled {
			m.mu.Lock()
			cs.next = now // probe new destinations soon
			m.mu.Unlock()
		}
	}
	m.poke()
	return nil
}

// resetDisabled sets the verdicts of a check that is off to Unknown.
func (m *Monitor) resetDisabled(cs *clusterState, s *settings) {
	for _, d := range cs.c.Members().All {
		if !s.active.enabled {
			if old := d.SetActiveHealth(upstream.Unknown); old != upstream.Unknown {
				m.change(d, CheckActive, old, upstream.Unknown, "active checks turned off")
			}
		}
		if !s.passive.enabled && d.PassiveHealth() != upstream.Unknown {
			if st := stateOf(d); st != nil {
				m.endPassive(d, st, "passive checks turned off")
			}
		}
		if !s.outlier.enabled && d.Ejected() {
			if st, _ := d.Attached(seam.Open()).(*destState); st != nil {
				m.endOutlier(d, st)
			}
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// stateOf returns the destination's state, attaching a new one if needed;
// nil if another package attached something else.
func stateOf(d *upstream.Destination) *destState {
	for {
		switch v := d.Attached(seam.Open()).(type) {
		case *destState:
			return v
		case nil:
			if d.Attach(seam.Open(), nil, &destState{}) {
				continue
			}
		default:
			return nil
		}
	}
}

// refresh runs under the cluster's refresh lock each time its members view
// is replaced: it attaches state to new destinations, points every
// destination at the current settings, stamps destinations that became
// available (slow start reads the stamp), and logs availability modes.
func (cs *clusterState) refresh(mem *upstream.Members) {
	s := cs.s.Load()
	if s == nil {
		return
	}
	m := cs.m
	cs.gen++
	width := max(int64(s.passive.window)/ringBuckets, 1)
	for _, d := range mem.All {
		st, _ := d.Attached(seam.Open()).(*destState)
		if st == nil {
			if st = stateOf(d); st == nil {
				continue
			}
			cs.created.Store(true)
		}
		if st.cs.Load() != cs {
			st.cs.Store(cs)
		}
		if r := st.ring.Load(); r == nil || r.width != width {
			st.ring.Store(newRing(int64(s.passive.window)))
		}
	}
	now := m.clock.Now().UnixNano()
	for _, d := range mem.Available {
		if st, _ := d.Attached(seam.Open()).(*destState); st != nil {
			st.seen = cs.gen
			if !st.avail {
				st.avail = true
				d.SetAvailableSince(seam.Open(), now)
			}
		}
	}
	for _, d := range mem.All {
		if st, _ := d.Attached(seam.Open()).(*destState); st != nil && st.seen != cs.gen {
			st.avail = false
		}
	}
	if mode := modeOf(mem); mode != cs.mode {
		switch mode {
		case modeNormal:
			m.log.Warn("health: cluster has available destinations again", "cluster", cs.c.ID(), "available", len(mem.Available), "all", len(mem.All))
		case modePanic:
			m.log.Warn("health: no healthy destination, serving from all of them (panic mode)", "cluster", cs.c.ID(), "all", len(mem.All))
		case modeEmpty:
			m.log.Warn("health: no available destination, requests get 503", "cluster", cs.c.ID(), "all", len(mem.All))
		}
		cs.mode = mode
	}
}
