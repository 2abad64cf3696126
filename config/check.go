package config

import (
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// Check returns the document's own problems: what [Decode] cannot tell
// and no owner of a setting is asked about. Those are the values only the
// document spells (durations, destination addresses, prefixes, TLS pins),
// IDs (missing, malformed, taken), names listed twice, references between
// objects (a route's upstream, a host's access list and policies) and
// which blocks go together (a redirect block on a redirect host, routes on
// a proxy host). Each has a code of codes.go and a path, in the order of
// the document's parts: upstreams, policies, the global block, hosts.
// nil means the document has none; it may still be refused by an owner,
// which snapshot.Validate asks too. Check never modifies doc.
func Check(doc *Document) []*ValidationError {
	if doc == nil {
		return nil
	}
	var probs []*ValidationError
	NewChecker(doc, &probs).all()
	return probs
}

// all runs every check, in the order of [Check].
func (c *Checker) all() {
	doc := c.doc
	for i := range doc.Upstreams {
		if c.UpstreamID(i) {
			for j := range doc.Upstreams[i].Destinations {
				c.Destination(i, j)
			}
			c.UpstreamValues(i)
		}
	}
	for i := range doc.AccessLists {
		c.AccessList(i)
	}
	for i := range doc.RuleSets {
		c.RuleSet(i)
	}
	for i := range doc.RateLimits {
		c.RateLimit(i)
	}
	for i := range doc.ForwardAuths {
		c.ForwardAuth(i)
	}
	c.Global()
	for i := range doc.Hosts {
		c.Host(i)
	}
}

// Checker runs the checks of [Check] one part of a document at a time,
// for a compiler that reuses the parts an earlier, valid document compiled
// to and checks again only the parts that changed: the IDs of every
// upstream and policy (they decide duplicates and references), the rest of
// the parts it compiles. Each part is checked once, in the order of Check.
// A Checker is made by [NewChecker] for one document (a zero Checker has
// none to check) and is not safe for concurrent use.
type Checker struct {
	doc  *Document
	into *[]*ValidationError

	// upstreams holds every upstream ID the document has, valid or not,
	// with the index of its first upstream, which claims it when it is
	// valid (upstreams are claimed in order); policies every policy ID:
	// the entry that claimed a valid one, or the first entry of the ID
	// with index -1 while none has. A reference to an ID that is
	// malformed or taken is not reported again, and a policy ID names an
	// access list when its first entry is one.
	upstreams map[string]ref
	policies  map[string]ref
	// upIDs are the upstream IDs upstreams indexes, in order: a Checker
	// of a document with the same ones takes upstreams as it is (see
	// NewCheckerSince), which nothing writes to once made.
	upIDs []string

	// The destinations of one upstream: their index, and the entries
	// that claimed their IDs.
	destUpstream int
	dests        map[string]ref
}

// NewChecker returns a Checker of doc that appends the problems it finds
// to *into. It indexes the IDs of the document's upstreams and policies,
// which references are checked against.
func NewChecker(doc *Document, into *[]*ValidationError) *Checker {
	return NewCheckerSince(nil, doc, into)
}

// NewCheckerSince is [NewChecker] taking the index of upstream IDs from
// prev, a Checker of an earlier document, when doc has the same upstream
// IDs in the same order (a publish that changed no upstream's ID); a nil
// prev is none. It may be used while prev is.
func NewCheckerSince(prev *Checker, doc *Document, into *[]*ValidationError) *Checker {
	c := &Checker{doc: doc, into: into, destUpstream: -1}
	if prev != nil && prev.sameUpstreamIDs(doc) {
		c.upstreams, c.upIDs = prev.upstreams, prev.upIDs
	} else {
		c.upstreams, c.upIDs = make(map[string]ref, len(doc.Upstreams)), make([]string, len(doc.Upstreams))
		for i := range doc.Upstreams {
			id := doc.Upstreams[i].ID
			c.upIDs[i] = id
			if _, ok := c.upstreams[id]; !ok {
				c.upstreams[id] = ref{"upstreams", i}
			}
		}
	}
	if n := len(doc.AccessLists) + len(doc.RuleSets) + len(doc.RateLimits) + len(doc.ForwardAuths); n > 0 {
		c.policies = make(map[string]ref, n)
	}
	first := func(list, id string) {
		if _, ok := c.policies[id]; !ok {
			c.policies[id] = ref{list, -1}
		}
	}
	for i := range doc.AccessLists {
		first(accessLists, doc.AccessLists[i].ID)
	}
	for i := range doc.RuleSets {
		first("ruleSets", doc.RuleSets[i].ID)
	}
	for i := range doc.RateLimits {
		first("rateLimits", doc.RateLimits[i].ID)
	}
	for i := range doc.ForwardAuths {
		first("forwardAuths", doc.ForwardAuths[i].ID)
	}
	return c
}

// sameUpstreamIDs reports whether doc's upstream IDs are c's, in order.
func (c *Checker) sameUpstreamIDs(doc *Document) bool {
	if len(c.upIDs) != len(doc.Upstreams) {
		return false
	}
	for i, id := range c.upIDs {
		if doc.Upstreams[i].ID != id {
			return false
		}
	}
	return true
}

const accessLists = "accessLists"

// add records a problem. Paths and messages are built by the callers only
// once a problem is found, so a valid document costs no string building.
func (c *Checker) add(code, path, msg string) {
	*c.into = append(*c.into, &ValidationError{Code: code, Path: path, Msg: msg})
}

// UpstreamID checks the ID of upstreams[i] and reports whether it is the
// upstream's own: valid and not an earlier upstream's. Call it for every
// upstream, in order.
func (c *Checker) UpstreamID(i int) bool {
	id := c.doc.Upstreams[i].ID
	if first := c.upstreams[id]; first.i != i {
		if c.checkID(id, ref{"upstreams", i}, upstreamIDCodes) {
			c.add(upstreamIDCodes.duplicate, ref{"upstreams", i}.path()+".id", quote(id)+" is also "+first.path())
		}
		return false
	}
	return c.checkID(id, ref{"upstreams", i}, upstreamIDCodes)
}

// Destination checks upstreams[i].destinations[j] (its ID among the
// upstream's, its address and health address) and reports whether it can
// be compiled. Call it for the destinations of one upstream in order.
func (c *Checker) Destination(i, j int) bool {
	if c.destUpstream != i {
		c.destUpstream = i
		c.dests = make(map[string]ref, len(c.doc.Upstreams[i].Destinations))
	}
	d := &c.doc.Upstreams[i].Destinations[j]
	e := ref{upPath(i, ".destinations"), j}
	ok := c.claim(d.ID, e, c.dests, destinationIDCodes)
	addr, reason := parseAddr(d.Address)
	if reason != "" {
		c.add(CodeUpstreamDestinationAddressInvalid, e.path()+".address", quote(d.Address)+": "+reason)
		ok = false
	}
	if d.Health != "" {
		ha, reason := parseAddr(d.Health)
		switch {
		case reason != "":
			c.add(CodeUpstreamDestinationHealthInvalid, e.path()+".health", quote(d.Health)+": "+reason)
			ok = false
		case ha.Scheme != addr.Scheme && addr.Scheme != "":
			c.add(CodeUpstreamDestinationHealthScheme, e.path()+".health",
				quote(d.Health)+": probes speak the destination's scheme, "+addr.Scheme+"; write the health address with it")
			ok = false
		}
	}
	return ok
}

// UpstreamValues checks the durations and TLS pins of upstreams[i].
func (c *Checker) UpstreamValues(i int) {
	u := &c.doc.Upstreams[i]
	at := func(field string) func() string { return func() string { return upPath(i, field) } }
	c.duration(at(".health.slowStart"), u.Health.SlowStart)
	c.duration(at(".http.connectTimeout"), u.HTTP.ConnectTimeout)
	c.duration(at(".http.idleTimeout"), u.HTTP.IdleTimeout)
	for k, p := range u.HTTP.TLS.Pins {
		if _, ok := ParsePin(p); !ok {
			c.add(CodeUpstreamHTTPTLSPinInvalid, upPath(i, index(".http.tls.pins", k)), quote(p)+" is not a SHA-256 digest (32 bytes) in base64 or hex")
		}
	}
	c.upstreamIdentity(i)
	h := &u.Health
	c.duration(at(".health.active.interval"), h.Active.Interval)
	c.duration(at(".health.active.timeout"), h.Active.Timeout)
	c.duration(at(".health.passive.window"), h.Passive.Window)
	c.duration(at(".health.passive.reactivationPeriod"), h.Passive.ReactivationPeriod)
	c.duration(at(".health.outlier.baseEjectionTime"), h.Outlier.BaseEjectionTime)
	c.duration(at(".health.outlier.maxEjectionTime"), h.Outlier.MaxEjectionTime)
	c.duration(at(".affinity.cookie.maxAge"), u.Affinity.Cookie.MaxAge)
}

// AccessList checks accessLists[i] (its ID and prefixes) and reports
// whether its ID is its own. AccessList, RuleSet, RateLimit and
// ForwardAuth claim IDs of one namespace: call them in the order of Check.
func (c *Checker) AccessList(i int) bool {
	l := &c.doc.AccessLists[i]
	e := ref{accessLists, i}
	own := c.claim(l.ID, e, c.policies, policyIDCodes)
	c.prefixes(e.path()+".allow", l.Allow, CodeAccessListPrefixInvalid)
	c.prefixes(e.path()+".deny", l.Deny, CodeAccessListPrefixInvalid)
	return own
}

// RuleSet checks ruleSets[i] (its ID, and which rules have a respond
// block) and reports whether its ID is its own.
func (c *Checker) RuleSet(i int) bool {
	rs := &c.doc.RuleSets[i]
	e := ref{"ruleSets", i}
	own := c.claim(rs.ID, e, c.policies, policyIDCodes)
	for j := range rs.Rules {
		ru := &rs.Rules[j]
		action, ok := gate.ParseRuleAction(ru.Action)
		if !ok {
			action = 0 // the owner reports the name; the default
		}
		switch {
		case action == gate.RuleRespond && ru.Respond == nil:
			c.add(CodeRuleSetRuleRespondMissing, e.path()+index(".rules", j)+".respond", "action respond needs a respond block")
		case action != gate.RuleRespond && ru.Respond != nil:
			c.add(CodeRuleSetRuleRespondUnexpected, e.path()+index(".rules", j)+".respond", "a respond block needs action respond")
		}
	}
	return own
}

// RateLimit checks rateLimits[i] (its ID, period and scope) and reports
// whether its ID is its own.
func (c *Checker) RateLimit(i int) bool {
	rl := &c.doc.RateLimits[i]
	e := ref{"rateLimits", i}
	own := c.claim(rl.ID, e, c.policies, policyIDCodes)
	c.duration(func() string { return e.path() + ".period" }, rl.Period)
	if rl.Scope == "" {
		c.add(CodeRateLimitScopeMissing, e.path()+".scope", "a rate limit needs a scope: "+strings.Join(gate.RateLimitScopeNames(), ", "))
	}
	return own
}

// ForwardAuth checks forwardAuths[i] (its ID and timeout) and reports
// whether its ID is its own.
func (c *Checker) ForwardAuth(i int) bool {
	fa := &c.doc.ForwardAuths[i]
	e := ref{"forwardAuths", i}
	own := c.claim(fa.ID, e, c.policies, policyIDCodes)
	c.duration(func() string { return e.path() + ".timeout" }, fa.Timeout)
	return own
}

// Global checks the global block: its prefixes and the ticket key period.
func (c *Checker) Global() {
	g := &c.doc.Global
	c.duration(func() string { return "global.tls.ticketKeyPeriod" }, g.TLS.TicketKeyPeriod)
	c.prefixes("global.trustedProxies", g.TrustedProxies, CodeGlobalTrustedProxyInvalid)
	c.prefixes("global.probeSources", g.ProbeSources, CodeGlobalProbeSourceInvalid)
}

// Host checks hosts[i] and its routes: which blocks go with its kind, its
// references, its durations, its routes' IDs, path allowances and
// upstreams.
func (c *Checker) Host(i int) {
	h := &c.doc.Hosts[i]
	at := func(field string) string { return hostPath(i, field) }
	kind, kindKnown := gate.ParseHostKind(h.Kind)
	if !kindKnown {
		kind = 0 // the owner reports the name; compiled as the default
	}
	kindKnown = kindKnown || h.Kind == ""
	if h.Redirect != nil {
		if kindKnown && kind != gate.HostRedirect {
			c.add(CodeHostRedirectUnexpected, at(".redirect"), "a redirect block on a "+kind.String()+" host")
		}
	} else if kind == gate.HostRedirect {
		c.add(CodeHostRedirectMissing, at(".redirect"), "a redirect host needs a redirect block")
	}
	if h.Fixed != nil {
		if kindKnown && kind != gate.HostFixed {
			c.add(CodeHostFixedUnexpected, at(".fixed"), "a fixed block on a "+kind.String()+" host")
		}
	} else if kind == gate.HostFixed {
		c.add(CodeHostFixedMissing, at(".fixed"), "a fixed host needs a fixed block")
	}
	switch {
	case kindKnown && kind == gate.HostProxy && len(h.Routes) == 0:
		c.add(CodeHostRoutesEmpty, at(".routes"), "a proxy host needs at least one route")
	case kindKnown && kind != gate.HostProxy && len(h.Routes) > 0:
		c.add(CodeHostRoutesUnexpected, at(".routes"), "a "+kind.String()+" host has no routes")
	}

	if h.AccessList != "" {
		if p, ok := c.policies[h.AccessList]; !ok || p.list != accessLists {
			c.add(CodeHostAccessListUnknown, at(".accessList"), "unknown access list "+quote(h.AccessList))
		}
	}
	c.references(h.Policies, CodeHostPolicyUnknown, func(k int) string { return at(index(".policies", k)) })
	if h.TLS != nil && h.Certificate == "" && c.doc.Global.TLS.DefaultCertificate == "" {
		// No handshake is ever made for the host: its policy could
		// neither be asked of clients nor re-checked against a
		// handshake of its own.
		c.add(CodeHostTLSUnused, at(".tls"), "a tls block on a host served over plain HTTP only (no certificate, and no global.tls.defaultCertificate)")
	}
	if hs := h.HSTS; hs != nil {
		c.duration(func() string { return at(".hsts.maxAge") }, hs.MaxAge)
		if hs.MaxAge == "" {
			c.add(CodeHostHSTSMaxAgeMissing, at(".hsts.maxAge"), "an hsts block needs a max-age")
		}
	}
	if kindKnown && kind != gate.HostProxy {
		for _, f := range [...]struct {
			field string
			set   bool
		}{
			{".headers.request", len(h.Headers.Request) > 0},
			{".compression", h.Compression.Enabled || h.Compression.MinimumSize != 0 || len(h.Compression.Encodings) > 0},
			{".keepUnderscoreHeaders", h.KeepUnderscoreHeaders},
		} {
			if f.set {
				c.add(CodeHostForwardingUnused, at(f.field), "a host that forwards nothing takes no "+f.field[1:])
			}
		}
	}
	if kind == gate.HostProxy {
		for j := range h.Routes {
			c.route(i, j)
		}
	}
}

// route checks hosts[i].routes[j].
func (c *Checker) route(i, j int) {
	h := &c.doc.Hosts[i]
	rt := &h.Routes[j]
	at := func(field string) string { return routePath(i, j, field) }
	if rt.ID != "" {
		if !validID(rt.ID) {
			c.add(CodeRouteIDInvalid, at(".id"), quote(rt.ID)+": "+idRule)
		} else {
			for k := range j {
				if h.Routes[k].ID == rt.ID {
					c.add(CodeRouteIDDuplicate, at(".id"), quote(rt.ID)+" is also routes["+strconv.Itoa(k)+"]")
					break
				}
			}
		}
	}
	var allow gate.PathAllow
	for k, n := range rt.AllowInPath {
		a, ok := gate.ParsePathAllow(n) // an unknown name is the gate's to report
		if ok && allow&a != 0 {
			c.add(CodeRouteAllowInPathDuplicate, at(index(".allowInPath", k)), quote(n)+" is listed twice")
		}
		allow |= a
	}
	c.references(rt.Policies, CodeRoutePolicyUnknown, func(k int) string { return at(index(".policies", k)) })
	if pt, _ := gate.ParsePathType(rt.PathType); rt.Rewrite.StripPrefix && (pt == gate.PathTemplate || pt == gate.PathRegex) {
		c.add(CodeRouteStripPrefixPathType, at(".rewrite.stripPrefix"), "stripPrefix takes the route's path off the front, and a "+pt.String()+" path is no prefix (rewrite.template fills a path from a template's values)")
	}
	c.routeAnswers(rt, at)
	switch {
	case rt.Redirect != nil || rt.Fixed != nil:
		// The route answers itself: routeAnswers checked it.
	case len(rt.Backends) > 0:
		if rt.Upstream != "" {
			c.add(CodeRouteBackendsConflict, at(".backends"), "a route names an upstream or backends, not both")
		}
	case rt.Upstream == "":
		c.add(CodeRouteUpstreamMissing, at(".upstream"), "a route needs an upstream, backends, a redirect or a fixed answer")
	case !c.known(c.upstreams, rt.Upstream):
		c.add(CodeRouteUpstreamUnknown, at(".upstream"), "unknown upstream "+quote(rt.Upstream))
	}
	c.routeBackends(rt, at)
}

// routeBackends checks a route's backends, split and mirror: the
// upstreams they name. Weights, keys and limits are the proxy's to check.
func (c *Checker) routeBackends(rt *Route, at func(string) string) {
	for k := range rt.Backends {
		b := &rt.Backends[k]
		p := func() string { return at(index(".backends", k) + ".upstream") }
		switch {
		case b.Upstream == "":
			c.add(CodeRouteBackendUpstreamMissing, p(), "a backend needs an upstream")
		case !c.known(c.upstreams, b.Upstream):
			c.add(CodeRouteBackendUpstreamUnknown, p(), "unknown upstream "+quote(b.Upstream))
		default:
			for l := range k {
				if rt.Backends[l].Upstream == b.Upstream {
					c.add(CodeRouteBackendUpstreamDuplicate, p(), quote(b.Upstream)+" is also backends["+strconv.Itoa(l)+"]")
					break
				}
			}
		}
	}
	sp := &rt.Split
	if len(rt.Backends) == 0 && (sp.Sticky != (Sticky{}) || len(sp.Force) > 0) {
		c.add(CodeRouteSplitUnexpected, at(".split"), "a split places requests on backends, and the route has none")
	} else {
		for k := range sp.Force {
			if f := &sp.Force[k]; !rt.hasBackend(f.Upstream) {
				c.add(CodeRouteSplitForceUpstreamUnknown, at(index(".split.force", k)+".upstream"), quote(f.Upstream)+" is not one of the route's backends")
			}
		}
	}
	m := rt.Mirror
	if m == nil {
		return
	}
	switch {
	case m.Upstream == "":
		c.add(CodeRouteMirrorUpstreamMissing, at(".mirror.upstream"), "a mirror needs an upstream")
	case !c.known(c.upstreams, m.Upstream):
		c.add(CodeRouteMirrorUpstreamUnknown, at(".mirror.upstream"), "unknown upstream "+quote(m.Upstream))
	case m.Upstream == rt.Upstream || rt.hasBackend(m.Upstream):
		c.add(CodeRouteMirrorSelf, at(".mirror.upstream"), quote(m.Upstream)+" is where the route sends its requests: each copy would go where the request goes")
	}
	c.duration(func() string { return at(".mirror.timeout") }, m.Timeout)
}

// hasBackend reports whether id is one of the route's backends.
func (rt *Route) hasBackend(id string) bool {
	for k := range rt.Backends {
		if rt.Backends[k].Upstream == id {
			return true
		}
	}
	return false
}

// references checks a list of policy IDs, recording code at path(k) for
// one that no policy has.
func (c *Checker) references(ids []string, code string, path func(k int) string) {
	for k, id := range ids {
		if !c.known(c.policies, id) {
			c.add(code, path(k), "unknown policy "+quote(id))
		}
	}
}

// duration checks a document duration at path.
func (c *Checker) duration(path func() string, d Duration) {
	if _, err := ParseDuration(d, 0); err != nil {
		c.add(CodeDocumentDurationInvalid, path(), strings.TrimPrefix(err.Error(), "config: "))
	}
}

// prefixes checks a list of addresses and prefixes, recording code at
// path[k] for each one that is not.
func (c *Checker) prefixes(path string, list []string, code string) {
	for k, s := range list {
		if _, err := ParsePrefix(s); err != nil {
			c.add(code, index(path, k), quote(s)+": "+err.Error())
		}
	}
}

// DurationOf returns the value of a duration the checks have seen: its
// value, or 0 (the owner's default) when it is not one, which the checks
// report.
func DurationOf(d Duration) time.Duration {
	v, _ := ParseDuration(d, 0)
	return v
}

const maxIDLen = 128

const idRule = "an ID is 1-128 of A-Z a-z 0-9 . _ -"

// validID reports whether s can be an ID of the document (an upstream's,
// a destination's, a policy's, a route's): 1-128 of [A-Za-z0-9._-].
func validID(s string) bool {
	if len(s) == 0 || len(s) > maxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// ref locates an entry of one of the document's lists.
type ref struct {
	list string
	i    int
}

func (e ref) path() string { return index(e.list, e.i) }

// idCodes are the codes of one kind of ID.
type idCodes struct{ missing, invalid, duplicate string }

var (
	upstreamIDCodes    = idCodes{CodeUpstreamIDMissing, CodeUpstreamIDInvalid, CodeUpstreamIDDuplicate}
	destinationIDCodes = idCodes{CodeUpstreamDestinationIDMissing, CodeUpstreamDestinationIDInvalid, CodeUpstreamDestinationIDDuplicate}
	policyIDCodes      = idCodes{CodePolicyIDMissing, CodePolicyIDInvalid, CodePolicyIDDuplicate}
)

// claim checks the ID of entry e: missing, malformed, or already owned by
// an earlier entry in seen. It records e as the owner of a new valid ID
// and reports whether the ID is e's own.
func (c *Checker) claim(id string, e ref, seen map[string]ref, codes idCodes) bool {
	if !c.checkID(id, e, codes) {
		return false
	}
	if prev := seen[id]; prev.list != "" && prev.i >= 0 {
		c.add(codes.duplicate, e.path()+".id", quote(id)+" is also "+prev.path())
		return false
	}
	seen[id] = e
	return true
}

// checkID reports whether id, entry e's, is a valid ID, and records the
// problem when it is not.
func (c *Checker) checkID(id string, e ref, codes idCodes) bool {
	switch {
	case id == "":
		c.add(codes.missing, e.path()+".id", "an ID is required")
		return false
	case !validID(id):
		c.add(codes.invalid, e.path()+".id", quote(id)+": "+idRule)
		return false
	}
	return true
}

// known reports whether ids has an entry of id.
func (c *Checker) known(ids map[string]ref, id string) bool {
	_, ok := ids[id]
	return ok
}

func index(list string, i int) string { return problem.Index(list, i) }

func quote(s string) string { return strconv.Quote(s) }

func hostPath(i int, rest string) string { return index("hosts", i) + rest }

func routePath(i, j int, rest string) string {
	return index("hosts", i) + index(".routes", j) + rest
}

func upPath(i int, rest string) string { return index("upstreams", i) + rest }

// routeAnswers checks what the document says of a route's own answers
// and rewrite filters: a route has one of upstream, redirect and fixed,
// and one that answers itself forwards nothing, so it takes no
// forwarding settings; a replaced prefix is a prefix route's, in the
// place of stripPrefix. The gate and the proxy check the fields.
func (c *Checker) routeAnswers(rt *Route, at func(string) string) {
	c.duration(func() string { return at(".timeouts.request") }, rt.Timeouts.Request)
	c.duration(func() string { return at(".timeouts.perTry") }, rt.Timeouts.PerTry)
	if rt.Redirect != nil && rt.Fixed != nil {
		c.add(CodeRouteAnswerConflict, at(".fixed"), "a route has one of upstream, redirect and fixed: this one has redirect and fixed")
	}
	if rt.Redirect != nil || rt.Fixed != nil {
		if rt.Upstream != "" {
			c.add(CodeRouteAnswerConflict, at(".upstream"), "a route has one of upstream, backends, redirect and fixed: a route that answers itself has no upstream")
		}
		if len(rt.Backends) > 0 {
			c.add(CodeRouteAnswerConflict, at(".backends"), "a route has one of upstream, backends, redirect and fixed: a route that answers itself has no backends")
		}
		for _, f := range [...]struct {
			name string
			set  bool
		}{
			{"rewrite", rt.Rewrite.rewrites()},
			{"retry", rt.Retry != (RouteRetry{})},
			{"timeouts", rt.Timeouts != (RouteTimeouts{})},
			{"hostHeader", rt.HostHeader != ""},
			{"hostName", rt.HostName != ""},
			{"mirror", rt.Mirror != nil},
		} {
			if f.set {
				c.add(CodeRouteForwardingUnused, at("."+f.name), "a route that answers itself forwards nothing: "+f.name+" is unused")
			}
		}
	}
	if rt.Rewrite.ReplacePrefix == "" {
		return
	}
	if rt.Rewrite.StripPrefix {
		c.add(CodeRouteReplacePrefixConflict, at(".rewrite.replacePrefix"), "replacePrefix takes the route's prefix off and puts its path in the place: it takes no stripPrefix")
	}
	if pt, _ := gate.ParsePathType(rt.PathType); pt != gate.PathPrefix {
		c.add(CodeRouteReplacePrefixPathType, at(".rewrite.replacePrefix"), "replacePrefix replaces the route's matched prefix, and a "+pt.String()+" path is no prefix (rewrite.path or rewrite.template replace the whole path)")
	}
}

// rewrites reports whether the rewrite has any field set.
func (rw *Rewrite) rewrites() bool {
	q := &rw.Query
	return rw.StripPrefix || rw.AddPrefix != "" || rw.RewriteLocation != nil || rw.Template != "" ||
		rw.ReplacePrefix != "" || rw.Path != "" || len(q.Set)+len(q.Add)+len(q.Remove) > 0
}
