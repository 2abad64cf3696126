package snapshot

import (
	"bytes"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// Snapshot is one compiled, immutable config generation: the gate (host
// table, routes, answers) and, for each route, its target built in the same
// compile. A request reads one Snapshot and takes every decision from it.
type Snapshot struct {
	revision uint64
	doc      *Document
	canon    canonForm
	// upstreams holds what each upstream compiled to, for the next compile
	// to reuse when the upstream and the global block are unchanged.
	upstreams map[string]*compiledUpstream
	// hostIndex maps each document host to its index in the gate.
	hostIndex []int
	gate      *gate.Gate
	clusters  map[string]*proxy.Cluster

	// Set by Compile, consumed by commit: runtime state not yet visible.
	plan       *upstream.Plan
	transports *proxy.TransportPlan
	health     []health.ClusterHealth
	warnings   []*ValidationError
}

// Warnings returns what compiling found worth saying about a valid
// document: settings that take effect differently from how they read.
func (s *Snapshot) Warnings() []*ValidationError { return s.warnings }

// Revision returns the publisher revision that produced the snapshot (0 for
// one compiled outside a publisher).
func (s *Snapshot) Revision() uint64 { return s.revision }

// Document returns the document the snapshot was compiled from. It must not
// be modified.
func (s *Snapshot) Document() *Document { return s.doc }

// Canonical returns the canonical JSON of the document.
func (s *Snapshot) Canonical() []byte { return s.canon.bytes }

// Gate returns the snapshot's gate.
func (s *Snapshot) Gate() *gate.Gate { return s.gate }

// Cluster returns the compiled cluster of an upstream ID, or nil.
func (s *Snapshot) Cluster(id string) *proxy.Cluster { return s.clusters[id] }

// ServeHTTP runs the snapshot's gate.
func (s *Snapshot) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.gate.ServeHTTP(w, r) }

// Compiler turns documents into snapshots. Its runtime state (the upstream
// registry and the transports) outlives every snapshot it compiles, so
// health verdicts, in-flight counts and pooled connections carry over. A
// Compiler is used by one publisher; its zero value is ready to use.
type Compiler struct {
	// Registry keeps cluster and destination state; nil means a private
	// one.
	Registry *upstream.Registry
	// Transports keeps upstream transports; nil means a private one.
	Transports *proxy.Transports
	// Tracer is passed to every gate; nil in production.
	Tracer *gate.Tracer
	// GateState keeps policy state (rate-limit buckets) and the gate's
	// counters across snapshots; nil means a private one.
	GateState *gate.State
	// Challenges answers ACME HTTP-01 challenges; nil means none.
	Challenges *gate.ChallengeStore
	// Countries resolves client countries for access lists; nil means
	// none.
	Countries gate.CountryLookup
	// Validate holds the names the embedder registered.
	Validate ValidateOptions
	// Health runs the active and passive checks of every cluster; nil
	// means no health checking (every destination stays available unless
	// something else sets a verdict). The compiler validates each cluster's
	// health config with it and, once a snapshot is applied, hands it the
	// clusters.
	Health *health.Monitor
	// Policies builds each cluster's balancing policy, with the policies
	// the embedder registered; nil means a private one with the built-in
	// policies. Keep one for the Compiler's life.
	Policies *balance.Policies
	// AffinityKey is the secret of every affinity key; nil means a random
	// one made once. Replicas behind one load balancer must share it.
	AffinityKey []byte

	stats map[string]*proxy.Stats // per upstream ID, across publishes
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
	if c.Transports == nil {
		c.Transports = new(proxy.Transports)
	}
	if c.GateState == nil {
		c.GateState = new(gate.State)
	}
}

// CodeCompileInternal reports a document that validation accepted and the
// compiler could not build: a bug, reported rather than served.
const CodeCompileInternal = "compile.internal"

// Compile validates a document and builds a snapshot whose runtime state is
// prepared but not yet visible; the publisher makes it visible. A refused
// document returns an error joining every *ValidationError. Compile never
// panics on any document.
func (c *Compiler) Compile(doc *Document) (*Snapshot, error) {
	form, err := c.check(doc)
	if err != nil {
		return nil, err
	}
	return c.buildSafe(doc, form, nil)
}

