package admin

import (
	"time"

	"github.com/paduraksa/paduraksa/snapshot"
)

// The JSON answers of the API. Field names are stable: fields are only
// ever added.

// Problem is one problem: of a document (a [snapshot.ValidationError],
// with its stable code and its path in the document) or of a request.
type Problem struct {
	Code    string `json:"code"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// Outcome is what became of one revision.
type Outcome struct {
	// Revision is the revision's number; numbers increase with every
	// publish, whatever its source (a push, a file reload).
	Revision uint64 `json:"revision"`
	// Status is "applied", "unchanged", "refused", "superseded" or
	// "stale" ([snapshot.Status]).
	Status string `json:"status"`
	// Time is when the revision got its outcome (RFC 3339).
	Time time.Time `json:"time,omitzero"`
	// TookSeconds is the time from the start of processing to the swap.
	TookSeconds float64 `json:"tookSeconds"`
	// Errors lists every problem of a refused document; Warnings what is
	// worth saying about an applied one. Both are [] when empty.
	Errors   []Problem `json:"errors"`
	Warnings []Problem `json:"warnings"`
	// SupersededBy is the revision that replaced a superseded one.
	SupersededBy uint64 `json:"supersededBy,omitempty"`
	// Bytes is the size of the document as published; 0 when it was
	// published as a Go value.
	Bytes int `json:"bytes"`
}

// PushResult is the answer of PUT /config.
type PushResult struct {
	Outcome
	// Serving is the revision serving after this push.
	Serving uint64 `json:"serving"`
	// Persisted reports whether the document was saved, so that it
	// survives a restart (see [Config.Persist]).
	Persisted bool `json:"persisted"`
	// Message says what happened, for people.
	Message string `json:"message"`
	// Version is, with a [Store], the store's version of the document
	// pushed (the fleet's name of it, its ETag on every instance), or of
	// the one serving when the push was stale.
	Version string `json:"version,omitempty"`
}

// Revisions is the answer of GET /revisions.
type Revisions struct {
	// Serving is the revision serving now; 0 before the first.
	Serving uint64 `json:"serving"`
	// Revisions holds the latest outcomes, newest first.
	Revisions []Outcome `json:"revisions"`
}

// Health is the answer of GET /health: every upstream of the serving
// config, in document order.
type Health struct {
	Clusters []Cluster `json:"clusters"`
}

// Cluster is one upstream's destinations.
type Cluster struct {
	ID string `json:"id"`
	// Checked reports whether health checks (active, passive or slow
	// start) watch the cluster.
	Checked bool `json:"checked"`
	// Mode is "normal", "panic" (no destination is healthy, so all of
	// them serve) or "empty" (none is available: requests get 503).
	Mode         string        `json:"mode"`
	Destinations []Destination `json:"destinations"`
}

// Destination is one destination's health.
type Destination struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	// Health is the combined verdict ("healthy", "unhealthy", "unknown");
	// Active and Passive are each check's.
	Health    string `json:"health"`
	Active    string `json:"active"`
	Passive   string `json:"passive"`
	Available bool   `json:"available"`
	InFlight  int64  `json:"inFlight"`
	// Draining reports whether the destination takes no new requests;
	// DrainedBy says who drains it: "document" (its drain: true, which
	// wins), "admin" (POST .../drain), or empty. A deploy script waits
	// for InFlight 0 before removing it.
	Draining  bool   `json:"draining"`
	DrainedBy string `json:"drainedBy,omitempty"`
	// LastChange is the latest verdict change; absent when health never
	// changed one.
	LastChange *Change `json:"lastChange,omitempty"`
	// Ejection is the destination's current ejection; absent while it
	// is in rotation. Ejections counts its ejections by reason, absent
	// when there was none.
	Ejection  *Ejection         `json:"ejection,omitempty"`
	Ejections map[string]uint64 `json:"ejections,omitempty"`
}

// Ejection is a destination's current ejection: why, since and until
// when, and its multiplier (the outlier ejections in a row it counts; 0
// for a refused connection, whose time does not grow).
type Ejection struct {
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	Count  int       `json:"count"`
}

// Change is a health verdict change.
type Change struct {
	Check  string    `json:"check"` // "active", "passive" or "ejection"
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	Time   time.Time `json:"time"`
}

// Healthz is the answer of GET /healthz.
type Healthz struct {
	// Status is "serving" or "starting" (no config applied yet: 503).
	Status  string `json:"status"`
	Serving uint64 `json:"serving"`
	// Version is, with a [Store], the store's version serving.
	Version string `json:"version,omitempty"`
	// Engines is the reachability of the engines the instance depends
	// on ([Config.Engines]); absent without any. An engine down does not
	// change Status: the instance keeps serving its last document.
	Engines []Engine `json:"engines,omitempty"`
	// Down names the engines unreachable now; absent when none is.
	Down []string `json:"down,omitempty"`
}

func problems(ps []*snapshot.ValidationError) []Problem {
	out := make([]Problem, len(ps))
	for i, p := range ps {
		out[i] = Problem{Code: p.Code, Path: p.Path, Message: p.Msg}
	}
	return out
}

func outcomeOf(e snapshot.Entry) Outcome {
	return Outcome{
		Revision: e.Revision, Status: e.Status.String(), Time: e.Time, TookSeconds: e.Took.Seconds(),
		Errors: problems(e.Errors), Warnings: problems(e.Warnings), SupersededBy: e.SupersededBy, Bytes: len(e.Source),
	}
}
