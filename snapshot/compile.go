package snapshot

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/paduraksa/paduraksa/upstream"
)

// Snapshot is one compiled, immutable config generation: the gate (host
// table, routes, answers) and, for each route, its target built in the same
// compile. A request reads one Snapshot and takes every decision from it.
// Snapshots come from a compile ([Publisher], [Compiler.Draft]); the zero
// Snapshot holds no config (a nil Gate) and answers 503.
type Snapshot struct {
	revision uint64
	doc      *config.Document
	canon    config.Form
	// upstreams holds what each upstream compiled to, for the next compile
	// to reuse when the upstream and the global block are unchanged.
	upstreams map[string]*compiledUpstream
	// hostIndex maps each document host to its index in the gate.
	hostIndex []int
	httpsPort int // the gate's Config.HTTPSPort, which every host's Alt-Svc and HTTPS redirect took
	gate      *gate.Gate
	clusters  map[string]*proxy.Cluster
	tls       *tlsselect.Table // nil: the document serves no TLS
	tlsIn     *tlsInputs
	files     *fileSet // the files the document names, as the compile read them

	// Set by compile, consumed by commit: runtime state not yet visible.
	plan       *upstream.Plan
	transports *transportPlan
	health     []health.ClusterHealth
	warnings   []*ValidationError
	live       *liveCertificates // the compiler's store of client certificates, which commit points at tls
}

// Warnings returns what compiling found worth saying about a valid
// document: settings that take effect differently from how they read.
func (s *Snapshot) Warnings() []*ValidationError { return s.warnings }

// TLS returns the snapshot's TLS table, or nil when the document names no
// certificate. A Store serves it through its Selector.
func (s *Snapshot) TLS() *tlsselect.Table { return s.tls }

// Revision returns the publisher revision that produced the snapshot (0 for
// one compiled outside a publisher).
func (s *Snapshot) Revision() uint64 { return s.revision }

// Document returns the document the snapshot was compiled from. It must not
// be modified.
func (s *Snapshot) Document() *config.Document { return s.doc }

// Canonical returns the canonical JSON of the document.
func (s *Snapshot) Canonical() []byte { return s.canon.Bytes() }

// Gate returns the snapshot's gate.
func (s *Snapshot) Gate() *gate.Gate { return s.gate }

// Cluster returns the compiled cluster of an upstream ID, or nil.
func (s *Snapshot) Cluster(id string) *proxy.Cluster { return s.clusters[id] }

// Clusters returns the snapshot's clusters, ordered by ID.
func (s *Snapshot) Clusters() []*proxy.Cluster {
	out := make([]*proxy.Cluster, 0, len(s.clusters))
	for _, c := range s.clusters {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *proxy.Cluster) int { return strings.Compare(a.Upstream.ID(), b.Upstream.ID()) })
	return out
}

// ServeHTTP runs the snapshot's gate; a zero Snapshot answers 503, as a
// Store before its first publish.
func (s *Snapshot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.gate == nil {
		noSnapshot(w)
		return
	}
	s.gate.ServeHTTP(w, r)
}

