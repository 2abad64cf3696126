package snapshot

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"slices"
	"time"
)

// DefaultHistory is how many outcomes a [Publisher] keeps by default.
const DefaultHistory = 16

// ErrStale reports that a conditional publish ([Publisher.PublishDataIf])
// found another revision current than the one it was conditioned on.
var ErrStale = errors.New("snapshot: the current revision is not the expected one")

// Entry is one revision as the publisher's history keeps it.
type Entry struct {
	Outcome
	// Time is when the revision got its outcome.
	Time time.Time
	// Source holds the document's bytes when it was published as bytes
	// ([Publisher.PublishData], [Publisher.PublishDataIf]; a TLS refresh
	// keeps those of the document it republishes); nil for a document
	// published as a [config.Document].
	Source []byte
	// Snapshot is the compiled snapshot of an applied revision (nil
	// otherwise): run a simulation against it, or compare it with the
	// current one. It stays valid after later publishes; its runtime
	// state (health, in-flight counts) is the current one.
	Snapshot *Snapshot
}

// clone returns a copy of e that shares nothing mutable with it but the
// snapshot, which is immutable.
func (e Entry) clone() Entry {
	e.Source = bytes.Clone(e.Source)
	e.Errors = cloneProblems(e.Errors)
	e.Warnings = cloneProblems(e.Warnings)
	return e
}

func cloneProblems(ps []*ValidationError) []*ValidationError {
	if ps == nil {
		return nil
	}
	out := make([]*ValidationError, len(ps))
	for i, p := range ps {
		c := *p
		out[i] = &c
	}
	return out
}

// PublishStats counts a publisher's outcomes since it was made, for a
// metrics collector.
type PublishStats struct {
	// Applied, Unchanged, Refused, Superseded and Stale count the
	// revisions by outcome.
	Applied, Unchanged, Refused, Superseded, Stale uint64
	// LastApplied is the revision serving now; 0 before the first.
	LastApplied uint64
	// LastApplyTook is how long the last applied revision took, from the
	// start of its processing to the swap; ApplyTook is the sum over all
	// applied revisions (divide by Applied for the mean).
	LastApplyTook, ApplyTook time.Duration
	// LastAppliedAt is when the last applied revision got its outcome.
	LastAppliedAt time.Time
}

// history keeps the latest outcomes in a ring, the current entry, and the
// counters. The publisher's mutex guards it.
type history struct {
	ring  []Entry // capacity: the configured length
	next  int     // where the next entry goes once the ring is full
	cur   Entry   // the entry of the applied revision serving now
	stats PublishStats
}

func (h *history) init(n int) {
	if n == 0 {
		n = DefaultHistory
	}
	if n > 0 {
		h.ring = make([]Entry, 0, n)
	}
}

// record counts an outcome and keeps it, but an Unchanged one, which is
// counted only: it names the serving revision, whose entry the history
// has.
func (h *history) record(r *Revision, now time.Time) {
	e := Entry{Outcome: r.outcome, Time: now, Source: r.source, Snapshot: r.snap}
	s := &h.stats
	switch e.Status {
	case Applied:
		s.Applied++
		s.LastApplied, s.LastApplyTook, s.LastAppliedAt = e.Revision, e.Took, now
		s.ApplyTook += e.Took
		h.cur = e
	case Unchanged:
		s.Unchanged++
		return
	case Refused:
		s.Refused++
	case Superseded:
		s.Superseded++
	case Stale:
		s.Stale++
	}
	switch {
	case cap(h.ring) == 0:
	case len(h.ring) < cap(h.ring):
		h.ring = append(h.ring, e)
	default:
		h.ring[h.next] = e
		h.next = (h.next + 1) % len(h.ring)
	}
}

// History returns the latest outcomes the publisher kept
// ([PublisherConfig.History] of them), newest revision first; an
// Unchanged publish is counted in [Publisher.Stats] and kept nowhere,
// since it is the serving revision. The entries
// are copies: changing them changes nothing in the publisher. History is
// safe for concurrent use.
func (p *Publisher) History() []Entry {
	p.mu.Lock()
	out := make([]Entry, len(p.hist.ring))
	for i, e := range p.hist.ring {
		out[i] = e.clone()
	}
	p.mu.Unlock()
	// Outcomes are recorded in the order they are reached, and a
	// superseded revision may be reported before the one in progress.
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(b.Revision, a.Revision) })
	return out
}

// Entry returns a copy of the kept entry of revision rev, and false when
// the history holds none (never published, or fallen out). It is safe for
// concurrent use.
func (p *Publisher) Entry(rev uint64) (Entry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.hist.ring {
		if e.Revision == rev {
			return e.clone(), true
		}
	}
	if p.hist.cur.Revision == rev && rev != 0 {
		return p.hist.cur.clone(), true
	}
	return Entry{}, false
}

// Current returns a copy of the entry of the revision serving now, and
// false before the first applied revision. It is kept whether or not the
// history still holds it. Current is safe for concurrent use.
func (p *Publisher) Current() (Entry, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hist.cur.clone(), p.hist.cur.Revision != 0
}

// Stats returns the publisher's counters. It is safe for concurrent use.
func (p *Publisher) Stats() PublishStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hist.stats
}

// PublishDataIf is [Publisher.PublishData] on a condition: the document is
// processed only if revision current is the one serving when its turn
// comes (0: none is serving yet). Otherwise its outcome is [Stale] and
// nothing else happens. The check runs on the single writer, so two
// conditional publishes on the same revision never both apply: a
// compare-and-swap on the revision, for HTTP's If-Match.
func (p *Publisher) PublishDataIf(data []byte, current uint64) *Revision {
	return p.PublishPreparedIf(p.Prepare(data), current)
}

// PublishPreparedIf is [Publisher.PublishPrepared] on the condition of
// [Publisher.PublishDataIf]: revision current serving when the prepared
// document's turn comes.
func (p *Publisher) PublishPreparedIf(pd *Prepared, current uint64) *Revision {
	r := pd.revision()
	r.ifRev, r.ifSet = current, true
	return p.enqueue(r)
}

// ApplyDataIf publishes a document with [Publisher.PublishDataIf] and
// waits for its outcome. It returns the outcome and an error: [ErrStale]
// when revision current was not serving, the document's problems joined
// when it was refused, ctx's error when it ended first.
func (p *Publisher) ApplyDataIf(ctx context.Context, data []byte, current uint64) (Outcome, error) {
	o, err := p.PublishDataIf(data, current).Wait(ctx)
	switch {
	case err != nil:
		return o, err
	case o.Status == Stale:
		return o, ErrStale
	case o.Status == Refused:
		return o, joinProblems(o.Errors)
	}
	return o, nil
}

// currentRevision returns the snapshot's revision, 0 for none.
func (s *Snapshot) currentRevision() uint64 {
	if s == nil {
		return 0
	}
	return s.revision
}
