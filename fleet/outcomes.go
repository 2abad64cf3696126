package fleet

import (
	"context"
	"strconv"
	"time"

	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
)

// keptOutcomes is how many outcomes an [Etcd] keeps for
// [Etcd.Outcome]'s callers: enough for the pushes in progress at once.
const keptOutcomes = 32

// Serving is the version an instance serves.
type Serving struct {
	// Version is the mod revision of the document's key, in decimal: the
	// same name of the document on every instance. A document put again
	// unchanged moves it on, its revision staying.
	Version string `json:"version"`
	// Revision is the instance's own publisher revision that applied it.
	Revision uint64 `json:"revision"`
	// At is when it was applied.
	At time.Time `json:"appliedAt,omitzero"`
}

// Refusal is a version an instance refused, with every problem.
type Refusal struct {
	Version  string    `json:"version"`
	Revision uint64    `json:"revision"`
	At       time.Time `json:"at"`
	Problems []Problem `json:"problems"`
}

// Problem is one problem of a refused document: its stable code, its
// path in the document and what it says.
type Problem struct {
	Code    string `json:"code"`
	Path    string `json:"path,omitempty"`
	Message string `json:"message"`
}

// versionOutcome is the outcome of one version.
type versionOutcome struct {
	rev int64
	o   snapshot.Outcome
}

// outcomes is what an Etcd knows of the outcomes of the versions it
// handed over; the Etcd's mutex guards it.
type outcomes struct {
	kept     []versionOutcome // the latest, oldest first, at most keptOutcomes
	recorded int64            // the latest version recorded
	serving  Serving
	refusal  *Refusal
	changed  chan struct{} // closed, and replaced, at every change
}

// notify wakes those who wait for a change.
func (k *outcomes) notify() {
	close(k.changed)
	k.changed = make(chan struct{})
}

// Record records the outcome o of document d (its Version a mod
// revision): the serving version, the last refusal, and the outcome for
// [Etcd.Outcome]. Run records what it publishes; a wiring that publishes
// Load's document itself records its outcome with Record. A document
// without a Version is not recorded.
func (e *Etcd) Record(d source.Document, o snapshot.Outcome) {
	rev, err := strconv.ParseInt(d.Version, 10, 64)
	if err != nil {
		return
	}
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	k := &e.applied
	switch o.Status {
	case snapshot.Applied:
		k.serving = Serving{Version: d.Version, Revision: o.Revision, At: now}
	case snapshot.Unchanged:
		k.serving.Version, k.serving.Revision = d.Version, o.Revision
		if k.serving.At.IsZero() {
			k.serving.At = now
		}
	case snapshot.Refused:
		r := &Refusal{Version: d.Version, Revision: o.Revision, At: now, Problems: make([]Problem, len(o.Errors))}
		for i, p := range o.Errors {
			r.Problems[i] = Problem{Code: p.Code, Path: p.Path, Message: p.Msg}
		}
		k.refusal = r
	}
	if len(k.kept) == keptOutcomes {
		k.kept = append(k.kept[:0], k.kept[1:]...)
	}
	k.kept = append(k.kept, versionOutcome{rev: rev, o: o})
	k.recorded = max(k.recorded, rev)
	k.notify()
}

// Outcome waits until this instance has an outcome for version (a mod
// revision Save returned) and returns it, or ctx's error. A version the
// instance never published, because a later one was read first (after an
// outage, or a compaction), is answered as superseded by the revision
// serving.
func (e *Etcd) Outcome(ctx context.Context, version string) (snapshot.Outcome, error) {
	rev, err := strconv.ParseInt(version, 10, 64)
	if err != nil {
		return snapshot.Outcome{}, source.ErrStale
	}
	for {
		e.mu.Lock()
		k := &e.applied
		for i := len(k.kept) - 1; i >= 0; i-- {
			if k.kept[i].rev == rev {
				o := k.kept[i].o
				e.mu.Unlock()
				return o, nil
			}
		}
		if k.recorded > rev {
			o := snapshot.Outcome{Status: snapshot.Superseded, SupersededBy: k.serving.Revision}
			e.mu.Unlock()
			return o, nil
		}
		changed := k.changed
		e.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return snapshot.Outcome{}, ctx.Err()
		}
	}
}

// ServingVersion returns the version this instance serves and the
// publisher revision that applied it; ok is false before the first.
// It is what an admin API names the serving document by (its ETag), the
// same on every instance.
func (e *Etcd) ServingVersion() (version string, revision uint64, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.applied.serving
	return s.Version, s.Revision, s.Version != ""
}

// changes returns a channel closed at the next outcome recorded or
// change of reachability.
func (e *Etcd) changes() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.applied.changed
}