// Compiler holds what documents are compiled with: the embedder's
// policies, health monitor, country lookup and certificate sources. Its
// runtime state (the upstream registry and the transports) outlives every
// snapshot it compiles, so health verdicts, in-flight counts and pooled
// connections carry over. Use it as [PublisherConfig.Compiler], which
// compiles and serves, and call [Compiler.Check] to validate a document
// as that publisher would. A Compiler is used by one publisher; its zero
// value is ready to use.
type Compiler struct {
	// Registry keeps cluster and destination state; nil means a private
	// one.
	Registry *upstream.Registry
	// Tracer is passed to every gate; nil in production.
	Tracer *gate.Tracer
	// GateState keeps policy state (rate-limit buckets) and the gate's
	// counters across snapshots; nil means a private one.
	GateState *gate.State
	// Challenges answers ACME HTTP-01 challenges; nil means none.
	Challenges *gate.ChallengeStore
	// Countries resolves client countries for the access lists'
	// allowCountries and denyCountries; nil means none, and then a
	// document with country rules is refused
	// (gate.accessList.countries.noLookup).
	Countries gate.CountryLookup
	// Logger receives the gate's "would have blocked" lines of shadowed
	// policies and the changes of the health monitor a Publisher runs for
	// this compiler; nil discards them.
	Logger *slog.Logger
	// Health validates every cluster's health config (with its registered
	// policies) and, once a snapshot is applied, runs the checks: it is
	// handed the clusters with health settings or slow start (and once
	// more a cluster that lost them, to reset its verdicts). A Publisher
	// whose compiler has none runs one of its own (see [Publisher]); a
	// Compiler used alone validates with the built-in policies and runs
	// nothing.
	Health *health.Monitor
	// Policies builds each cluster's balancing policy, with the policies
	// the embedder registered; nil means a private one with the built-in
	// policies. Keep one for the Compiler's life.
	Policies *balance.Policies
	// AffinityKey is the secret of every affinity key; nil means a random
	// one made once. Replicas behind one load balancer must share it.
	AffinityKey []byte
	// Certificates are certificate sources of the embedder's, by
	// certificate ID: a document certificate with neither files nor acme
	// takes its source from here (the reference daemon's self-signed
	// localhost certificate is one).
	Certificates map[string]tlsselect.Source
	// ACME obtains the certificates a document marks acme; nil refuses
	// them. Its OnReady should call the Publisher's RefreshTLS.
	ACME *tlsselect.ACME
	// TicketSecret is the master secret of TLS session ticket keys, at
	// least tlsselect.MinTicketSecretLen bytes; nil means a random one
	// made once, so tickets survive publishes but not a restart. Replicas
	// behind one load balancer should share it.
	TicketSecret []byte
	// TicketSecrets, when set, are the master secrets of the ticket keys
	// in place of TicketSecret: secrets that may be replaced while the
	// gateway serves (a fleet's rotation, tlsselect.TicketSecrets.Set),
	// every TLS table of the compiler installing each replacement on its
	// next handshake, without a publish.
	TicketSecrets *tlsselect.TicketSecrets
	// Observer receives the record of every finished request, AccessLog
	// the same for the hosts whose accessLog is not false (a
	// telemetry.AccessLog, say); nil means none. See gate.Config.
	Observer  telemetry.Observer
	AccessLog telemetry.Observer
	// Answer, when not nil, writes the gateway's own answers in place of
	// the built-in ones (see gate.AnswerFunc).
	Answer gate.AnswerFunc
	// HTTPSPort is the port the gateway's HTTPS listener is bound to:
	// the default of a document's global.httpsPort, which Alt-Svc and
	// HTTPS redirects name (see gate.Config.HTTPSPort). 0 means 443. Set
	// it before the first compile, once the listener is bound (the
	// reference daemon sets it from the address edge.Start bound); a
	// compile with another value than the last compiles every host again.
	HTTPSPort int
	// FileTimeout bounds the reading of the files a document names
	// (certificates' certFile and keyFile, hosts' tls.clientCAs), all of
	// them together, for one publish, check or draft; 0 means
	// tlsselect.FileTimeout. A file not read by then refuses the
	// document (file.timeout); the read happens on the goroutine that
	// publishes, never on the publisher's.
	FileTimeout time.Duration

	ticketSecret []byte
	transports   *transports       // one per cluster ID, across publishes
	live         *liveCertificates // upstream client certificates: the applied snapshot's table

	stats       map[string]*proxy.Stats // per upstream ID, across publishes
	backends    backendStats            // per route's side and mirror, across publishes
	placeholder *proxy.Cluster          // for routes whose upstream is not built
	monitored   map[string]bool         // the upstream IDs the monitor took at the last apply
	// applied is the snapshot committed last, whose clusters and
	// transports the registry and transports hold: a compile that keeps
	// all of them plans neither.
	applied *Snapshot
	checker *config.Checker // the last compile's, whose upstream ID index the next takes when the IDs are the same
}

func (c *Compiler) init() {
	if c.Policies == nil {
		c.Policies = new(balance.Policies)
	}
	if c.AffinityKey == nil {
		c.AffinityKey = balance.NewAffinityKey()
	}
	if c.stats == nil {
		c.stats = make(map[string]*proxy.Stats)
	}
	if c.Registry == nil {
		c.Registry = new(upstream.Registry)
	}
	if c.transports == nil {
		c.transports = new(transports)
	}
	if c.live == nil {
		c.live = new(liveCertificates)
	}
	if c.GateState == nil {
		c.GateState = new(gate.State)
	}
	if c.ticketSecret == nil && c.TicketSecrets == nil {
		c.ticketSecret = c.TicketSecret
		if c.ticketSecret == nil {
			c.ticketSecret = newTicketSecret()
		}
	}
}

