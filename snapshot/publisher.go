package snapshot

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/health"
)

// Status is the outcome of one published revision.
type Status uint8

const (
	// Pending: the revision has not been processed yet.
	Pending Status = iota
	// Applied: the revision's snapshot is now current.
	Applied
	// Unchanged: the document equals the current one; nothing was swapped.
	// The outcome names the serving revision, which the document is: an
	// unchanged publish takes no revision number of its own.
	Unchanged
	// Refused: the document is invalid; the previous snapshot keeps serving.
	Refused
	// Superseded: a later revision arrived before this one was processed;
	// only the latest is applied.
	Superseded
	// Stale: the revision was published on condition that another
	// revision was current ([Publisher.PublishDataIf]), and it was not;
	// nothing was compiled.
	Stale
)

var statusNames = [...]string{"pending", "applied", "unchanged", "refused", "superseded", "stale"}

// String returns the status's name.
func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "invalid"
}

// Outcome is what became of a revision.
type Outcome struct {
	Revision uint64
	Status   Status
	// Errors lists every problem of a refused document.
	Errors []*ValidationError
	// Warnings lists what is worth saying about an applied document:
	// settings that take effect differently from how they read.
	Warnings []*ValidationError
	// SupersededBy is the revision that replaced a superseded one.
	SupersededBy uint64
	// Took is the time from the start of processing to the swap.
	Took time.Duration
}

// Revision is a handle on one published document, returned by a
// [Publisher]. The zero Revision is none: it never gets an outcome (Wait
// returns when ctx is done).
type Revision struct {
	id      uint64
	doc     *config.Document // nil: the document did not parse (decoded says why)
	decoded error            // the problems of decoding the document's bytes
	files   *fileSet         // the files doc names, read before it was queued
	tls     bool             // rebuild the TLS table even when the document is unchanged
	done    chan struct{}
	outcome Outcome

	source []byte    // the document's bytes as published, kept in the history
	ifRev  uint64    // with ifSet: apply only while this revision is current
	ifSet  bool      //
	snap   *Snapshot // the applied snapshot, for the history
	named  bool      // a superseded revision's outcome names this one
}

// ID returns the number the revision was published under; numbers
// increase with every publish. A revision whose document turns out
// Unchanged gives its number back (the next publish takes it, unless a
// later one took another meanwhile or a superseded revision names it):
// its outcome names the serving revision instead, so that the numbers
// outcomes carry are the numbers of changes (applied, refused, stale,
// superseded), and the one an answer gives is the one serving.
func (r *Revision) ID() uint64 { return r.id }

// Done is closed once the revision has an outcome.
func (r *Revision) Done() <-chan struct{} { return r.done }

// Wait blocks until the revision has an outcome or ctx is done.
func (r *Revision) Wait(ctx context.Context) (Outcome, error) {
	select {
	case <-r.done:
		return r.outcome, nil
	case <-ctx.Done():
		return Outcome{Revision: r.id}, ctx.Err()
	}
}

// PublisherConfig configures a [Publisher]. The zero value is ready to
// use: a publisher of a store of its own ([Publisher.Store]), with the
// built-in compiler settings.
type PublisherConfig struct {
	// Store receives the snapshots; nil means a store of the publisher's
	// own, which [Publisher.Store] returns for serving.
	Store *Store
	// Compiler compiles documents; the zero value is ready to use. When
	// its Health is nil, the publisher runs a health monitor of its own
	// (see [Publisher]).
	Compiler Compiler
	// OnOutcome, when set, is called once with the outcome of every
	// revision, one call at a time: from the publisher's goroutine for a
	// processed revision, from the publishing goroutine for one it
	// supersedes (so a superseded revision may be reported before the
	// revision in progress). It runs under the publisher's lock: it must
	// not block for long and must not publish.
	OnOutcome func(Outcome)
	// OnApplied, when set, is called with each applied snapshot after it is
	// stored and its clusters handed to the health monitor.
	OnApplied func(*Snapshot)
	// History is how many of the latest outcomes [Publisher.History]
	// keeps, with their document bytes and, for applied revisions, their
	// snapshots; 0 means [DefaultHistory], a negative value keeps none.
	History int
}

