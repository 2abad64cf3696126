package simulate

import (
	"strings"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/paduraksa/paduraksa/proxyproto"
	"github.com/paduraksa/paduraksa/snapshot"
)

// Target is the config a simulation runs against: exactly one of Store,
// Snapshot, Draft and DraftData.
type Target struct {
	// Store is the live gateway: its current snapshot.
	Store *snapshot.Store
	// Snapshot is one compiled config: an applied revision the publisher
	// kept, or any snapshot of the embedder's.
	Snapshot *snapshot.Snapshot
	// Draft is a document not published: it compiles through the same
	// path as a publish (with the settings of Compiler) and is never
	// published. A draft with problems is refused with every one of them
	// ([*DraftRefused]), as a publish would refuse it.
	Draft *config.Document
	// DraftData is a draft in JSON or YAML, as [snapshot.Publisher]'s
	// PublishData takes it: a document that decodes only in part is
	// compiled all the same, so the refusal lists every problem, of the
	// decoding and of the compile, as the publish would.
	DraftData []byte

	// Compiler holds the settings a draft compiles with: pass the
	// publisher's compiler, whose country lookup, balancing policies,
	// health monitor (asked to validate only), certificate sources and
	// ACME challenge store it uses. Its runtime state is not touched: the
	// draft gets destinations, transports and rate-limit buckets of its
	// own, as [snapshot.Compiler.Check] does. Certificates marked acme
	// need Compiler.ACME, which a draft does not use (an order for a name
	// of a draft would be a side effect), so such a draft is refused.
	// Nil means the built-in settings.
	Compiler *snapshot.Compiler
	// TestCertificates serves every certificate of a draft, whatever it
	// comes from (certFile and keyFile, acme, a source of Compiler's),
	// with a self-signed one made when the target is resolved, for the
	// names of the hosts that use it: a production document is tested
	// where its files are not (a CI runner), with its handshakes, TLS
	// policies and answers as they are, only the certificates' bytes
	// the test's. A certificate entry wrong as written (files and acme
	// both, a certFile without its keyFile) is left as it is, so the
	// draft is refused as the publish would be. Client CA files
	// (hosts[].tls.clientCAs) are read as named. It applies to Draft and
	// DraftData only.
	TestCertificates bool
	// Live is the store whose current destination health a Snapshot or
	// Draft target reports, for each destination with the same upstream
	// ID, destination ID and address; nil means Store, and for the other
	// targets the health of the snapshot's own clusters (a Snapshot's
	// runtime state is shared with the live one) or, for a draft,
	// "unknown".
	Live *snapshot.Store
	// Listener is the connection stage in front of the gate, as the
	// daemon's listeners are set up (edge.Config's fields of the same
	// names). The zero value takes no PROXY headers and applies
	// connlimit's defaults.
	Listener Listener
}

// Listener is the connection stage a simulated connection goes through,
// as the edge package stacks it: the PROXY-protocol listener, the deny
// list and trusted peers of connlimit, the listener limits, then TLS and
// the HTTP server with the limits' settings. The per-address cap and the
// listener's connection cap count live connections, which a simulation
// does not see: they are never reached.
type Listener struct {
	// ProxyProtocol, when its TrustedProxies is not empty, requires a
	// PROXY header from those peers and refuses every other peer.
	ProxyProtocol proxyproto.Config
	// Connections is the deny list and the trusted peers.
	Connections connlimit.Config
	// Limits are the listener limits (the framing guard, the header
	// size net/http answers 431 beyond); the zero value is
	// listenlimits' defaults, as the daemon runs them.
	Limits listenlimits.Limits
}

// LiveTarget is the target of the gateway serving from store.
func LiveTarget(store *snapshot.Store) Target { return Target{Store: store} }

// SnapshotTarget is the target of one compiled snapshot.
func SnapshotTarget(s *snapshot.Snapshot) Target { return Target{Snapshot: s} }

// DraftTarget is the target of an unpublished document compiled with
// the built-in settings.
func DraftTarget(doc *config.Document) Target { return Target{Draft: doc} }

// DraftRefused is the error of a draft that a publish would refuse: every
// problem of the document, each a [snapshot.ValidationError] that
// errors.As finds.
type DraftRefused struct {
	Errors []*snapshot.ValidationError
}

func (e *DraftRefused) Error() string {
	var b strings.Builder
	b.WriteString("simulate: the draft would be refused:")
	for _, p := range e.Errors {
		b.WriteString("\n\t")
		b.WriteString(p.Error())
	}
	return b.String()
}

// Unwrap returns the problems.
func (e *DraftRefused) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, p := range e.Errors {
		out[i] = p
	}
	return out
}

// kind says what a resolved target was.
type kind uint8

const (
	kindLive kind = iota
	kindSnapshot
	kindDraft
)

// resolved is a target ready to run.
type resolved struct {
	snap *snapshot.Snapshot
	kind kind
	live *snapshot.Snapshot // for destination health; nil: none
}

// resolve returns the snapshot a target names, compiling a draft.
func (t *Target) resolve() (*resolved, error) {
	n := 0
	for _, set := range [...]bool{t.Store != nil, t.Snapshot != nil, t.Draft != nil, t.DraftData != nil} {
		if set {
			n++
		}
	}
	var errs problem.List
	switch n {
	case 0:
		errs.Add(CodeTargetNone, "", "a target needs a store, a snapshot or a draft")
	case 1:
	default:
		errs.Add(CodeTargetMany, "", "a target is one of a store, a snapshot and a draft")
	}
	if err := t.Listener.Connections.Validate(); err != nil {
		errs.Under("listener.connections", CodeTargetListener, err)
	}
	if err := t.Listener.Limits.Validate(); err != nil {
		errs.Under("listener.limits", CodeTargetListener, err)
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	live := t.Live
	if live == nil {
		live = t.Store
	}
	r := &resolved{}
	if live != nil {
		r.live = live.Load()
	}
	switch {
	case t.Store != nil:
		r.snap, r.kind = t.Store.Load(), kindLive
		if r.snap == nil {
			return nil, &ProbeError{Code: CodeTargetEmpty, Msg: "the store holds no snapshot yet: nothing was published"}
		}
	case t.Snapshot != nil:
		r.snap, r.kind = t.Snapshot, kindSnapshot
		if r.live == nil {
			r.live = t.Snapshot
		}
	default:
		c := t.Compiler
		if c == nil {
			c = new(snapshot.Compiler)
		}
		snap, err := t.draft(c)
		if err != nil {
			return nil, err
		}
		r.snap, r.kind = snap, kindDraft
	}
	return r, nil
}

// draft compiles a draft target with c, its certificates replaced when
// TestCertificates asks.
func (t *Target) draft(c *snapshot.Compiler) (*snapshot.Snapshot, error) {
	doc, data := t.Draft, t.DraftData
	var decoded error
	if t.TestCertificates {
		if doc == nil {
			if doc, decoded = config.Decode(data); doc == nil {
				return nil, &DraftRefused{Errors: snapshot.Problems(decoded)}
			}
		}
		var err error
		if doc, c, err = withTestCertificates(doc, c); err != nil {
			return nil, &ProbeError{Code: CodeTargetCertificates, Msg: "test certificates: " + err.Error()}
		}
	}
	var snap *snapshot.Snapshot
	var err error
	if doc != nil {
		snap, err = c.Draft(doc)
	} else {
		snap, err = c.DraftData(data)
	}
	if ps := snapshot.Refusal(decoded, err); ps != nil {
		return nil, &DraftRefused{Errors: ps}
	}
	return snap, nil
}