// check validates a document and returns its canonical form.
func (c *Compiler) check(doc *Document) (canonForm, error) {
	form, err := canonical(doc)
	if err != nil {
		return form, err
	}
	return form, c.validate(doc, form, nil)
}

// canonical returns the canonical form of any document.
func canonical(doc *Document) (form canonForm, err error) {
	defer func() {
		if v := recover(); v != nil {
			form, err = canonForm{}, &ValidationError{Code: CodeCompileInternal, Msg: fmt.Sprint("canonical form panic: ", v)}
		}
	}()
	if form, err = canonicalSpans(doc); err != nil {
		return form, &ValidationError{Code: CodeCompileInternal, Msg: err.Error()}
	}
	return form, nil
}

// validate returns every problem of a document, joined. With prev (the
// applied snapshot) and the document's canonical form, upstreams equal to
// one of prev's are not checked field by field again.
func (c *Compiler) validate(doc *Document, form canonForm, prev *Snapshot) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &ValidationError{Code: CodeCompileInternal, Msg: fmt.Sprint("validation panic: ", v)}
		}
	}()
	var known func(int) bool
	if prev != nil && len(form.upstreams) == len(doc.Upstreams) {
		known = func(i int) bool {
			old := prev.upstreams[doc.Upstreams[i].ID]
			return old != nil && bytes.Equal(old.canon, form.of(form.upstreams[i]))
		}
	}
	return joinProblems(validate(doc, c.Validate, known))
}

// buildSafe builds a validated document, turning a panic into an error.
// prev, when not nil, is the snapshot currently applied: upstreams that
// did not change since are reused from it.
func (c *Compiler) buildSafe(doc *Document, form canonForm, prev *Snapshot) (snap *Snapshot, err error) {
	c.init()
	defer func() {
		if v := recover(); v != nil {
			snap, err = nil, &ValidationError{Code: CodeCompileInternal, Msg: fmt.Sprint("compiler panic: ", v)}
		}
	}()
	return c.build(doc, form, prev)
}

