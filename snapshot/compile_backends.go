package snapshot

import (
	"strings"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
)

// routeKey names a route's counters across publishes: its host's first
// name and its label, as the gate's metrics name them, and for a side of
// a split its upstream.
type routeKey struct{ host, route, upstream string }

// backendStats keeps the counters of the routes' sides and mirrors across
// publishes, so that a publish that keeps a route keeps its counts and a
// mirror's in-flight bound holds across the publish. Like the upstreams'
// counters, an entry outlives the route it counted.
type backendStats struct {
	sides   map[routeKey]*proxy.SideStats
	mirrors map[routeKey]*proxy.MirrorStats
}

func (b *backendStats) side(k routeKey) *proxy.SideStats {
	if b.sides == nil {
		b.sides = make(map[routeKey]*proxy.SideStats)
	}
	st := b.sides[k]
	if st == nil {
		st = new(proxy.SideStats)
		b.sides[k] = st
	}
	return st
}

func (b *backendStats) mirror(k routeKey) *proxy.MirrorStats {
	if b.mirrors == nil {
		b.mirrors = make(map[routeKey]*proxy.MirrorStats)
	}
	st := b.mirrors[k]
	if st == nil {
		st = new(proxy.MirrorStats)
		b.mirrors[k] = st
	}
	return st
}

func firstName(h *config.Host) string {
	if len(h.Names) == 0 {
		return ""
	}
	return h.Names[0]
}

// clusterOf returns the cluster of an upstream ID, or the placeholder
// when it is not built (the checker reports why): the route's own
// settings are still checked.
func (r *run) clusterOf(s *Snapshot, id string) *proxy.Cluster {
	if c := s.clusters[id]; c != nil {
		return c
	}
	return r.c.placeholderCluster()
}

// mirror maps a route's mirror block onto the proxy's mirror. A mirror
// whose upstream is not built, or is one the route sends to (the checker
// reports both), is checked for the rest and not attached.
func (r *run) mirror(i, j int, rt *config.Route, s *Snapshot, key routeKey) *proxy.Mirror {
	m := rt.Mirror
	if m == nil {
		return nil
	}
	cl := s.clusters[m.Upstream]
	attach := cl != nil && m.Upstream != rt.Upstream
	for _, b := range rt.Backends {
		attach = attach && b.Upstream != m.Upstream
	}
	if !attach {
		cl = r.c.placeholderCluster()
	}
	pm, err := proxy.NewMirror(proxy.MirrorConfig{
		Cluster: cl, Percent: m.MirrorPercent(), MaxBodyBytes: int64(m.MaxBodyBytes), MaxInFlight: m.MaxInFlight,
		HostName: m.HostName, Timeout: duration(m.Timeout), Stats: r.c.backends.mirror(key),
	})
	r.under(routePath(i, j, ".mirror"), err, nil)
	if !attach {
		return nil
	}
	return pm
}

// split maps a route's backends and split block onto a proxy.Split of
// one proxy.Route per backend, each with cfg's settings and its own
// upstream's cluster. It returns nil when the route's settings or the
// split are refused.
func (r *run) split(i, j int, rt *config.Route, s *Snapshot, cfg proxy.RouteConfig, key routeKey) *proxy.Split {
	at := func(field string) string { return routePath(i, j, field) }
	sc := proxy.SplitConfig{
		Sides:  make([]proxy.SplitSide, len(rt.Backends)),
		Sticky: proxy.Sticky{Cookie: rt.Split.Sticky.Cookie, Header: rt.Split.Sticky.Header, Client: rt.Split.Sticky.Client},
	}
	for k := range rt.Backends {
		b := &rt.Backends[k]
		side := cfg
		side.Cluster = r.clusterOf(s, b.Upstream)
		prt, err := proxy.NewRoute(side)
		if prt == nil {
			// The route's settings are the same on every side: say
			// their problems once.
			r.under(at(""), err, headerPath)
			return nil
		}
		sk := key
		sk.upstream = b.Upstream
		sc.Sides[k] = proxy.SplitSide{Route: prt, Weight: b.BackendWeight(), Stats: r.c.backends.side(sk)}
	}
	for _, f := range rt.Split.Force {
		side := -1
		for k := range rt.Backends {
			if rt.Backends[k].Upstream == f.Upstream {
				side = k
				break
			}
		}
		if side < 0 {
			continue // the checker reports it
		}
		sc.Force = append(sc.Force, proxy.Force{Header: f.Header, Cookie: f.Cookie, Value: f.Value, Side: side})
	}
	sp, err := proxy.NewSplit(sc)
	r.under(at(""), err, splitPath)
	return sp
}

// splitPath maps a path in the proxy's split config onto the route's
// blocks: sides[k] is backends[k], sticky and force are under split.
func splitPath(p string) string {
	if strings.HasPrefix(p, "sticky") || strings.HasPrefix(p, "force") {
		return "split." + p
	}
	return renameHead(p, "sides", "backends")
}

// EachRouteTarget calls f for every route the snapshot serves, in the
// gate's order of hosts and routes: its host's first name and its label,
// as the gate's metrics name them (gate.RouteLabel), and its target: a
// *proxy.Route, a *proxy.Split of them, or the gate's own. The zero
// Snapshot has none.
func (s *Snapshot) EachRouteTarget(f func(host, route string, t gate.Target)) {
	if s.gate == nil {
		return
	}
	for _, k := range s.hostIndex {
		h := s.gate.Host(k)
		first := ""
		if len(h.Names) > 0 {
			first = h.Names[0]
		}
		for n := range h.Routes {
			f(first, gate.RouteLabel(&h.Routes[n]), h.Routes[n].Target)
		}
	}
}
