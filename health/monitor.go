package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
)

// Options configures a [Monitor]. The zero value is ready to use.
type Options struct {
	// Logger receives every health change at Warn, and changes of a
	// cluster's availability mode (panic, empty); nil discards.
	Logger *slog.Logger
	// Workers bounds the number of probes in flight; 0 means 4.
	Workers int
	// Clock is the time source of passive windows and of the
	// availability stamps that slow start reads; nil means time.Now.
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

// CheckKind says which check changed a verdict.
type CheckKind uint8

const (
	CheckActive CheckKind = iota + 1
	CheckPassive
)

// String returns "active" or "passive".
func (k CheckKind) String() string {
	switch k {
	case CheckActive:
		return "active"
	case CheckPassive:
		return "passive"
	}
	return "CheckKind(" + strconv.Itoa(int(k)) + ")"
}

// Change is a health verdict that changed.
type Change struct {
	ClusterID     string
	DestinationID string
	Destination   *upstream.Destination
	Check         CheckKind
	Old, New      upstream.HealthState
	Reason        string
	Time          time.Time
}

// Monitor runs the health checks of every cluster: active probes on a
// bounded pool of workers, passive windows fed by [Monitor.Record], the
// reactivation of passive verdicts, and each cluster's availability policy.
// Verdicts live on the [upstream.Destination] objects, so they survive every
// [Monitor.Update] that keeps a destination.
//
// Owner: the gateway creates one Monitor, calls Start once, Update after
// every config publish (one writer), and Close at shutdown. Record and
// Subscribe are safe for concurrent use at any time.
type Monitor struct {
	opts   Options
	log    *slog.Logger
	clock  func() time.Time
	probes ProbeRequestFactory

	mu       sync.Mutex
	clusters map[*upstream.Cluster]*clusterState
	timers   map[*destState]reactivation
	state    int // 0 new, 1 started, 2 closed
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	wake chan struct{}
	jobs chan probeJob

	subMu sync.Mutex
	subs  atomic.Pointer[[]*subscriber]
}

type subscriber struct{ f func(Change) }

type reactivation struct {
	t   *time.Timer
	gen uint64
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
	mode int // 0 normal, 1 panic, 2 empty

	created atomic.Bool // a destination got its state in a refresh
}

// destState is the per-destination state, attached to the destination.
type destState struct {
	cs         atomic.Pointer[clusterState]
	ring       atomic.Pointer[ring]
	fails      atomic.Int64 // consecutive failed probes
	passiveAt  atomic.Int64 // unix ns of the last passive Unhealthy verdict
	passiveGen atomic.Uint64

	// Guarded by the cluster's refresh lock.
	avail bool
	seen  uint64
}

type probeJob struct {
	r *round
	d *upstream.Destination
}

type round struct {
	cs   *clusterState
	s    *settings
	left atomic.Int64
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
		clock:    o.Clock,
		probes:   o.ProbeRequests,
		clusters: map[*upstream.Cluster]*clusterState{},
		timers:   map[*destState]reactivation{},
		wake:     make(chan struct{}, 1),
		jobs:     make(chan probeJob, o.Workers),
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.clock == nil {
		m.clock = time.Now
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
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.state != 0 {
		return errors.New("health: Start called twice or after Close")
	}
	m.state = 1
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
	m.state = 2
	for st, r := range m.timers {
		r.t.Stop()
		delete(m.timers, st)
	}
	m.mu.Unlock()
	m.wg.Wait()
	return nil
}

// Subscribe calls f with every health change, on the goroutine that made it
// (a probe worker, a reactivation timer, or the request that crossed a
// passive threshold), so f must be quick. The returned function ends the
// subscription.
func (m *Monitor) Subscribe(f func(Change)) (cancel func()) {
	s := &subscriber{f: f}
	m.subMu.Lock()
	defer m.subMu.Unlock()
	var list []*subscriber
	if cur := m.subs.Load(); cur != nil {
		list = slices.Clone(*cur)
	}
	list = append(list, s)
	m.subs.Store(&list)
	return func() {
		m.subMu.Lock()
		defer m.subMu.Unlock()
		cur := m.subs.Load()
		if cur == nil {
			return
		}
		list := slices.DeleteFunc(slices.Clone(*cur), func(x *subscriber) bool { return x == s })
		m.subs.Store(&list)
	}
}

func (m *Monitor) emit(c Change) {
	m.log.Warn("health: destination "+c.New.String(),
		"cluster", c.ClusterID, "destination", c.DestinationID, "check", c.Check.String(),
		"old", c.Old.String(), "new", c.New.String(), "reason", c.Reason)
	if subs := m.subs.Load(); subs != nil {
		for _, s := range *subs {
			s.f(c)
		}
	}
}

func (m *Monitor) change(d *upstream.Destination, k CheckKind, old, new upstream.HealthState, reason string) {
	m.emit(Change{ClusterID: d.ClusterID(), DestinationID: d.ID(), Destination: d, Check: k,
		Old: old, New: new, Reason: reason, Time: m.clock()})
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

	now := time.Now()
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
		c.OnRefresh(nil)
	}
	for i, cs := range states {
		s := prepared[i]
		if !s.active.enabled || !s.passive.enabled {
			m.resetDisabled(cs, s)
		}
		cs.c.OnRefresh(cs.refresh)
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
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (m *Monitor) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// stateOf returns the destination's state, attaching a new one if needed;
// nil if another package attached something else.
func stateOf(d *upstream.Destination) *destState {
	for {
		switch v := d.Attached().(type) {
		case *destState:
			return v
		case nil:
			if d.Attach(nil, &destState{}) {
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
		st, _ := d.Attached().(*destState)
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
	now := m.clock().UnixNano()
	for _, d := range mem.Available {
		if st, _ := d.Attached().(*destState); st != nil {
			st.seen = cs.gen
			if !st.avail {
				st.avail = true
				d.SetAvailableSince(now)
			}
		}
	}
	for _, d := range mem.All {
		if st, _ := d.Attached().(*destState); st != nil && st.seen != cs.gen {
			st.avail = false
		}
	}
	mode := 0
	switch {
	case mem.Panic:
		mode = 1
	case len(mem.Available) == 0 && len(mem.All) > 0:
		mode = 2
	}
	if mode != cs.mode {
		switch mode {
		case 0:
			m.log.Warn("health: cluster has available destinations again", "cluster", cs.c.ID(), "available", len(mem.Available), "all", len(mem.All))
		case 1:
			m.log.Warn("health: no healthy destination, serving from all of them (panic mode)", "cluster", cs.c.ID(), "all", len(mem.All))
		case 2:
			m.log.Warn("health: no available destination, requests get 503", "cluster", cs.c.ID(), "all", len(mem.All))
		}
		cs.mode = mode
	}
}

// Record counts the outcome of one proxied request to d in d's passive
// window and marks d unhealthy when its cluster's passive policy says so.
// The forwarder calls it once per request that reached the round trip. It
// takes no lock and allocates nothing, except on the request that changes
// the verdict. Outcomes of destinations whose cluster has passive checks
// off, and client aborts, are ignored.
func (m *Monitor) Record(d *upstream.Destination, o Outcome) {
	if o == ClientAbort {
		return
	}
	st, _ := d.Attached().(*destState)
	if st == nil {
		return
	}
	cs := st.cs.Load()
	if cs == nil {
		return
	}
	s := cs.s.Load()
	r := st.ring.Load()
	if !s.passive.enabled || r == nil {
		return
	}
	failure := s.passive.policy.Failure(o)
	now := m.clock().UnixNano()
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
	if m.state == 2 {
		return
	}
	if r, ok := m.timers[st]; ok {
		r.t.Stop()
	}
	m.timers[st] = reactivation{gen: gen, t: time.AfterFunc(period, func() { m.reactivate(d, st, gen) })}
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

// schedule starts a probing round for each cluster whose time has come,
// one round per cluster at a time.
func (m *Monitor) schedule(ctx context.Context) {
	defer m.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		wait := time.Hour
		var due []*round
		m.mu.Lock()
		for _, cs := range m.clusters {
			s := cs.s.Load()
			if !s.active.enabled || cs.running {
				continue
			}
			if d := cs.next.Sub(now); d > 0 {
				wait = min(wait, d)
				continue
			}
			cs.running = true
			cs.next = now.Add(s.active.interval)
			wait = min(wait, s.active.interval)
			due = append(due, &round{cs: cs, s: s})
		}
		m.mu.Unlock()
		for _, r := range due {
			if !m.dispatch(ctx, r) {
				return
			}
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.wake:
		}
	}
}

func (m *Monitor) dispatch(ctx context.Context, r *round) bool {
	all := r.cs.c.Members().All
	if len(all) == 0 {
		m.finish(r)
		return true
	}
	r.left.Store(int64(len(all)))
	for _, d := range all {
		select {
		case m.jobs <- probeJob{r: r, d: d}:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

func (m *Monitor) finish(r *round) {
	m.mu.Lock()
	r.cs.running = false
	m.mu.Unlock()
	m.poke()
}

func (m *Monitor) work(ctx context.Context) {
	defer m.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-m.jobs:
			m.probe(ctx, j)
			if j.r.left.Add(-1) == 0 {
				m.finish(j.r)
			}
		}
	}
}

// probe sends one probe and applies the active policy's verdict.
func (m *Monitor) probe(ctx context.Context, j probeJob) {
	d, s, cs := j.d, j.r.s, j.r.cs
	st := stateOf(d)
	if d.Removed() || st == nil {
		return
	}
	start := m.clock()
	res := ProbeResult{Cluster: cs.c, Destination: d, Threshold: s.active.threshold, Metadata: s.metadata}
	pctx, cancel := context.WithTimeout(ctx, s.active.timeout)
	req, err := m.probes.NewProbeRequest(pctx, ProbeTarget{Cluster: cs.c, Destination: d, Path: s.active.path, Query: s.active.query})
	if err == nil {
		var resp *http.Response
		if resp, err = s.transport.RoundTrip(req); err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			res.StatusCode = resp.StatusCode
		}
	}
	cancel()
	if ctx.Err() != nil {
		return // closing: a cancelled probe says nothing about the destination
	}
	res.Err = err
	res.OK = err == nil && res.StatusCode >= 200 && res.StatusCode < 300
	res.Duration = m.clock().Sub(start)
	if res.OK {
		st.fails.Store(0)
	} else {
		res.ConsecutiveFailures = int(st.fails.Add(1))
	}
	state, reason := s.active.policy.Evaluate(res)
	if d.Removed() {
		return
	}
	if old := d.SetActiveHealth(state); old != state {
		m.change(d, CheckActive, old, state, reason)
	}
	if res.OK && !s.passive.keep && d.PassiveHealth() == upstream.Unhealthy && st.passiveAt.Load() < start.UnixNano() {
		m.endPassive(d, st, "active probe passed")
	}
}