func (c *Compiler) build(doc *Document, form canonForm, prev *Snapshot) (*Snapshot, error) {
	s := &Snapshot{
		doc: doc, canon: form,
		clusters:  make(map[string]*proxy.Cluster, len(doc.Upstreams)),
		upstreams: make(map[string]*compiledUpstream, len(doc.Upstreams)),
	}
	if prev != nil && !bytes.Equal(prev.canon.of(prev.canon.global), form.of(form.global)) {
		prev = nil // the global block (the zone, say) reaches every cluster
	}
	c.Policies.Zone = doc.Global.Zone // read by PreferLocalZone when it is built
	units := make([]*compiledUpstream, len(doc.Upstreams))
	cfgs := make([]upstream.ClusterConfig, len(doc.Upstreams))
	var refused []*ValidationError
	for i := range doc.Upstreams {
		u := &doc.Upstreams[i]
		canon := form.of(form.upstreams[i])
		if prev != nil {
			if old := prev.upstreams[u.ID]; old != nil && bytes.Equal(old.canon, canon) {
				units[i] = old
				cfgs[i] = old.cfg
				cfgs[i].Unchanged = true
				continue
			}
		}
		cu, errs, err := c.compileUpstream(i, u)
		if err != nil {
			return nil, err
		}
		refused = append(refused, errs...)
		cu.canon = canon
		units[i], cfgs[i] = cu, cu.cfg
	}
	if err := joinProblems(refused); err != nil {
		return nil, err
	}
	s.plan = c.Registry.Plan(cfgs)
	s.transports = c.Transports.Next()
	if c.Health != nil {
		s.health = make([]health.ClusterHealth, len(doc.Upstreams))
	}
	for i, cu := range units {
		id := cu.cfg.ID
		rc, tr := s.plan.Cluster(id), s.transports.Get(id, cu.client)
		if cu.cluster == nil || cu.cluster.Upstream != rc || cu.cluster.Transport != tr {
			cl := *cu
			cl.cluster = c.cluster(id, cu, rc, tr)
			cu = &cl
		}
		s.upstreams[id] = cu
		s.clusters[id] = cu.cluster
		s.warnings = append(s.warnings, cu.warnings...)
		if s.health != nil {
			s.health[i] = health.ClusterHealth{Cluster: rc, Config: cu.health, Transport: tr}
		}
	}

	gc := gate.Config{
		Server:              doc.Global.Server,
		TrustForwardedProto: doc.Global.TrustForwardedProto,
		Tracer:              c.Tracer,
		Cloudflare:          doc.Global.Cloudflare,
		State:               c.GateState,
		Challenges:          c.Challenges,
	}
	for _, p := range doc.Global.ProbeSources {
		pr, err := parsePrefix(p)
		if err != nil {
			return nil, internal("global.probeSources", err)
		}
		gc.ProbeSources = append(gc.ProbeSources, pr)
	}
	pols, err := c.gatePolicies(doc)
	if err != nil {
		return nil, err
	}
	for _, p := range doc.Global.TrustedProxies {
		pr, err := parsePrefix(p)
		if err != nil {
			return nil, internal("global.trustedProxies", err)
		}
		gc.TrustedProxies = append(gc.TrustedProxies, pr)
	}
	if a := doc.Global.DefaultAnswer; a != nil {
		gc.Default = answer(a)
	}
	reuse := c.reusableHosts(doc, s, prev)
	compiled := len(doc.Hosts)
	for _, h := range reuse {
		if h != nil {
			compiled--
		}
	}
	gc.Hosts = make([]gate.Host, 0, compiled)
	gc.Reuse = make([]*gate.Host, 0, len(doc.Hosts)-compiled)
	s.hostIndex = make([]int, len(doc.Hosts))
	for i := range doc.Hosts {
		if reuse != nil && reuse[i] != nil {
			s.hostIndex[i] = compiled + len(gc.Reuse)
			gc.Reuse = append(gc.Reuse, reuse[i])
			continue
		}
		h := &doc.Hosts[i]
		gh := gate.Host{Names: h.Names, Server: h.Server}
		if err := gateHost(&gh, h, i, pols); err != nil {
			return nil, err
		}
		switch h.Kind {
		case "", KindProxy:
			gh.Routes = make([]gate.Route, len(h.Routes))
			site, err := proxySite(h)
			if err != nil {
				return nil, internal(hostPath(i, ""), err)
			}
			for j := range h.Routes {
				r := &h.Routes[j]
				target, err := proxyRoute(r, s.clusters[r.Upstream], site)
				if err != nil {
					if ps := Problems(err); len(ps) > 0 && ps[len(ps)-1].Code == proxy.CodeHeadersTooMany {
						return nil, &ValidationError{Code: CodeHeadersTooMany, Path: routePath(i, j, ".headers"), Msg: "over 32 rules in one direction once merged over the host's: " + err.Error()}
					}
					return nil, internal(routePath(i, j, ""), err)
				}
				gh.Routes[j] = gate.Route{ID: r.ID, Prefix: r.Path, Target: target, PathAllow: pathAllow(r.AllowInPath)}
				if err := gateRoute(&gh.Routes[j], &h.Routes[j], i, j, pols); err != nil {
					return nil, err
				}
			}
		case KindRedirect:
			gh.Kind = gate.HostRedirect
			gh.Redirect = gate.Redirect{To: h.Redirect.To, Status: h.Redirect.Status, DropPath: h.Redirect.DropPath}
		case KindFixed:
			gh.Kind = gate.HostFixed
			gh.Fixed = answer(h.Fixed)
		}
		s.hostIndex[i] = len(gc.Hosts)
		gc.Hosts = append(gc.Hosts, gh)
	}
	g, err := gate.New(gc)
	if err != nil {
		return nil, internal("", err)
	}
	c.retainRateLimits(doc)
	s.gate = g
	return s, nil
}

