package admin

import (
	"net/http"
	"strings"

	"github.com/paduraksa/paduraksa/upstream"
)

// Draining through the API:
//
//	POST /upstreams/{upstream}/destinations/{destination}/drain
//	POST /upstreams/{upstream}/destinations/{destination}/undrain
//
// drain takes the destination out of rotation, undrain puts it back
// (unless the document drains it: its drain wins); both answer 200 with
// the destination as GET /health shows it, so a deploy script sees
// draining and the requests still in flight, and 404
// (admin.destination.unknown) for an upstream or destination the
// serving config does not have. The drain is the destination's runtime
// state: it lasts across publishes that keep the destination's ID and
// address, and ends with the process or when a publish removes the
// destination or changes its address.

// destination serves /upstreams/{upstream}/destinations/{destination}/{action}.
func (h *Handler) destination(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/upstreams/"), "/")
	if len(parts) != 4 || parts[1] != "destinations" || parts[0] == "" || parts[2] == "" ||
		(parts[3] != "drain" && parts[3] != "undrain") {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such endpoint: "+r.URL.Path)
		return
	}
	if r.Method != http.MethodPost {
		notAllowed(w, "POST")
		return
	}
	cur, ok := h.cfg.Publisher.Current()
	if !ok {
		writeError(w, http.StatusServiceUnavailable, CodeNoConfig, "no config is serving yet")
		return
	}
	var d *upstream.Destination
	if pc := cur.Snapshot.Cluster(parts[0]); pc != nil && pc.Upstream != nil {
		d = pc.Upstream.Destination(parts[2])
	}
	if d == nil {
		writeError(w, http.StatusNotFound, CodeDestinationUnknown, "the serving config has no destination "+parts[2]+" in upstream "+parts[0])
		return
	}
	on := parts[3] == "drain"
	if d.SetDrain(on) {
		h.cfg.Logger.Info("admin: destination drain", "upstream", parts[0], "destination", parts[2], "drain", on)
	}
	for _, dst := range h.cluster(d.Cluster()).Destinations {
		if dst.ID == d.ID() {
			writeJSON(w, http.StatusOK, dst)
			return
		}
	}
	writeError(w, http.StatusNotFound, CodeDestinationUnknown, "destination "+parts[2]+" left upstream "+parts[0])
}

// drainState fills a destination's drain fields.
func drainState(dst *Destination, d *upstream.Destination) {
	doc, op := d.DrainedBy()
	dst.Draining = doc || op
	switch {
	case doc:
		dst.DrainedBy = "document"
	case op:
		dst.DrainedBy = "admin"
	}
}