// Publisher is the single writer of a [Store]: it validates, compiles,
// reconciles runtime state and swaps the snapshot, one revision at a time.
// Revisions published while one is processed coalesce: only the latest is
// processed, the others are Superseded. Publish is safe for concurrent use.
//
// # Health
//
// A document's health blocks (active probes, passive checks, probeFirst,
// slowStart, which reads when health saw a destination come back) take
// effect through a [health.Monitor]. When the compiler has none, the
// publisher runs one of its own, logging to Compiler.Logger: the zero
// wiring does what the document says, and a document with probeFirst
// cannot leave new destinations out of rotation forever with nothing to
// probe them. That monitor starts its probe goroutines with the first
// applied document that enables active checks; [Publisher.Close] stops
// them. A compiler with its own Health is left alone: its owner starts and
// closes it.
//
// Make a Publisher with [NewPublisher]. The zero Publisher is not one: it
// refuses every revision at once (code publisher.zero, nothing queued
// and no goroutine started), and its other methods report nothing.
type Publisher struct {
	cfg PublisherConfig
	own *ownMonitor // the monitor this publisher runs, or nil

	mu      sync.Mutex
	next    uint64
	pending *Revision // the latest revision not yet started
	running bool
	closed  bool
	idle    *sync.Cond
	hist    history // guarded by mu

	// scratch is the memory the canonical form of the revision in
	// progress is written over: an unchanged document (most of a
	// reload's) is compared with the serving one without allocating, and
	// an applied one keeps a copy. Only process uses it.
	scratch config.Form
}

// NewPublisher returns a publisher for cfg.Store, or for a store of its
// own when cfg.Store is nil.
func NewPublisher(cfg PublisherConfig) *Publisher {
	if cfg.Store == nil {
		cfg.Store = new(Store)
	}
	p := &Publisher{cfg: cfg}
	if p.cfg.Compiler.Health == nil {
		p.own = &ownMonitor{m: health.New(health.Options{Logger: cfg.Compiler.Logger})}
		p.cfg.Compiler.Health = p.own.m
	}
	p.idle = sync.NewCond(&p.mu)
	p.hist.init(cfg.History)
	return p
}

// Health returns the health monitor the publisher's snapshots report to:
// the compiler's, or the one the publisher runs.
func (p *Publisher) Health() *health.Monitor { return p.cfg.Compiler.Health }

// Store returns the store the publisher swaps its snapshots into:
// PublisherConfig.Store, or the publisher's own. Serve it (it is an
// http.Handler, and its TLS selector serves the handshakes). It is nil
// for a zero Publisher.
func (p *Publisher) Store() *Store { return p.cfg.Store }

// zero reports whether p was not made by NewPublisher.
func (p *Publisher) zero() bool { return p.idle == nil }

// refuseZero is the outcome of every revision of a zero Publisher.
func refuseZero(r *Revision) *Revision {
	r.outcome = Outcome{Revision: r.id, Status: Refused, Errors: []*ValidationError{{Code: CodePublisherZero,
		Msg: "a zero Publisher, not made by NewPublisher, publishes nothing"}}}
	close(r.done)
	return r
}

// Close waits for the revisions published so far and stops the health
// monitor the publisher runs (none when the compiler brought its own);
// verdicts stay as they are, and the store keeps serving the current
// snapshot. A revision published after Close is refused. Close is
// idempotent.
func (p *Publisher) Close() error {
	p.Flush()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	if p.own != nil {
		p.own.close()
	}
	return nil
}

// Publish reads the files the document names, on the caller's goroutine
// and within Compiler.FileTimeout (see [Publisher.Prepare]), then queues
// the document and returns its revision. The document must not be
// modified afterwards.
func (p *Publisher) Publish(doc *config.Document) *Revision {
	r := &Revision{doc: doc, done: make(chan struct{})}
	if doc == nil {
		_, r.decoded = config.Decode(nil) // refused as an empty document
	} else {
		r.files = p.readFiles(doc)
	}
	return p.enqueue(r)
}

// RefreshTLS queues the current document again with its TLS table
// rebuilt, so certificates a source obtained or renewed since (ACME's
// OnReady) are served; a publish also rebuilds it by itself when a
// certificate file changed on disk. Before the first applied document it
// does nothing.
func (p *Publisher) RefreshTLS() *Revision {
	if p.zero() {
		return refuseZero(&Revision{done: make(chan struct{})})
	}
	cur := p.cfg.Store.Load()
	if cur == nil {
		r := &Revision{done: make(chan struct{})}
		r.outcome.Status = Unchanged
		close(r.done)
		return r
	}
	p.mu.Lock()
	src := p.hist.cur.Source
	p.mu.Unlock()
	return p.enqueue(&Revision{doc: cur.doc, tls: true, source: src, files: p.readFiles(cur.doc), done: make(chan struct{})})
}