// reusableHosts returns, for each host of doc, the host compiled by prev
// at the same position when nothing it depends on changed: its own block,
// the global block (checked by build), the policy blocks it names, and the
// clusters its routes lead to. A host that moved is compiled again. It
// returns nil when nothing can be reused.
func (c *Compiler) reusableHosts(doc *Document, s, prev *Snapshot) []*gate.Host {
	if prev == nil || prev.gate == nil ||
		!bytes.Equal(prev.canon.of(prev.canon.policies), s.canon.of(s.canon.policies)) {
		return nil
	}
	reuse := make([]*gate.Host, len(doc.Hosts))
	for i := range min(len(doc.Hosts), len(prev.canon.hosts)) {
		if bytes.Equal(prev.canon.of(prev.canon.hosts[i]), s.canon.of(s.canon.hosts[i])) &&
			sameClusters(&doc.Hosts[i], s, prev) {
			reuse[i] = prev.gate.Host(prev.hostIndex[i])
		}
	}
	return reuse
}

// sameClusters reports whether every route of h leads to the same compiled
// cluster in s as in prev.
func sameClusters(h *Host, s, prev *Snapshot) bool {
	for _, r := range h.Routes {
		if c := s.clusters[r.Upstream]; c == nil || c != prev.clusters[r.Upstream] {
			return false
		}
	}
	return true
}

// commit makes the snapshot's runtime state visible: cluster members and
// transports. It runs before the snapshot is stored, so a request that reads
// the new snapshot finds its clusters populated.
func (s *Snapshot) commit() {
	s.plan.Commit()
	s.transports.Commit()
	s.plan, s.transports = nil, nil
}

// startHealth hands the applied snapshot's clusters to the health monitor:
// clusters it no longer names stop being probed. Their configs were
// validated by the same monitor at compile time.
func (c *Compiler) startHealth(s *Snapshot) error {
	if c.Health == nil {
		return nil
	}
	hs := s.health
	s.health = nil
	return c.Health.Update(hs...)
}

func internal(path string, err error) error {
	return &ValidationError{Code: CodeCompileInternal, Path: path, Msg: err.Error()}
}

func answer(a *FixedAnswer) gate.Answer {
	return gate.Answer{Status: a.Status, ContentType: a.ContentType, Body: []byte(a.Body)}
}

// parsePrefix is [parseAddrPrefix], the one prefix decoder, with its reason
// as an error.
func parsePrefix(s string) (netip.Prefix, error) {
	p, reason := parseAddrPrefix(s)
	if reason != "" {
		return p, fmt.Errorf("prefix %q: %s", s, reason)
	}
	return p, nil
}

func clientConfig(h *UpstreamHTTP) (proxy.ClientConfig, error) {
	var c proxy.ClientConfig
	if h.Version == "2" {
		c.Version = proxy.HTTP2
	}
	if h.VersionPolicy == "exact" {
		c.VersionPolicy = proxy.VersionExact
	}
	ct, err := ParseDuration(h.ConnectTimeout, proxy.DefaultConnectTimeout)
	if err != nil {
		return c, err
	}
	c.ConnectTimeout = ct
	if _, err := ParseDuration(h.IdleTimeout, time.Hour); err != nil {
		return c, err
	}
	c.ServerName = h.TLS.ServerName
	switch h.TLS.Trust {
	case "pinned":
		c.Trust = proxy.TrustPinned
		var pins strings.Builder
		for _, p := range h.TLS.Pins {
			b, err := decodePin(p)
			if err != nil {
				return c, err
			}
			pins.Write(b)
		}
		c.Pins = pins.String()
	case "any":
		c.Trust = proxy.TrustAny
	}
	return c, nil
}

// decodePin is [decodeSHA256Pin], the one pin decoder, with an error.
func decodePin(p string) ([]byte, error) {
	sum, ok := decodeSHA256Pin(p)
	if !ok {
		return nil, fmt.Errorf("pin %q is not a SHA-256 digest in hex or base64", p)
	}
	return sum[:], nil
}

// compiledUpstream is what one upstream of the document compiles to. It
// depends only on the upstream's own block, the global block and the
// compiler, so a later compile reuses it whole while those are unchanged:
// the cluster keeps its policy instances (round-robin position, hash
// tables) and the publish skips the upstream's parsing.
type compiledUpstream struct {
	canon    []byte // the upstream's canonical bytes
	cfg      upstream.ClusterConfig
	client   proxy.ClientConfig
	health   health.Config
	warnings []*ValidationError
	policy   balance.Policy
	affinity *balance.Affinity
	idle     time.Duration
	cluster  *proxy.Cluster // set once the runtime state is planned
}

