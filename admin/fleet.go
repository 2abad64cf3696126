package admin

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
)

// Store is where a fleet keeps its one document (fleet.Etcd is one):
// with [Config.Store] set, PUT /config saves there first and answers the
// outcome this instance gives the saved version as it applies it from
// the store's watch, and entity tags are the store's versions, the same
// on every instance.
type Store interface {
	// Save keeps p.Data as the store's document on condition that its
	// version is still p.IfVersion (when set), and returns the new
	// version; a document that moved on is [source.ErrStale].
	Save(ctx context.Context, p source.Push) (version string, err error)
	// Outcome waits for this instance's outcome of version, or ctx.
	Outcome(ctx context.Context, version string) (snapshot.Outcome, error)
	// ServingVersion returns the version this instance serves and the
	// publisher revision that applied it; ok is false before the first.
	ServingVersion() (version string, revision uint64, ok bool)
}

// Error codes of a PUT /config with a Store, and of GET /cluster. They
// are stable.
const (
	CodeStoreUnavailable   = "admin.store.unavailable"   // 503: the store did not save the document
	CodeClusterUnreachable = "admin.cluster.unreachable" // 503: the fleet's state could not be read
)

// pushToStore checks data as a publish would, saves it in the store on
// the If-Match version, and answers the outcome of the saved version on
// this instance.
func (h *Handler) pushToStore(ctx context.Context, w http.ResponseWriter, r *http.Request, data []byte, cond condition) {
	c := h.cfg.Compiler
	if c == nil {
		c = new(snapshot.Compiler)
	}
	if _, err := c.DraftData(data); err != nil {
		o := snapshot.Outcome{Status: snapshot.Refused, Errors: snapshot.Problems(err)}
		res := h.pushResult(o, data)
		res.Revision, res.Message = 0, "refused; nothing was saved, the previous config keeps serving"
		h.logPush(ctx, r, http.StatusUnprocessableEntity, o, res, len(data))
		writeJSON(w, http.StatusUnprocessableEntity, res)
		return
	}
	push := source.Push{Data: data}
	if cond.set && !cond.star {
		push.IfVersion = strconv.FormatUint(cond.rev, 10)
	}
	version, err := h.cfg.Store.Save(ctx, push)
	switch {
	case errors.Is(err, source.ErrStale):
		res := h.pushResult(snapshot.Outcome{Status: snapshot.Stale}, data)
		res.Version, _, _ = h.cfg.Store.ServingVersion()
		res.Message = "stale: the fleet's document is no longer version " + push.IfVersion + "; nothing was saved"
		res.Errors = append(res.Errors, Problem{Code: CodeRevisionStale,
			Message: "If-Match names version " + push.IfVersion + "; the fleet's document has moved on (GET /config's ETag names the one this instance serves)"})
		h.logPush(ctx, r, http.StatusPreconditionFailed, snapshot.Outcome{Status: snapshot.Stale}, res, len(data))
		writeJSON(w, http.StatusPreconditionFailed, res)
		return
	case err != nil:
		h.cfg.Logger.Error("admin: config push not saved", "err", err, "remote", r.RemoteAddr)
		writeError(w, http.StatusServiceUnavailable, CodeStoreUnavailable, "the document was not saved, nothing changed: "+err.Error())
		return
	}
	o, err := h.cfg.Store.Outcome(ctx, version)
	if err != nil {
		h.cfg.Logger.Error("admin: saved config push got no outcome in time", "version", version, "remote", r.RemoteAddr, "timeout", h.cfg.ApplyTimeout)
		writeError(w, http.StatusGatewayTimeout, CodeApplyTimeout,
			"saved as version "+version+", which this instance did not apply within "+h.cfg.ApplyTimeout.String())
		return
	}
	res := h.pushResult(o, data)
	res.Version, res.Persisted = version, true
	status := http.StatusOK
	switch o.Status {
	case snapshot.Applied:
		res.Message = "saved as version " + version + " and applied"
	case snapshot.Unchanged:
		res.Message = "saved as version " + version + "; unchanged: the document equals the serving one"
	case snapshot.Refused:
		status, res.Message = http.StatusUnprocessableEntity, "saved as version "+version+", but refused by this instance; the previous config keeps serving here"
	default:
		status, res.Message = http.StatusConflict, "saved as version "+version+", superseded by a later version before this instance applied it"
	}
	if status == http.StatusOK {
		w.Header().Set("ETag", strconv.Quote(version))
	}
	h.logPush(ctx, r, status, o, res, len(data))
	writeJSON(w, status, res)
}

// Engine is the reachability of an engine an instance depends on (etcd,
// Redis), as GET /healthz reports it.
type Engine struct {
	// Name is the engine's name: "etcd", "redis".
	Name string `json:"name"`
	// Reachable reports whether it answered last.
	Reachable bool `json:"reachable"`
	// Since is when Reachable last changed; zero before it ever did.
	Since time.Time `json:"since,omitzero"`
	// Error is why it is unreachable.
	Error string `json:"error,omitempty"`
}

// getCluster answers every instance of the fleet, as [Config.Cluster]
// reads them.
func (h *Handler) getCluster(w http.ResponseWriter, r *http.Request) {
	if h.cfg.Cluster == nil {
		writeError(w, http.StatusNotFound, CodeNotFound, "no fleet is configured")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), clusterTimeout)
	defer cancel()
	instances, err := h.cfg.Cluster(ctx)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, CodeClusterUnreachable, "the fleet's state could not be read: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, ClusterState{Instances: instances})
}

// clusterTimeout bounds GET /cluster's read of the fleet's state.
const clusterTimeout = 3 * time.Second

// ClusterState is the answer of GET /cluster.
type ClusterState struct {
	// Instances is every instance's state as it wrote it, sorted by
	// instance name.
	Instances any `json:"instances"`
}
