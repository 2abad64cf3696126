package source

import (
	"context"
	"errors"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/snapshot"
)

// Source is where a gateway's documents come from. Documents reach the
// publisher through it in one direction, pushed documents reach it in the
// other:
//
//   - Load reads the document the source holds now, the one to serve at
//     start.
//   - Run hands every later document to publish, one at a time, waiting
//     for each one's outcome, until ctx is done.
//   - Save keeps a document pushed to the gateway (an admin API's
//     PUT /config) where the source keeps its documents, so that a
//     restart serves it, and so that Run does not publish it again.
//
// Load comes before Run; Run is called once at a time; Save is safe to
// call while Run runs. See the package documentation for the sources
// there are.
type Source interface {
	// Load reads the source's document now; its Why is [Start]. An
	// error means the source holds no readable document.
	Load(ctx context.Context) (Document, error)
	// Run publishes the source's changes through publish until ctx is
	// done, and returns ctx's error, or why the source can go on no
	// longer. A document that cannot be read or is refused is logged and
	// Run goes on.
	Run(ctx context.Context, publish Publish) error
	// Save keeps p.Data as the source's document, on condition that the
	// source's document is at p.IfVersion, and returns the version it
	// keeps it as; a source whose document has moved on returns
	// [ErrStale] and keeps nothing.
	Save(ctx context.Context, p Push) (version string, err error)
}

// Document is one document on its way from a source to the publisher.
type Document struct {
	// Data is the document, JSON or YAML, as the source holds it.
	Data []byte
	// Why is what made the source hand it over; the zero value is Start.
	Why Reason
	// Version is the source's own name of this document, such as the
	// mod revision of an etcd key; empty for a source that keeps none
	// (a file). The wiring records it with the outcome, so that an
	// instance can say which version it serves.
	Version string
}

// Push is a document pushed to the gateway, for [Source.Save].
type Push struct {
	// Data is the document as pushed.
	Data []byte
	// IfVersion, when not empty, is the Version of the document the push
	// was based on (an If-Match): the source keeps Data only while its
	// document is still that version. Empty keeps it unconditionally.
	IfVersion string
}

// Publish hands one document to the publisher and returns its outcome
// once it has one, or ctx's error. [To] is the Publish of a
// [snapshot.Publisher]; a wiring may wrap it (to log a what-if first, or
// to record the version it serves).
type Publish func(ctx context.Context, d Document) (snapshot.Outcome, error)

// To returns the Publish of pub: a document's bytes are published as
// [snapshot.Publisher.PublishData] publishes them (its files read on the
// calling goroutine) and its outcome is waited for.
func To(pub *snapshot.Publisher) Publish {
	return func(ctx context.Context, d Document) (snapshot.Outcome, error) {
		return pub.PublishData(d.Data).Wait(ctx)
	}
}

// Reason says why a source hands a document to the publisher.
type Reason uint8

const (
	// Start: the document the source held when it was loaded.
	Start Reason = iota
	// Change: the source changed (a file two reads agree on, a watched
	// key's new value).
	Change
	// Reload: a reload was asked for ([File.Reload]; SIGHUP in the
	// daemon): what the source holds is published whether it changed or
	// not, so that the files it names are read again.
	Reload
)

var reasonNames = [...]string{"start", "change", "reload"}

// String returns the reason's name, as logs show it.
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "invalid"
}

// ErrStale is [Source.Save]'s answer to a push whose IfVersion is not the
// version of the source's document: it was based on a document that has
// been replaced since.
var ErrStale = errors.New("source: the push is based on a version the source no longer holds")

// ValidationError is one problem of a source's config: a stable Code
// (the Code* constants of this package) and the Path of the field
// ("maxBytes"). It is the library's one problem type, so errors.As finds
// it whichever package reported it.
type ValidationError = problem.Error
