package upstream

import (
	"cmp"
	"maps"
	"reflect"
	"slices"
	"sync"
)

// ClusterConfig is the static description of a cluster's membership. The
// zero value is a cluster without destinations; [ClusterConfig.Validate]
// checks one.
type ClusterConfig struct {
	ID           string
	Destinations []DestinationConfig
	// InitialActiveHealth is the active verdict that a destination created by
	// this plan starts with (a new ID, or a new address under a kept ID).
	// The zero value, Unknown, makes it routable at once. Unhealthy keeps it
	// out of rotation until an active probe passes (the health package's
	// ProbeFirst option); kept destinations are not affected.
	InitialActiveHealth HealthState
}

// Registry keeps the runtime state of every cluster across config
// generations. The zero value is ready to use. Plan and Commit expect one
// writer at a time; Cluster is safe for concurrent use.
type Registry struct {
	mu       sync.Mutex
	clusters map[string]*Cluster
}

// Cluster returns the live cluster with the given ID, or nil.
func (r *Registry) Cluster(id string) *Cluster {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clusters[id]
}

// Plan is the next state of a registry, prepared by [Registry.Plan] and not
// yet visible. Discarding a plan leaves the registry as it was. The zero
// Plan belongs to no registry: its Commit panics.
type Plan struct {
	r        *Registry
	clusters map[string]*Cluster
	members  map[*Cluster][]*Destination
	metadata map[*Destination]map[string]string
	drains   map[*Destination]bool // the document's drain of kept destinations, set at Commit
}

// Plan prepares the runtime state for a config generation holding exactly
// the given clusters. Destinations that keep their ID and address keep
// their objects; changed addresses and new IDs get new objects. Nothing
// becomes visible until [Plan.Commit]. Cluster IDs are expected to be
// unique and each config valid ([ClusterConfig.Validate]; the snapshot
// compiler validates them).
func (r *Registry) Plan(cfgs []ClusterConfig) *Plan {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := &Plan{
		r:        r,
		clusters: make(map[string]*Cluster, len(cfgs)),
		members:  make(map[*Cluster][]*Destination, len(cfgs)),
		metadata: make(map[*Destination]map[string]string),
	}
	for _, cc := range cfgs {
		c := r.clusters[cc.ID]
		if c == nil {
			c = newCluster(cc.ID)
		}
		p.clusters[cc.ID] = c
		old := c.members.Load().All
		if unchanged(old, cc.Destinations) {
			// Same members, same addresses, same metadata: the installed
			// view stays, and with it every table keyed by its identity.
			continue
		}
		all := make([]*Destination, 0, len(cc.Destinations))
		for _, dc := range cc.Destinations {
			d := findDestination(old, dc.ID)
			if d == nil || !sameAddress(d.cfg, dc) {
				d = newDestination(c, dc, cc.InitialActiveHealth)
			} else {
				if !sameMetadata(d.meta.Load().m, dc.Metadata) {
					// Same address, other metadata: the state is kept and
					// the metadata changes at Commit.
					p.metadata[d] = dc.Metadata
				}
				p.planDrain(d, dc)
			}
			all = append(all, d)
		}
		sortByID(all)
		p.members[c] = all
	}
	return p
}

// Cluster returns the cluster the plan holds for an ID, or nil. The cluster
// may not be live yet.
func (p *Plan) Cluster(id string) *Cluster { return p.clusters[id] }

// Commit makes the plan the registry's state: every planned cluster gets its
// members, destinations left out are marked removed, and clusters left out
// are dropped from the registry (requests holding them finish).
func (p *Plan) Commit() {
	r := p.r
	r.mu.Lock()
	defer r.mu.Unlock()
	for d, m := range p.metadata {
		d.setMetadata(m)
	}
	p.commitDrains()
	for c, all := range p.members {
		c.mu.Lock()
		for _, d := range c.members.Load().All {
			if !slices.Contains(all, d) {
				d.removed.Store(true)
			}
		}
		c.install(all)
		c.mu.Unlock()
	}
	for id, c := range r.clusters {
		if p.clusters[id] == nil {
			for _, d := range c.members.Load().All {
				d.removed.Store(true)
			}
		}
	}
	r.clusters = p.clusters
}

// unchanged reports whether cfgs describes exactly the destinations in old
// (sorted by ID): same IDs, addresses and metadata. It allocates nothing.
func unchanged(old []*Destination, cfgs []DestinationConfig) bool {
	if len(old) != len(cfgs) {
		return false
	}
	for k, dc := range cfgs {
		d := old[k] // configs listed in ID order, as old is, need no search
		if d.cfg.ID != dc.ID {
			d = findDestination(old, dc.ID)
		}
		if d == nil || !sameAddress(d.cfg, dc) || !sameMetadata(d.meta.Load().m, dc.Metadata) || d.docDrain.Load() != dc.Drain {
			return false
		}
	}
	return true
}

// sameMetadata reports whether two metadata maps hold the same entries. The
// map a destination was planned with is equal to itself without a look at
// its entries: a compiler that reuses an unchanged upstream hands it again.
func sameMetadata(a, b map[string]string) bool {
	switch {
	case len(a) != len(b):
		return false
	case len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer():
		return true
	}
	return maps.Equal(a, b)
}

// sortByID sorts destinations by ID, the order of every members view.
func sortByID(all []*Destination) {
	slices.SortFunc(all, func(a, b *Destination) int { return cmp.Compare(a.cfg.ID, b.cfg.ID) })
}

func findDestination(all []*Destination, id string) *Destination {
	i, ok := slices.BinarySearchFunc(all, id, func(d *Destination, id string) int { return cmp.Compare(d.cfg.ID, id) })
	if !ok {
		return nil
	}
	return all[i]
}

// sameAddress reports whether two descriptions reach the same endpoint for
// both traffic and probes: only then may verdicts carry over.
func sameAddress(a, b DestinationConfig) bool {
	return a.Scheme == b.Scheme && a.Host == b.Host && a.HealthHost == b.HealthHost
}