// compileDocument validates a document and builds a snapshot whose runtime
// state is prepared but not yet visible, so it cannot serve: only the
// publisher makes it visible (commit) and stores it. A refused document
// returns an error joining every *ValidationError. It never panics on any
// document. It reads the files the document names on the caller's
// goroutine. Users validate with [Compiler.Check] and serve through a
// [Publisher].
func (c *Compiler) compileDocument(doc *config.Document) (*Snapshot, error) {
	if doc == nil {
		doc = new(config.Document)
	}
	form, err := canonical(config.Form{}, doc)
	if err != nil {
		return nil, err
	}
	return c.compile(doc, form, nil, c.readFiles(doc, nil))
}

// Check returns every problem of a document, as a publish through this
// compiler would refuse it (its registered balancing policies, its health
// monitor's policies and its country lookup included), in document order;
// nil means the document is valid. It compiles with runtime state of its
// own, so it changes none of the compiler's (rate-limit buckets,
// transports, destinations).
func (c *Compiler) Check(doc *config.Document) []*ValidationError {
	probe := Compiler{Countries: c.Countries, Health: c.Health, Policies: c.Policies, AffinityKey: c.AffinityKey, FileTimeout: c.FileTimeout,
		HTTPSPort: c.HTTPSPort}
	_, err := probe.compileDocument(doc)
	return Problems(err)
}

// Draft compiles doc as a publish would, for inspection and simulation
// (package simulate), and never publishes it: it runs on runtime state of
// its own (a registry, transports and gate state made for it, fresh
// rate-limit buckets), with c's country lookup, health policies,
// balancing policies, affinity key, certificate sources, challenges and
// ticket secret, and starts no health checks. It returns every problem
// a publish would, as Check does. The snapshot is for reading and
// simulating; to serve a document, publish it.
func (c *Compiler) Draft(doc *config.Document) (*Snapshot, error) {
	draft := Compiler{Countries: c.Countries, Health: c.Health, Policies: c.Policies, AffinityKey: c.AffinityKey,
		Certificates: c.Certificates, Challenges: c.Challenges, TicketSecret: c.TicketSecret, TicketSecrets: c.TicketSecrets, FileTimeout: c.FileTimeout,
		HTTPSPort: c.HTTPSPort}
	return draft.compileDocument(doc)
}

// DraftData is [Compiler.Draft] for a document in bytes, as
// [Publisher.PublishData] takes it: a document that decodes only in part
// is compiled all the same, and the error holds exactly the problems a
// publish of data would be refused with.
func (c *Compiler) DraftData(data []byte) (*Snapshot, error) {
	doc, decoded := config.Decode(data)
	if doc == nil {
		return nil, decoded
	}
	snap, err := c.Draft(doc)
	if err == nil && decoded == nil {
		return snap, nil
	}
	return nil, joinProblems(refusal(decoded, err))
}

// Validate returns every problem of a decoded document with the built-in
// names only, each with a stable Code and a Path, in document order: the
// document's own (config.Check) and those of every package it maps onto;
// nil means the document is valid. It never modifies doc and never panics.
// Use [Compiler.Check] when policies are registered.
func Validate(doc *config.Document) []*ValidationError {
	var c Compiler
	return c.Check(doc)
}

// canonical returns the canonical form of any document, written over
// scratch's memory (see [config.CanonicalFormOver]).
func canonical(scratch config.Form, doc *config.Document) (form config.Form, err error) {
	defer recoverCanonical(&form, &err)
	return canonicalProblem(config.CanonicalFormOver(scratch, doc))
}

// canonicalSince is canonical taking from base, the form of an earlier
// document, what did not change since (see [config.CanonicalFormSince]).
func canonicalSince(scratch, base config.Form, doc *config.Document) (form config.Form, err error) {
	defer recoverCanonical(&form, &err)
	return canonicalProblem(config.CanonicalFormSince(scratch, base, doc))
}