// PublishData prepares a document in JSON or YAML ([Publisher.Prepare])
// and queues it; a document that does not decode is refused with its
// errors like an invalid one.
func (p *Publisher) PublishData(data []byte) *Revision {
	return p.PublishPrepared(p.Prepare(data))
}

// Prepared is a document in JSON or YAML made ready to publish by
// [Publisher.Prepare]: decoded, and with the files it names read.
// Publishing it queues it at once, and the publisher reads no file for
// it. A Prepared does not change: published twice, it publishes the
// files as they were when it was prepared. The zero Prepared is an empty
// document, refused as one (document.empty).
type Prepared struct {
	doc     *config.Document
	decoded error
	data    []byte
	files   *fileSet
}

// Prepare decodes data and reads the files the document names
// (certificates, keys, client CAs), on the caller's goroutine and within
// Compiler.FileTimeout, for [Publisher.PublishPrepared]. Files whose stat
// has not changed since the serving snapshot read them are not read
// again. A file the file rules refuse (see tlsselect.MaxFileSize: a
// device, a FIFO, a directory, a socket, a file too large, a read that
// hangs) refuses the document when it is published, with the rule's code
// at the field's path. The publisher
// never waits on a file: a caller that serialises its publishes under a
// lock of its own prepares before taking it, so that a file that takes
// long holds up that caller alone. Prepare is safe for concurrent use.
func (p *Publisher) Prepare(data []byte) *Prepared {
	data = bytes.Clone(data)
	pd := &Prepared{data: data}
	pd.doc, pd.decoded = config.Decode(data)
	if pd.doc != nil {
		pd.files = p.readFiles(pd.doc)
	}
	return pd
}

// PublishPrepared queues a prepared document and returns its revision at
// once.
func (p *Publisher) PublishPrepared(pd *Prepared) *Revision {
	return p.enqueue(pd.revision())
}

// revision is a new revision of pd's document.
func (pd *Prepared) revision() *Revision {
	decoded := pd.decoded
	if pd.doc == nil && decoded == nil {
		_, decoded = config.Decode(nil) // a zero Prepared: refused as an empty document
	}
	return &Revision{doc: pd.doc, decoded: decoded, files: pd.files, source: pd.data, done: make(chan struct{})}
}

// readFiles reads the files doc names on the caller's goroutine, taking
// those unchanged since from the serving snapshot.
func (p *Publisher) readFiles(doc *config.Document) *fileSet {
	var prev *fileSet
	if p.zero() {
		return nil // refused by enqueue
	}
	if cur := p.cfg.Store.Load(); cur != nil {
		prev = cur.files
	}
	return p.cfg.Compiler.readFiles(doc, prev)
}

func (p *Publisher) enqueue(r *Revision) *Revision {
	if p.zero() {
		return refuseZero(r)
	}
	p.mu.Lock()
	p.next++
	r.id = p.next
	if p.closed {
		r.outcome = Outcome{Revision: r.id, Status: Refused, Errors: []*ValidationError{{Code: CodeCompileInternal, Msg: "the publisher is closed"}}}
		p.notify(r)
		p.mu.Unlock()
		return r
	}
	if old := p.pending; old != nil {
		old.outcome = Outcome{Revision: old.id, Status: Superseded, SupersededBy: r.id}
		r.named = true
		p.notify(old)
	}
	p.pending = r
	if !p.running {
		p.running = true
		go p.drain()
	}
	p.mu.Unlock()
	return r
}

// notify records and reports an outcome; p.mu is held.
func (p *Publisher) notify(r *Revision) {
	p.hist.record(r, time.Now())
	if p.cfg.OnOutcome != nil {
		p.cfg.OnOutcome(r.outcome)
	}
	close(r.done)
}

