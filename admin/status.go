package admin

import (
	"net/http"

	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/upstream"
)

// getRevisions answers the publisher's history.
func (h *Handler) getRevisions(w http.ResponseWriter, r *http.Request) {
	hist := h.cfg.Publisher.History()
	res := Revisions{Revisions: make([]Outcome, len(hist))}
	if cur, ok := h.cfg.Publisher.Current(); ok {
		res.Serving = cur.Revision
	}
	for i, e := range hist {
		res.Revisions[i] = outcomeOf(e)
	}
	writeJSON(w, http.StatusOK, res)
}

// getHealth answers every upstream of the serving config with its
// destinations' verdicts.
func (h *Handler) getHealth(w http.ResponseWriter, r *http.Request) {
	cur, ok := h.cfg.Publisher.Current()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, CodeNoConfig, "no config is serving yet")
		return
	}
	snap := cur.Snapshot
	res := Health{Clusters: []Cluster{}}
	for _, u := range snap.Document().Upstreams {
		pc := snap.Cluster(u.ID)
		if pc == nil || pc.Upstream == nil {
			continue
		}
		res.Clusters = append(res.Clusters, h.cluster(pc.Upstream))
	}
	writeJSON(w, http.StatusOK, res)
}

func (h *Handler) cluster(c *upstream.Cluster) Cluster {
	mem := c.Members()
	out := Cluster{ID: c.ID(), Mode: "normal", Destinations: make([]Destination, 0, len(mem.All))}
	switch {
	case mem.Panic:
		out.Mode = "panic"
	case len(mem.Available) == 0 && len(mem.All) > 0:
		out.Mode = "empty"
	}
	mon := h.cfg.Health
	out.Checked = mon != nil && mon.Checks(c)
	avail := make(map[*upstream.Destination]bool, len(mem.Available))
	for _, d := range mem.Available {
		avail[d] = true
	}
	for _, d := range mem.All {
		dst := Destination{
			ID: d.ID(), Address: d.Scheme() + "://" + d.Host(),
			Health: d.Health().String(), Active: d.ActiveHealth().String(), Passive: d.PassiveHealth().String(),
			Available: avail[d], InFlight: d.InFlight(),
		}
		drainState(&dst, d)
		if mon != nil {
			if ch, ok := mon.LastChange(d); ok {
				dst.LastChange = &Change{Check: ch.Check.String(), From: ch.Old.String(), To: ch.New.String(), Reason: ch.Reason, Time: ch.Time}
			}
		}
		ejection(mon, d, &dst)
		out.Destinations = append(out.Destinations, dst)
	}
	return out
}

// getHealthz answers 200 while a config is serving, 503 before, with
// the engines' reachability: an engine down leaves it 200, since the
// instance keeps serving its last document.
func (h *Handler) getHealthz(w http.ResponseWriter, r *http.Request) {
	res := Healthz{Status: "starting"}
	if h.cfg.Engines != nil {
		res.Engines = h.cfg.Engines()
		for _, e := range res.Engines {
			if !e.Reachable {
				res.Down = append(res.Down, e.Name)
			}
		}
	}
	cur, ok := h.cfg.Publisher.Current()
	if !ok {
		writeJSON(w, http.StatusServiceUnavailable, res)
		return
	}
	res.Status, res.Serving = "serving", cur.Revision
	if h.cfg.Store != nil {
		res.Version, _, _ = h.cfg.Store.ServingVersion()
	}
	writeJSON(w, http.StatusOK, res)
}

// ejection fills in dst's current ejection and its counts by reason;
// mon may be nil.
func ejection(mon *health.Monitor, d *upstream.Destination, dst *Destination) {
	if mon != nil {
		if e, ok := mon.Ejection(d); ok {
			dst.Ejection = &Ejection{Reason: e.Reason.String(), Since: e.Since, Until: e.Until, Count: e.Count}
		}
	}
	dm := d.Metrics()
	for i, reason := range upstream.EjectReasonNames() {
		if n := dm.Ejections[i].Load(); n > 0 {
			if dst.Ejections == nil {
				dst.Ejections = map[string]uint64{}
			}
			dst.Ejections[reason] = n
		}
	}
}