// recoverCanonical turns a panic of the canonical form into a problem.
func recoverCanonical(form *config.Form, err *error) {
	if v := recover(); v != nil {
		*form, *err = config.Form{}, &ValidationError{Code: CodeCompileInternal, Msg: fmt.Sprint("canonical form panic: ", v)}
	}
}

// canonicalProblem returns the form, or the error as a problem.
func canonicalProblem(form config.Form, err error) (config.Form, error) {
	if err != nil {
		return form, &ValidationError{Code: CodeCompileInternal, Msg: err.Error()}
	}
	return form, nil
}

// compile maps a document onto the configs of the packages that own each
// setting and builds them, collecting every problem: the document's own and
// each package's, under the document's paths. prev, when not nil, is the
// snapshot currently applied: hosts and upstreams that did not change since
// are reused from it, unchecked, since it was valid. files are the files
// the document names, read ahead: the compile reads no file. A panic is
// turned into an error.
func (c *Compiler) compile(doc *config.Document, form config.Form, prev *Snapshot, files *fileSet) (snap *Snapshot, err error) {
	c.init()
	defer func() {
		if v := recover(); v != nil {
			snap, err = nil, &ValidationError{Code: CodeCompileInternal, Msg: fmt.Sprint("compiler panic: ", v)}
		}
	}()
	r := newRun(c, doc, files)
	s := r.build(form, prev)
	if err := prune(r.probs).Err(); err != nil {
		return nil, err
	}
	s.warnings = r.warns
	return s, nil
}

func (r *run) build(form config.Form, prev *Snapshot) *Snapshot {
	doc, c := r.doc, r.c
	s := &Snapshot{
		doc: doc, canon: form, files: r.files, live: c.live,
	}
	prevTLS := prev
	if prev != nil && !bytes.Equal(prev.canon.Global(), form.Global()) {
		prev = nil // the global block (the zone, say) reaches every cluster
	}
	c.Policies.Zone = doc.Global.Zone // read by PreferLocalZone when it is built
	r.upstreams(s, form, prev)
	s.tls, s.tlsIn = r.tlsTable(prevTLS)
	pols := r.policies()
	r.check.Global()

	gc := gate.Config{
		Server:              doc.Global.Server,
		TrustForwardedProto: doc.Global.TrustForwardedProto,
		Tracer:              c.Tracer,
		Cloudflare:          doc.Global.Cloudflare,
		State:               c.GateState,
		Challenges:          c.Challenges,
		Logger:              c.Logger,
		Observer:            c.Observer,
		AccessLog:           c.AccessLog,
		Answer:              c.Answer,
		TrustedProxies:      prefixes(doc.Global.TrustedProxies),
		ProbeSources:        prefixes(doc.Global.ProbeSources),
		HTTPSPort:           cmp.Or(doc.Global.HTTPSPort, c.HTTPSPort),
	}
	s.httpsPort = gc.HTTPSPort
	if a := doc.Global.DefaultAnswer; a != nil {
		gc.Default = answer(a)
	}
	reuse := c.reusableHosts(doc, s, prev, r.keptClusters)
	for i, h := range reuse {
		// A client CA file read again may hold other roots: the host's
		// re-check must take them.
		if h != nil && !sameCerts(h.TLS.ClientCAs, r.casOf(i)) {
			reuse[i] = nil
		}
	}
	compiled := len(doc.Hosts)
	for _, h := range reuse {
		if h != nil {
			compiled--
		}
	}
	gc.Hosts = make([]gate.Host, 0, compiled)
	gc.Reuse = make([]*gate.Host, 0, len(doc.Hosts)-compiled)
	s.hostIndex = make([]int, len(doc.Hosts))
	docOf := make([]int, 0, len(doc.Hosts)) // document index of gc.Hosts[k], then of gc.Reuse[k]
	for i := range doc.Hosts {
		if reuse != nil && reuse[i] != nil {
			continue
		}
		s.hostIndex[i] = len(gc.Hosts)
		gc.Hosts = append(gc.Hosts, r.host(i, &doc.Hosts[i], s, pols))
		docOf = append(docOf, i)
	}
	for i := range doc.Hosts {
		if reuse != nil && reuse[i] != nil {
			s.hostIndex[i] = len(gc.Hosts) + len(gc.Reuse)
			gc.Reuse = append(gc.Reuse, reuse[i])
			docOf = append(docOf, i)
		}
	}
	g, err := gate.New(gc)
	r.gateProblems(err, docOf, len(gc.Hosts))
	if len(r.probs) > 0 {
		return nil
	}
	r.retainRateLimits()
	s.gate = g
	return s
}