// cluster builds the forwarder's view of an upstream: its runtime state
// and transport, its policies, passive health and counters.
func (c *Compiler) cluster(id string, cu *compiledUpstream, rc *upstream.Cluster, tr http.RoundTripper) *proxy.Cluster {
	st := c.stats[id]
	if st == nil {
		st = new(proxy.Stats)
		c.stats[id] = st
	}
	cl := &proxy.Cluster{Upstream: rc, Transport: tr, Policy: cu.policy, Affinity: cu.affinity, IdleTimeout: cu.idle, Stats: st}
	if c.Health != nil {
		cl.Observer = healthObserver{c.Health}
	}
	return cl
}

// Stats returns the forwarding counters of an upstream ID, kept across
// publishes, or nil.
func (c *Compiler) Stats(id string) *proxy.Stats { return c.stats[id] }

// healthObserver feeds the forwarder's outcomes to passive health.
type healthObserver struct{ m *health.Monitor }

func (o healthObserver) Observe(ob proxy.Observation) {
	var out health.Outcome
	switch ob.Kind {
	case proxy.ErrorNone:
		if out = health.Success; ob.Status >= 500 {
			out = health.ServerError
		}
	case proxy.ErrorConnect:
		out = health.ConnectError
	case proxy.ErrorTLS:
		out = health.TLSError
	case proxy.ErrorTimeout:
		out = health.Timeout
	case proxy.ErrorResponse:
		out = health.ResponseHeaderError
	case proxy.ErrorBody:
		out = health.BodyError
	default:
		return
	}
	o.m.Record(ob.Destination, out)
}

// compileUpstream compiles upstreams[i]. Problems the health monitor finds
// are returned as refusals; err reports a problem validation should have
// caught.
func (c *Compiler) compileUpstream(i int, u *Upstream) (*compiledUpstream, []*ValidationError, error) {
	cu := &compiledUpstream{health: healthConfig(u)}
	var refused []*ValidationError
	if c.Health != nil {
		errs, warns := c.Health.Validate(cu.health)
		refused = healthProblems(i, errs)
		cu.warnings = healthProblems(i, warns)
	}
	cu.cfg = upstream.ClusterConfig{ID: u.ID, Destinations: make([]upstream.DestinationConfig, len(u.Destinations)), InitialActiveHealth: cu.health.InitialActiveHealth()}
	for j, d := range u.Destinations {
		scheme, host, err := ParseAddress(d.Address)
		if err != nil {
			return nil, nil, internal(fmt.Sprintf("upstreams[%d].destinations[%d].address", i, j), err)
		}
		dc := upstream.DestinationConfig{ID: d.ID, Scheme: scheme, Host: host, Metadata: d.Metadata}
		if d.Health != "" {
			if _, dc.HealthHost, err = ParseAddress(d.Health); err != nil {
				return nil, nil, internal(fmt.Sprintf("upstreams[%d].destinations[%d].health", i, j), err)
			}
		}
		cu.cfg.Destinations[j] = dc
	}
	client, err := clientConfig(&u.HTTP)
	if err != nil {
		return nil, nil, internal(fmt.Sprintf("upstreams[%d].http", i), err)
	}
	idle, err := ParseDuration(u.HTTP.IdleTimeout, proxy.DefaultIdleTimeout)
	if err != nil {
		return nil, nil, internal(fmt.Sprintf("upstreams[%d].http.idleTimeout", i), err)
	}
	cu.idle = idle
	if idle == 0 {
		cu.idle = -1 // never
	}
	// A request nobody answers is cut like a quiet stream.
	client.ResponseHeaderTimeout = idle
	cu.client = client
	slow, err := ParseDuration(u.Health.SlowStart, 0)
	if err != nil {
		return nil, nil, internal(fmt.Sprintf("upstreams[%d].health.slowStart", i), err)
	}
	if cu.policy, err = c.Policies.New(balance.Config{Policy: u.LoadBalancing, SlowStart: slow}); err != nil {
		return nil, nil, internal(fmt.Sprintf("upstreams[%d].loadBalancing", i), err)
	}
	if u.Affinity.Enabled {
		ac, err := affinityConfig(&u.Affinity)
		if err == nil {
			cu.affinity, err = balance.NewAffinity(ac, c.AffinityKey)
		}
		if err != nil {
			return nil, nil, internal(fmt.Sprintf("upstreams[%d].affinity", i), err)
		}
	}
	return cu, refused, nil
}