// drain processes pending revisions until none is left. One drain runs at a
// time: it is the single writer.
func (p *Publisher) drain() {
	for {
		p.mu.Lock()
		r := p.pending
		p.pending = nil
		if r == nil {
			p.running = false
			p.idle.Broadcast()
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()

		applied := p.process(r)
		p.mu.Lock()
		if r.outcome.Status == Unchanged && p.next == r.id && !r.named {
			p.next-- // no revision but this one had the number
		}
		p.notify(r)
		p.mu.Unlock()
		if applied != nil && p.cfg.OnApplied != nil {
			p.cfg.OnApplied(applied)
		}
	}
}

func (p *Publisher) process(r *Revision) *Snapshot {
	start := time.Now()
	r.outcome.Revision = r.id
	if r.ifSet {
		// The single writer checks the condition, so no other revision
		// can be applied between the check and the swap.
		if p.cfg.Store.Load().currentRevision() != r.ifRev {
			r.outcome.Status = Stale
			return nil
		}
	}
	// A document that parsed is compiled even when some fields did not
	// decode, so that every problem comes back in one refusal.
	doc, decoded := r.doc, r.decoded
	if doc == nil {
		r.outcome.Status, r.outcome.Errors = Refused, Problems(decoded)
		return nil
	}
	refuse := func(err error) *Snapshot {
		r.outcome.Status, r.outcome.Errors = Refused, refusal(decoded, err)
		return nil
	}
	c := &p.cfg.Compiler
	// A document equal to the current one costs one canonical encoding: no
	// validation (equal to a valid document, it is valid), no compile, no
	// swap, no allocation.
	cur := p.cfg.Store.Load()
	var base config.Form
	if cur != nil {
		base = cur.canon
	}
	form, err := canonicalSince(p.scratch, base, doc)
	if err != nil {
		return refuse(err)
	}
	p.scratch = form
	if decoded == nil && cur != nil && bytes.Equal(form.Bytes(), cur.canon.Bytes()) && !r.tls && (cur.tlsIn == nil || !cur.tlsIn.changedIn(r.files)) &&
		!cur.caFilesChangedIn(r.files) {
		// The document is the serving revision: the outcome says which.
		r.outcome.Revision, r.outcome.Status, r.outcome.Took = cur.revision, Unchanged, time.Since(start)
		return nil
	}
	snap, err := c.compile(doc, form.Clone(), cur, r.files)
	if err != nil || decoded != nil {
		return refuse(err)
	}
	snap.revision = r.id
	snap.commit()
	c.applied = snap
	p.cfg.Store.swap(snap)
	c.GateState.RetainMetrics(snap.gate)
	if err := c.startHealth(snap, p.own); err != nil {
		// The monitor validated these configs at compile time; a refusal
		// now is a bug, reported as a warning since the snapshot serves.
		snap.warnings = append(snap.warnings, &ValidationError{Code: CodeCompileInternal, Msg: err.Error()})
	}
	r.outcome.Status, r.outcome.Warnings, r.outcome.Took = Applied, snap.warnings, time.Since(start)
	r.snap = snap
	return snap
}

// Refusal returns the problems a document is refused with, from the
// error of decoding it (config.Decode's) and that of compiling what did
// decode (a [Compiler.Draft]'s): the decode's problems, then the
// compile's that are not at or under the path of one of them (a field
// that did not decode was left out, and what the compile says of its
// absence is the same problem again). An error that holds no problem is
// one of code compile.internal. It returns nil when both are nil. A
// caller that changes a decoded document before compiling it (package
// simulate's test certificates) refuses it as [Compiler.DraftData] would.
func Refusal(decoded, compiled error) []*ValidationError {
	if decoded == nil && compiled == nil {
		return nil
	}
	return refusal(decoded, compiled)
}

// refusal is [Refusal] for an error that is not nil.
func refusal(decoded, compiled error) []*ValidationError {
	ps := uncovered(Problems(decoded), Problems(compiled))
	if len(ps) == 0 {
		err := compiled
		if err == nil {
			err = decoded
		}
		ps = []*ValidationError{{Code: CodeCompileInternal, Msg: err.Error()}}
	}
	return ps
}

// uncovered returns the problems of a decode followed by those of the
// compile that are not at or under the path of a decode problem.
func uncovered(decoded, compiled []*ValidationError) []*ValidationError {
	out := slices.Clip(decoded)
	for _, p := range compiled {
		if !coveredBy(p, decoded, true) {
			out = append(out, p)
		}
	}
	return out
}

// Flush waits until every revision published so far has an outcome.
func (p *Publisher) Flush() {
	p.mu.Lock()
	for p.running && p.idle != nil {
		p.idle.Wait()
	}
	p.mu.Unlock()
}

// Apply publishes a document and waits for its outcome. It returns the
// outcome and, when the document was refused, an error joining its
// problems.
func (p *Publisher) Apply(ctx context.Context, doc *config.Document) (Outcome, error) {
	o, err := p.Publish(doc).Wait(ctx)
	if err != nil {
		return o, err
	}
	if o.Status == Refused {
		return o, joinProblems(o.Errors)
	}
	return o, nil
}