// prune drops the problems under the path of an earlier one: a block the
// document found missing or misplaced (hosts[2].redirect) is not also
// reported by its owner field by field (hosts[2].redirect.to); and a value
// two owners read (a host's TLS minimum version: tlsselect for the
// handshake, the gate for its per-request re-check) is reported once.
func prune(probs problem.List) problem.List {
	out := probs[:0:0]
	for _, p := range probs {
		if !coveredBy(p, out, false) && !samePath(p, out) {
			out = append(out, p)
		}
	}
	return out
}

func samePath(p *ValidationError, by []*ValidationError) bool {
	for _, q := range by {
		if q.Path == p.Path && q.Path != "" {
			return true
		}
	}
	return false
}

// coveredBy reports whether p's path is under the path of one of by, or
// equal to it when equal counts.
func coveredBy(p *ValidationError, by []*ValidationError, equal bool) bool {
	for _, q := range by {
		if q.Path == "" || !strings.HasPrefix(p.Path, q.Path) {
			continue
		}
		if len(p.Path) == len(q.Path) {
			if equal {
				return true
			}
			continue
		}
		if c := p.Path[len(q.Path)]; c == '.' || c == '[' {
			return true
		}
	}
	return false
}

// gateProblems records the gate's problems under the document's paths:
// its hosts (compiled, then reused) back at their document index, its own
// fields under global.
func (r *run) gateProblems(err error, docOf []int, compiled int) {
	for _, p := range Problems(err) {
		path, msg := p.Path, p.Msg
		for _, list := range [...]string{"hosts[", "reuse["} {
			rest, ok := strings.CutPrefix(path, list)
			if !ok {
				continue
			}
			end := strings.IndexByte(rest, ']')
			k, convErr := strconv.Atoi(rest[:max(end, 0)])
			if list == "reuse[" {
				k += compiled
			}
			if end < 0 || convErr != nil || k < 0 || k >= len(docOf) {
				break
			}
			path = hostPath(docOf[k], gateHostPath(rest[end+1:]))
		}
		switch {
		case strings.HasPrefix(path, "hosts["):
		case path == "server":
			path = "global.server"
		case path == "httpsPort" && r.doc.Global.HTTPSPort != 0:
			path = "global.httpsPort"
		case path == "httpsPort":
			path, msg = "", "Compiler.HTTPSPort: "+msg
		default:
			path = renameHead(path, "default", "global.defaultAnswer")
			path = renameHead(path, "trustedProxies", "global.trustedProxies")
			path = renameHead(path, "probeSources", "global.probeSources")
		}
		r.probs = append(r.probs, &ValidationError{Code: p.Code, Path: path, Msg: msg})
	}
	if err != nil && len(Problems(err)) == 0 {
		r.add(CodeCompileInternal, "", err.Error())
	}
}

// gateHostPath maps the path of a problem within a gate host onto the
// document's host: the route's prefix is its path, its path allowance
// allowInPath.
func gateHostPath(rest string) string {
	route, ok := strings.CutPrefix(rest, ".routes[")
	if !ok {
		return rest
	}
	end := strings.IndexByte(route, ']')
	if end < 0 {
		return rest
	}
	field := route[end+1:]
	field = renameHead(strings.TrimPrefix(field, "."), "prefix", "path")
	field = renameHead(field, "pathAllow", "allowInPath")
	field = renameHead(field, "target.rewrite", "rewrite") // a path value the rewrite template reads
	if field != "" {
		field = "." + field
	}
	return ".routes[" + route[:end+1] + field
}

// reusableHosts returns, for each host of doc, the host compiled by prev
// at the same position when nothing it depends on changed: its own block,
// the global block (checked by build), the policy blocks it names, and the
// clusters its routes lead to (all of prev's when kept). A host that
// moved is compiled again. It returns nil when nothing can be reused.
func (c *Compiler) reusableHosts(doc *config.Document, s, prev *Snapshot, kept bool) []*gate.Host {
	if prev == nil || prev.gate == nil || !bytes.Equal(prev.canon.Policies(), s.canon.Policies()) || prev.httpsPort != s.httpsPort {
		return nil
	}
	reuse := make([]*gate.Host, len(doc.Hosts))
	for i := range min(len(doc.Hosts), prev.canon.Hosts()) {
		if prev.canon.SameHost(s.canon, i) &&
			sameClusters(&doc.Hosts[i], s, prev, kept) {
			reuse[i] = prev.gate.Host(prev.hostIndex[i])
		}
	}
	return reuse
}