// affinityConfig maps an upstream's affinity block to balance's.
func affinityConfig(a *Affinity) (balance.AffinityConfig, error) {
	c := balance.AffinityConfig{
		Mode:          balance.AffinityMode(a.Mode),
		KeyName:       a.Key,
		FailurePolicy: balance.AffinityFailurePolicy(a.FailurePolicy),
		Cookie: balance.CookieConfig{
			Path:     a.Cookie.Path,
			Domain:   a.Cookie.Domain,
			Secure:   balance.CookieSecure(a.Cookie.Secure),
			SameSite: balance.CookieSameSite(a.Cookie.SameSite),
		},
	}
	if c.Cookie.SameSite == "Unspecified" {
		c.Cookie.SameSite = balance.CookieSameSiteUnspecified
	}
	if h := a.Cookie.HTTPOnly; h != nil && !*h {
		c.Cookie.AllowScriptAccess = true
	}
	var err error
	c.Cookie.MaxAge, err = ParseDuration(a.Cookie.MaxAge, 0)
	return c, err
}

// pathAllow maps validated allowInPath names onto the gate's set.
func pathAllow(names []string) gate.PathAllow {
	var a gate.PathAllow
	for _, n := range names {
		v, _ := gate.ParsePathAllow(n)
		a |= v
	}
	return a
}

// proxySite compiles a host's forwarding settings.
func proxySite(h *Host) (*proxy.Site, error) {
	cfg := proxy.SiteConfig{
		RequestHeaders:  headerRules(h.Headers.Request),
		ResponseHeaders: headerRules(h.Headers.Response),
		Compression: proxy.Compression{
			Enabled:     h.Compression.Enabled,
			MinimumSize: int64(h.Compression.MinimumSize),
			Encodings:   h.Compression.Encodings,
		},
		KeepUnderscoreHeaders: h.KeepUnderscoreHeaders,
	}
	switch h.RequestID {
	case "keep":
		cfg.RequestID = proxy.RequestIDKeep
	case "generate":
		cfg.RequestID = proxy.RequestIDGenerate
	}
	return proxy.NewSite(cfg)
}

// proxyRoute compiles a route's forwarding into its target.
func proxyRoute(r *Route, cl *proxy.Cluster, site *proxy.Site) (*proxy.Route, error) {
	cfg := proxy.RouteConfig{
		Cluster:         cl,
		Site:            site,
		HostName:        r.HostName,
		RequestHeaders:  headerRules(r.Headers.Request),
		ResponseHeaders: headerRules(r.Headers.Response),
		Retry:           proxy.Retry{Attempts: r.Retry.Attempts, BodyLimit: int64(r.Retry.BodyLimit), Budget: r.Retry.Budget},
		Rewrite: proxy.Rewrite{
			AddPrefix:    r.Rewrite.AddPrefix,
			KeepLocation: r.Rewrite.RewriteLocation != nil && !*r.Rewrite.RewriteLocation,
		},
	}
	if r.Rewrite.StripPrefix {
		cfg.Rewrite.StripPrefix = routeKey(r.Path)
	}
	switch r.HostHeader {
	case "destination":
		cfg.HostHeader = proxy.HostDestination
	case "custom":
		cfg.HostHeader = proxy.HostCustom
	}
	return proxy.NewRoute(cfg)
}

func headerRules(rules []HeaderRule) []proxy.HeaderRule {
	if len(rules) == 0 {
		return nil
	}
	out := make([]proxy.HeaderRule, len(rules))
	for k, r := range rules {
		op, _ := headerOp(r.Operation)
		out[k] = proxy.HeaderRule{Name: r.Name, Op: op, Value: r.Value}
	}
	return out
}
