package upstream

import (
	"sync"
	"sync/atomic"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/internal/seam"
)

// Members is an immutable view of a cluster's destinations. Both slices are
// shared by every reader and must not be modified.
type Members struct {
	// All holds every destination of the cluster, ordered by ID.
	All []*Destination
	// Available holds the destinations that may take new requests, ordered
	// by ID; it may be empty.
	Available []*Destination
	// Panic reports whether Available holds all destinations because none
	// was healthy (the [HealthyOrPanic] fallback).
	Panic bool
}

// AvailabilityFunc computes a cluster's available destinations from all of
// them. It appends to dst (which has room for len(all)) and reports whether
// it fell back to all destinations for want of healthy ones. It must not
// keep all or dst.
type AvailabilityFunc func(dst, all []*Destination) (available []*Destination, panic bool)

// HealthyOrPanic keeps every destination that no verdict marks Unhealthy;
// when that leaves none, it returns all of them (panic mode), so a cluster
// whose health checks are wrong still serves.
func HealthyOrPanic(dst, all []*Destination) ([]*Destination, bool) {
	dst, _ = HealthyAndUnknown(dst, all)
	if len(dst) == 0 && len(all) > 0 {
		return append(dst, all...), true
	}
	return dst, false
}

// HealthyAndUnknown keeps every destination that no verdict marks
// Unhealthy; the result may be empty.
func HealthyAndUnknown(dst, all []*Destination) ([]*Destination, bool) {
	for _, d := range all {
		if d.Health() != Unhealthy {
			dst = append(dst, d)
		}
	}
	return dst, false
}

// Cluster is the runtime state of one cluster. It outlives config
// generations: every snapshot that names the cluster ID points at the same
// Cluster. Its methods are safe for concurrent use. Clusters are made by
// [NewCluster] and a [Registry]; the zero Cluster has no members view
// (Members returns nil) and its other methods panic.
type Cluster struct {
	id      string
	members atomic.Pointer[Members]

	mu           sync.Mutex // serialises recomputation of members
	availability atomic.Pointer[AvailabilityFunc]
	onRefresh    atomic.Pointer[func(*Members)]
}

var emptyMembers = &Members{}

func newCluster(id string) *Cluster {
	c := &Cluster{id: id}
	c.members.Store(emptyMembers)
	return c
}

// NewCluster returns a cluster of the given destinations that belongs to
// no [Registry]: a fixed set of backends of the caller's own, to pick from
// with a balance policy and to judge with SetActiveHealth and
// SetPassiveHealth (or a health.Monitor), with no config publishes. The
// destinations start Unknown (routable); they are checked as
// [ClusterConfig.Validate] checks them (IDs set and unique, the scheme
// http or https, host:port addresses), and every problem comes back at
// once, each a *[ValidationError] with a path like "destinations[2].host".
// The configs are copied, their
// Metadata maps are not: they must not be changed afterwards. The ID of
// the cluster is free-form; affinity keys are computed from it.
//
// For a set that changes, keep a Registry: it carries verdicts and
// counters over to the destinations each change keeps.
func NewCluster(id string, destinations []DestinationConfig) (*Cluster, error) {
	var errs problem.List
	checkDestinations(&errs, destinations)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	c := newCluster(id)
	all := make([]*Destination, len(destinations))
	for i, dc := range destinations {
		all[i] = newDestination(c, dc, Unknown)
	}
	sortByID(all)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.install(all)
	return c, nil
}

// ID returns the cluster's ID.
func (c *Cluster) ID() string { return c.id }

// Members returns the current view of the cluster's destinations. Load it
// once per decision. It is nil only for a zero Cluster.
func (c *Cluster) Members() *Members { return c.members.Load() }

// Destination returns the current member with the given ID, or nil.
func (c *Cluster) Destination(id string) *Destination {
	for _, d := range c.members.Load().All {
		if d.cfg.ID == id {
			return d
		}
	}
	return nil
}

// SetAvailability sets the function that computes the available set (nil
// means [HealthyOrPanic]) and recomputes it.
func (c *Cluster) SetAvailability(f AvailabilityFunc) {
	if f == nil {
		c.availability.Store(nil)
	} else {
		c.availability.Store(&f)
	}
	c.refresh()
}

// OnRefresh sets a function called, under the cluster's write lock, each
// time the members view is replaced; nil removes it. It is plumbing of the
// health package, which stamps destinations that became available: k is a
// key only the library's own packages hold (see internal/seam), and with
// any other OnRefresh does nothing.
func (c *Cluster) OnRefresh(k seam.Key, f func(*Members)) {
	switch {
	case !k.Opens():
		return
	case f == nil:
		c.onRefresh.Store(nil)
	default:
		c.onRefresh.Store(&f)
	}
}

// refresh recomputes the available set from the current verdicts. Every
// change of a verdict or of the availability function calls it.
func (c *Cluster) refresh() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.install(c.members.Load().All)
}

// install replaces the members view; c.mu must be held.
func (c *Cluster) install(all []*Destination) {
	avail := HealthyOrPanic
	if f := c.availability.Load(); f != nil {
		avail = *f
	}
	m := &Members{All: all}
	m.Available, m.Panic = avail(make([]*Destination, 0, len(all)), undrained(all))
	c.members.Store(m)
	if f := c.onRefresh.Load(); f != nil {
		(*f)(m)
	}
}