// sameCerts reports whether a and b hold the same certificates in the
// same order, compared by their DER bytes.
func sameCerts(a, b []*x509.Certificate) bool {
	return slices.EqualFunc(a, b, func(x, y *x509.Certificate) bool { return x.Equal(y) })
}

// sameClusters reports whether every route of h leads to the same compiled
// cluster in s as in prev; kept: s has prev's clusters.
func sameClusters(h *config.Host, s, prev *Snapshot, kept bool) bool {
	same := func(id string) bool { c := s.clusters[id]; return c != nil && (kept || c == prev.clusters[id]) }
	for k := range h.Routes {
		r := &h.Routes[k]
		if len(r.Backends) == 0 && !same(r.Upstream) {
			return false
		}
		for _, b := range r.Backends {
			if !same(b.Upstream) {
				return false
			}
		}
		if r.Mirror != nil && !same(r.Mirror.Upstream) {
			return false
		}
	}
	return true
}

// commit makes the snapshot's runtime state visible: cluster members and
// transports. It runs before the snapshot is stored, so a request that reads
// the new snapshot finds its clusters populated.
func (s *Snapshot) commit() {
	if s.plan != nil { // nil: the registry holds the snapshot's clusters already
		s.plan.Commit()
	}
	s.live.table.Store(s.tls) // before the transports, whose handshakes read it
	if s.transports != nil {
		s.transports.commit()
	}
	s.plan, s.transports = nil, nil
}

// startHealth hands the applied snapshot's clusters to the health monitor:
// clusters it no longer names stop being probed. Their configs were
// validated by the same monitor at compile time. A monitor of the
// publisher's own starts probing with the first config that asks for it.
func (c *Compiler) startHealth(s *Snapshot, own *ownMonitor) error {
	if c.Health == nil {
		return nil
	}
	hs := s.health
	s.health = nil
	c.monitored = make(map[string]bool, len(hs))
	for _, h := range hs {
		if cu := s.upstreams[h.Cluster.ID()]; cu != nil && cu.monitor {
			c.monitored[h.Cluster.ID()] = true
		}
		if own != nil && h.Config.Active.Enabled {
			own.start()
		}
	}
	return c.Health.Update(hs...)
}

func answer(a *config.FixedAnswer) gate.Answer {
	return gate.Answer{Status: a.Status, ContentType: a.ContentType, Body: []byte(a.Body)}
}

// notServed is the target of a route whose upstream is not built: the
// document is refused, so it never serves.
var notServed = gate.TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *gate.Request) {
	rq.Answer(w, r, http.StatusInternalServerError)
})

// placeholderCluster is the cluster of a route whose upstream is not
// built, so that the route's own settings are still checked: the document
// is refused, so it never serves.
func (c *Compiler) placeholderCluster() *proxy.Cluster {
	if c.placeholder == nil {
		var reg upstream.Registry
		rc := reg.Plan([]upstream.ClusterConfig{{ID: "-"}}).Cluster("-")
		c.placeholder = &proxy.Cluster{Upstream: rc, Transport: refusingTransport{}}
	}
	return c.placeholder
}

type refusingTransport struct{}

func (refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("snapshot: no upstream")
}

// ownMonitor is the health monitor a publisher runs for a compiler
// without one: created with the publisher, started with the first config
// that probes, closed by [Publisher.Close].
type ownMonitor struct {
	m *health.Monitor

	mu      sync.Mutex // start runs on the publisher's goroutine, close on its caller's
	started bool       // or closed: started no more
	cancel  context.CancelFunc
}

func (o *ownMonitor) start() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.started {
		return
	}
	o.started = true
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	o.m.Start(ctx)
}

func (o *ownMonitor) close() {
	o.mu.Lock()
	o.started = true
	if o.cancel != nil {
		o.cancel()
	}
	o.mu.Unlock()
	o.m.Close()
}
