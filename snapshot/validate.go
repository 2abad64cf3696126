package snapshot

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/gate"
	"golang.org/x/net/http/httpguts"
)

// ValidateOptions holds what the embedder registered beside the built-in
// policies. The zero value allows only built-in names.
type ValidateOptions struct {
	// LoadBalancing lists extra load-balancing policy names registered by
	// the embedder, beside the built-in ones: PowerOfTwoChoices,
	// LeastRequests, RoundRobin, Random, FirstAlphabetical, ZoneAware,
	// ConsistentHash.
	LoadBalancing []string
}

// Limits and defaults of the document, as documented on its fields.
const (
	// MaxDocumentSize is the largest document [Decode] reads.
	MaxDocumentSize = 64 << 20
	// MaxFixedBody is the largest body of a fixed answer.
	MaxFixedBody = 64 << 10

	maxIDLen = 128

	dfltConnectTimeout     = 10 * time.Second
	dfltIdleTimeout        = time.Hour
	dfltActiveInterval     = 15 * time.Second
	dfltActiveTimeout      = 10 * time.Second
	dfltActiveThreshold    = 2
	dfltPassiveWindow      = 60 * time.Second
	dfltPassiveMinRequests = 10
	dfltPassiveFailureRate = 0.3
	dfltReactivation       = 60 * time.Second
	dfltRedirectStatus     = 308
	dfltFixedStatus        = 200
	dfltDefaultStatus      = 404
	dfltContentType        = "text/plain; charset=utf-8"
	dfltAffinityKey        = ".Paduraksa.Affinity"
	minConnectTimeout      = 100 * time.Millisecond
	maxConnectTimeout      = 5 * time.Minute
)

// Validate returns every problem of a decoded document, each with a stable
// Code and a Path, in document order; nil means the document is valid. It
// never modifies doc and never panics. Cross references (a route's
// upstream, a host's access list and certificate) are checked by ID.
func Validate(doc *Document, opts ValidateOptions) []*ValidationError {
	return validate(doc, opts, nil)
}

// validate is Validate with the upstreams knownValid says are unchanged
// since a valid document left unchecked.
func validate(doc *Document, opts ValidateOptions, knownValid func(i int) bool) []*ValidationError {
	if doc == nil {
		return nil
	}
	c := docCheck{opts: opts, doc: doc, knownValid: knownValid}
	c.global()
	c.indexIDs()
	c.hosts()
	c.upstreams()
	c.accessLists()
	c.certificates()
	c.gate()
	return c.probs
}

// docCheck holds the state of one Validate call.
type docCheck struct {
	opts  ValidateOptions
	doc   *Document
	probs []*ValidationError

	upstreamIDs    map[string]int // first index of each upstream ID
	accessListIDs  map[string]struct{}
	certificateIDs map[string]struct{}

	// knownValid, when set, reports that upstreams[i] equals an upstream
	// of a document already found valid: its own fields need no second
	// look (its ID still takes part in the cross-checks).
	knownValid func(i int) bool
}

// add records a problem. Paths and messages are built by the callers only
// once a problem is found, so a valid document costs no string building.
func (c *docCheck) add(code, path, msg string) {
	c.probs = append(c.probs, &ValidationError{Code: code, Path: path, Msg: msg})
}

func itoa(i int) string { return strconv.Itoa(i) }

func index(list string, i int) string { return list + "[" + itoa(i) + "]" }

func hostPath(i int, rest string) string { return index("hosts", i) + rest }

func routePath(i, j int, rest string) string {
	return index("hosts", i) + index(".routes", j) + rest
}

func upPath(i int, rest string) string { return index("upstreams", i) + rest }

func destPath(i, j int, rest string) string {
	return index("upstreams", i) + index(".destinations", j) + rest
}

func quote(s string) string { return strconv.Quote(s) }

func (c *docCheck) global() {
	g := &c.doc.Global
	for i, p := range g.TrustedProxies {
		if _, reason := parseAddrPrefix(p); reason != "" {
			c.add(CodeGlobalTrustedProxyInvalid, index("global.trustedProxies", i), quote(p)+": "+reason)
		}
	}
	if g.Server != "" && !httpguts.ValidHeaderFieldValue(g.Server) {
		c.add(CodeGlobalServerInvalid, "global.server", "not a valid header value")
	}
	if a := g.DefaultAnswer; a != nil {
		if a.Status != 0 && (a.Status < 200 || a.Status > 599) {
			c.add(CodeGlobalDefaultAnswerStatusInvalid, "global.defaultAnswer.status", "status "+itoa(a.Status)+" is not 200-599")
		}
		if a.ContentType != "" && !httpguts.ValidHeaderFieldValue(a.ContentType) {
			c.add(CodeGlobalDefaultAnswerContentTypeInvalid, "global.defaultAnswer.contentType", "not a valid header value")
		}
		if len(a.Body) > MaxFixedBody {
			c.add(CodeGlobalDefaultAnswerBodyTooLarge, "global.defaultAnswer.body", itoa(len(a.Body))+" bytes; at most "+itoa(MaxFixedBody))
		}
	}
}

// indexIDs builds the ID sets that hosts and routes refer to. IDs that are
// duplicate or malformed still count as known: they are reported once, on
// their own entry, not again on every reference.
func (c *docCheck) indexIDs() {
	d := c.doc
	c.upstreamIDs = make(map[string]int, len(d.Upstreams))
	for i := range d.Upstreams {
		if _, dup := c.upstreamIDs[d.Upstreams[i].ID]; !dup {
			c.upstreamIDs[d.Upstreams[i].ID] = i
		}
	}
	if len(d.AccessLists) > 0 {
		c.accessListIDs = make(map[string]struct{}, len(d.AccessLists))
		for i := range d.AccessLists {
			c.accessListIDs[d.AccessLists[i].ID] = struct{}{}
		}
	}
	if len(d.Certificates) > 0 {
		c.certificateIDs = make(map[string]struct{}, len(d.Certificates))
		for i := range d.Certificates {
			c.certificateIDs[d.Certificates[i].ID] = struct{}{}
		}
	}
}

// nameRef locates a host name: host and name index.
type nameRef struct{ host, name int32 }

func (c *docCheck) hosts() {
	hosts := c.doc.Hosts
	total := 0
	for i := range hosts {
		total += len(hosts[i].Names)
	}
	// Exact and wildcard names share the map: "*.a.com" and "a.com" are
	// different keys, as they should be.
	names := make(map[string]nameRef, total)
	for i := range hosts {
		h := &hosts[i]
		if len(h.Names) == 0 {
			c.add(CodeHostNamesEmpty, hostPath(i, ".names"), "a host needs at least one name")
		}
		for j, n := range h.Names {
			canon, _, err := canonHostName(n)
			if err != nil {
				c.add(CodeHostNameInvalid, hostPath(i, index(".names", j)), quote(n)+": "+err.Error())
				continue
			}
			if prev, dup := names[canon]; dup {
				c.add(CodeHostNameDuplicate, hostPath(i, index(".names", j)),
					quote(n)+" is also hosts["+itoa(int(prev.host))+"].names["+itoa(int(prev.name))+"]")
				continue
			}
			names[canon] = nameRef{int32(i), int32(j)}
		}
		c.host(i, h)
	}
	c.redirectLoops(names)
}

// redirectLoops refuses redirect hosts whose target comes back to them,
// directly or through other redirect hosts: every request would loop.
// Targets are looked up as the gate looks up a Host header: exact name,
// then wildcard parents, most specific first.
func (c *docCheck) redirectLoops(names map[string]nameRef) {
	hosts := c.doc.Hosts
	target := func(i int) int {
		h := &hosts[i]
		if h.Kind != KindRedirect || h.Redirect == nil || checkRedirectTo(h.Redirect.To, h.Redirect.DropPath) != "" {
			return -1
		}
		u, err := url.Parse(h.Redirect.To)
		if err != nil {
			return -1
		}
		name, _, err := canonHostName(u.Hostname())
		if err != nil {
			return -1
		}
		if ref, ok := names[name]; ok {
			return int(ref.host)
		}
		for k := strings.IndexByte(name, '.'); k >= 0; {
			if ref, ok := names["*."+name[k+1:]]; ok {
				return int(ref.host)
			}
			next := strings.IndexByte(name[k+1:], '.')
			if next < 0 {
				break
			}
			k += 1 + next
		}
		return -1
	}
	for i := range hosts {
		at := i
		for steps := 0; steps < len(hosts); steps++ {
			if at = target(at); at < 0 {
				break
			}
			if at == i {
				c.add(CodeHostRedirectToLoop, hostPath(i, ".redirect.to"), quote(hosts[i].Redirect.To)+" leads back to this host: every request would be redirected forever")
				break
			}
		}
	}
}

func (c *docCheck) host(i int, h *Host) {
	kind := h.Kind
	switch kind {
	case "":
		kind = KindProxy
	case KindProxy, KindRedirect, KindFixed:
	default:
		c.add(CodeHostKindInvalid, hostPath(i, ".kind"), quote(h.Kind)+" is not proxy, redirect or fixed")
		kind = ""
	}

	if h.Redirect != nil {
		if kind != KindRedirect && kind != "" {
			c.add(CodeHostRedirectUnexpected, hostPath(i, ".redirect"), "a redirect block on a "+kind+" host")
		}
		c.redirect(i, h.Redirect)
	} else if kind == KindRedirect {
		c.add(CodeHostRedirectMissing, hostPath(i, ".redirect"), "a redirect host needs a redirect block")
	}

	if h.Fixed != nil {
		if kind != KindFixed && kind != "" {
			c.add(CodeHostFixedUnexpected, hostPath(i, ".fixed"), "a fixed block on a "+kind+" host")
		}
		c.fixed(i, h.Fixed)
	} else if kind == KindFixed {
		c.add(CodeHostFixedMissing, hostPath(i, ".fixed"), "a fixed host needs a fixed block")
	}

	switch {
	case kind == KindProxy && len(h.Routes) == 0:
		c.add(CodeHostRoutesEmpty, hostPath(i, ".routes"), "a proxy host needs at least one route")
	case (kind == KindRedirect || kind == KindFixed) && len(h.Routes) > 0:
		c.add(CodeHostRoutesUnexpected, hostPath(i, ".routes"), "a "+kind+" host has no routes")
	default:
		c.routes(i, h.Routes)
	}
	c.hostForwarding(i, h)

	if h.AccessList != "" {
		if _, ok := c.accessListIDs[h.AccessList]; !ok {
			c.add(CodeHostAccessListUnknown, hostPath(i, ".accessList"), "unknown access list "+quote(h.AccessList))
		}
	}
	if h.Certificate != "" {
		if _, ok := c.certificateIDs[h.Certificate]; !ok {
			c.add(CodeHostCertificateUnknown, hostPath(i, ".certificate"), "unknown certificate "+quote(h.Certificate))
		}
	}
	if h.Server != "" && !httpguts.ValidHeaderFieldValue(h.Server) {
		c.add(CodeHostServerInvalid, hostPath(i, ".server"), "not a valid header value")
	}
}

func (c *docCheck) redirect(i int, r *Redirect) {
	if reason := checkRedirectTo(r.To, r.DropPath); reason != "" {
		c.add(CodeHostRedirectToInvalid, hostPath(i, ".redirect.to"), quote(r.To)+": "+reason)
	}
	switch r.Status {
	case 0, 301, 302, 303, 307, 308:
	default:
		c.add(CodeHostRedirectStatusInvalid, hostPath(i, ".redirect.status"), "status "+itoa(r.Status)+" is not 301, 302, 303, 307 or 308")
	}
}

// checkRedirectTo returns why to is not a usable redirect target, or "".
func checkRedirectTo(to string, dropPath bool) string {
	if to == "" {
		return "a redirect needs a target URL"
	}
	if !httpguts.ValidHeaderFieldValue(to) || strings.ContainsAny(to, " \t") {
		return "not a valid Location header value"
	}
	u, err := url.Parse(to)
	if err != nil {
		return "not a URL"
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "not an absolute http:// or https:// URL"
	case u.Opaque != "" || u.Host == "":
		return "no host"
	case u.User != nil:
		return "user info is not allowed"
	case strings.IndexByte(to, '#') >= 0:
		return "a fragment is not allowed"
	case !dropPath && (u.RawQuery != "" || u.ForceQuery):
		return "a query is only allowed with dropPath (the request's path and query are appended)"
	}
	if host := u.Hostname(); host == "" {
		return "no host"
	} else if _, wildcard, err := canonHostName(host); err != nil || wildcard {
		return "invalid host " + quote(host)
	}
	if p := u.Port(); p != "" && !validPort(p) {
		return "invalid port " + quote(p)
	}
	return ""
}

func (c *docCheck) fixed(i int, f *FixedAnswer) {
	if f.Status != 0 && (f.Status < 200 || f.Status > 599) {
		c.add(CodeHostFixedStatusInvalid, hostPath(i, ".fixed.status"), "status "+itoa(f.Status)+" is not 200-599")
	}
	if f.ContentType != "" && !httpguts.ValidHeaderFieldValue(f.ContentType) {
		c.add(CodeHostFixedContentTypeInvalid, hostPath(i, ".fixed.contentType"), "not a valid header value")
	}
	if len(f.Body) > MaxFixedBody {
		c.add(CodeHostFixedBodyTooLarge, hostPath(i, ".fixed.body"), itoa(len(f.Body))+" bytes; at most "+itoa(MaxFixedBody))
	}
}

// smallList is the length up to which duplicates are found by comparing
// pairs rather than with a map.
const smallList = 16

func (c *docCheck) routes(i int, routes []Route) {
	ids, paths := idMap(len(routes)), idMap(len(routes))
	for j := range routes {
		r := &routes[j]
		if r.ID != "" {
			if !validID(r.ID) {
				c.add(CodeRouteIDInvalid, routePath(i, j, ".id"), quote(r.ID)+": "+idRule)
			} else if prev := seenBefore(ids, r.ID, j, func(k int) (string, bool) { return routes[k].ID, true }); prev >= 0 {
				c.add(CodeRouteIDDuplicate, routePath(i, j, ".id"), quote(r.ID)+" is also routes["+itoa(prev)+"]")
			}
		}
		if reason := checkRoutePath(r.Path); reason != "" {
			c.add(CodeRoutePathInvalid, routePath(i, j, ".path"), quote(r.Path)+": "+reason)
		} else if prev := seenBefore(paths, strings.ToLower(routeKey(r.Path)), j, func(k int) (string, bool) {
			return strings.ToLower(routeKey(routes[k].Path)), checkRoutePath(routes[k].Path) == ""
		}); prev >= 0 {
			c.add(CodeRoutePathDuplicate, routePath(i, j, ".path"), quote(r.Path)+" is the same prefix as routes["+itoa(prev)+"] (prefixes match in any case)")
		}
		for k, n := range r.AllowInPath {
			if _, ok := gate.ParsePathAllow(n); !ok || slices.Contains(r.AllowInPath[:k], n) {
				c.add(CodeRouteAllowInPathInvalid, routePath(i, j, index(".allowInPath", k)), quote(n)+" is not one of "+strings.Join(gate.PathAllowNames(), ", ")+", or is listed twice")
			}
		}
		if r.Upstream == "" {
			c.add(CodeRouteUpstreamMissing, routePath(i, j, ".upstream"), "a route needs an upstream")
		} else if _, ok := c.upstreamIDs[r.Upstream]; !ok {
			c.add(CodeRouteUpstreamUnknown, routePath(i, j, ".upstream"), "unknown upstream "+quote(r.Upstream))
		}
		c.routeForwarding(i, j, r)
	}
}

// seenBefore returns the index of an earlier entry (before j) with the same
// key, or -1, and records key. With a nil map it compares key with the keys
// of the earlier entries given by keyAt (whose ok reports whether the entry
// takes part).
func seenBefore(m map[string]int, key string, j int, keyAt func(k int) (string, bool)) int {
	if m != nil {
		if prev, ok := m[key]; ok {
			return prev
		}
		m[key] = j
		return -1
	}
	for k := 0; k < j; k++ {
		if kk, ok := keyAt(k); ok && kk == key {
			return k
		}
	}
	return -1
}

// routeKey returns the prefix a valid route path matches: "" for "/" and
// the empty path, and no trailing slash ("/api/" is "/api").
func routeKey(p string) string {
	return strings.TrimSuffix(p, "/")
}

// checkRoutePath returns why p is not a route path prefix, or "": the
// gate's rule ([gate.CheckPrefix]).
func checkRoutePath(p string) string {
	if err := gate.CheckPrefix(p); err != nil {
		return strings.TrimPrefix(err.Error(), "gate: ")
	}
	return ""
}

const idRule = "an ID is 1-128 of A-Z a-z 0-9 . _ -"

// validID reports whether s is 1-128 of [A-Za-z0-9._-].
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

func (c *docCheck) upstreams() {
	ups := c.doc.Upstreams
	for i := range ups {
		u := &ups[i]
		switch {
		case u.ID == "":
			c.add(CodeUpstreamIDMissing, upPath(i, ".id"), "an upstream needs an ID")
		case !validID(u.ID):
			c.add(CodeUpstreamIDInvalid, upPath(i, ".id"), quote(u.ID)+": "+idRule)
		default:
			if first := c.upstreamIDs[u.ID]; first != i {
				c.add(CodeUpstreamIDDuplicate, upPath(i, ".id"), quote(u.ID)+" is also upstreams["+itoa(first)+"]")
			}
		}
		if c.knownValid != nil && c.knownValid(i) {
			continue
		}
		c.destinations(i, u.Destinations)
		if !c.knownLoadBalancing(u.LoadBalancing) {
			c.add(CodeUpstreamLoadBalancingUnknown, upPath(i, ".loadBalancing"), "unknown load-balancing policy "+quote(u.LoadBalancing))
		}
		c.upstreamHTTP(i, &u.HTTP)
		c.health(i, &u.Health)
		c.affinity(i, &u.Affinity)
	}
}

func (c *docCheck) destinations(i int, ds []Destination) {
	ids := idMap(len(ds))
	for j := range ds {
		d := &ds[j]
		switch {
		case d.ID == "":
			c.add(CodeUpstreamDestinationIDMissing, destPath(i, j, ".id"), "a destination needs an ID")
		case !validID(d.ID):
			c.add(CodeUpstreamDestinationIDInvalid, destPath(i, j, ".id"), quote(d.ID)+": "+idRule)
		default:
			if prev := seenBefore(ids, d.ID, j, func(k int) (string, bool) { return ds[k].ID, true }); prev >= 0 {
				c.add(CodeUpstreamDestinationIDDuplicate, destPath(i, j, ".id"), quote(d.ID)+" is also destinations["+itoa(prev)+"]")
			}
		}
		if _, reason := parseAddr(d.Address); reason != "" {
			c.add(CodeUpstreamDestinationAddressInvalid, destPath(i, j, ".address"), quote(d.Address)+": "+reason)
		}
		if d.Health != "" {
			if _, reason := parseAddr(d.Health); reason != "" {
				c.add(CodeUpstreamDestinationHealthInvalid, destPath(i, j, ".health"), quote(d.Health)+": "+reason)
			}
		}
	}
}

func (c *docCheck) knownLoadBalancing(name string) bool {
	switch name {
	case "", "PowerOfTwoChoices", "LeastRequests", "RoundRobin", "Random", "FirstAlphabetical", "ZoneAware", "ConsistentHash":
		return true
	}
	return slices.Contains(c.opts.LoadBalancing, name)
}

// durationIn checks an optional duration of upstream i against [lo, hi]
// (hi < 0: no upper bound) and records code at the field's path if it is
// set and out of range.
func (c *docCheck) durationIn(d Duration, lo, hi time.Duration, code string, i int, field, rule string) {
	if d == "" {
		return
	}
	v, err := time.ParseDuration(string(d))
	if err != nil || v < lo || (hi >= 0 && v > hi) {
		c.add(code, upPath(i, field), quote(string(d))+": "+rule)
	}
}

const noMax = -1

func (c *docCheck) upstreamHTTP(i int, h *UpstreamHTTP) {
	switch h.Version {
	case "", "1.1", "2":
	default:
		c.add(CodeUpstreamHTTPVersionInvalid, upPath(i, ".http.version"), quote(h.Version)+" is not \"1.1\" or \"2\"")
	}
	switch h.VersionPolicy {
	case "", "orLower", "exact":
	default:
		c.add(CodeUpstreamHTTPVersionPolicyInvalid, upPath(i, ".http.versionPolicy"), quote(h.VersionPolicy)+" is not orLower or exact")
	}
	c.durationIn(h.ConnectTimeout, minConnectTimeout, maxConnectTimeout, CodeUpstreamHTTPConnectTimeoutInvalid,
		i, ".http.connectTimeout", "must be a duration between 100ms and 5m")
	c.durationIn(h.IdleTimeout, 0, noMax, CodeUpstreamHTTPIdleTimeoutInvalid,
		i, ".http.idleTimeout", "must be a duration >= 0 (\"0s\" means never)")

	t := &h.TLS
	switch t.Trust {
	case "", "system", "any":
		if len(t.Pins) > 0 {
			c.add(CodeUpstreamHTTPTLSPinsUnexpected, upPath(i, ".http.tls.pins"), "pins are only used with trust \"pinned\"")
		}
	case "pinned":
		if len(t.Pins) == 0 {
			c.add(CodeUpstreamHTTPTLSPinsMissing, upPath(i, ".http.tls.pins"), "trust \"pinned\" needs at least one pin")
		}
	default:
		c.add(CodeUpstreamHTTPTLSTrustInvalid, upPath(i, ".http.tls.trust"), quote(t.Trust)+" is not system, pinned or any")
	}
	for k, p := range t.Pins {
		if _, ok := decodeSHA256Pin(p); !ok {
			c.add(CodeUpstreamHTTPTLSPinInvalid, upPath(i, index(".http.tls.pins", k)), quote(p)+" is not a SHA-256 digest (32 bytes) in base64 or hex")
		}
	}
	if t.ServerName != "" {
		if _, wildcard, err := canonHostName(t.ServerName); err != nil || wildcard {
			c.add(CodeUpstreamHTTPTLSServerNameInvalid, upPath(i, ".http.tls.serverName"), quote(t.ServerName)+" is not a host name")
		}
	}
}

// decodeSHA256Pin decodes a pin in hex or base64 (standard or URL alphabet,
// padded or not) into its 32 bytes. Line breaks are refused: package
// base64 would skip them.
func decodeSHA256Pin(p string) ([32]byte, bool) {
	var out [32]byte
	switch len(p) {
	case 64:
		if n, err := hex.Decode(out[:], []byte(p)); err == nil && n == 32 {
			return out, true
		}
	case 43, 44:
		if strings.ContainsAny(p, "\r\n") {
			break
		}
		for _, enc := range [...]*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			var buf [33]byte
			if n, err := enc.Decode(buf[:], []byte(p)); err == nil && n == 32 {
				copy(out[:], buf[:32])
				return out, true
			}
		}
	}
	return out, false
}

func (c *docCheck) health(i int, h *HealthCheck) {
	a := &h.Active
	c.durationIn(a.Interval, 1, noMax, CodeUpstreamHealthActiveIntervalInvalid,
		i, ".health.active.interval", "must be a duration > 0")
	c.durationIn(a.Timeout, 1, noMax, CodeUpstreamHealthActiveTimeoutInvalid,
		i, ".health.active.timeout", "must be a duration > 0")
	if a.Path != "" {
		if reason := checkProbePath(a.Path); reason != "" {
			c.add(CodeUpstreamHealthActivePathInvalid, upPath(i, ".health.active.path"), quote(a.Path)+": "+reason)
		}
	}
	if a.Query != "" && (strings.IndexByte(a.Query, '#') >= 0 || hasCtlOrSpace(a.Query)) {
		c.add(CodeUpstreamHealthActiveQueryInvalid, upPath(i, ".health.active.query"), quote(a.Query)+": \"#\", control characters and spaces are not allowed")
	}
	switch a.Policy {
	case "", "ConsecutiveFailures":
	default:
		c.add(CodeUpstreamHealthActivePolicyUnknown, upPath(i, ".health.active.policy"), "unknown active health policy "+quote(a.Policy))
	}
	if a.Threshold < 0 {
		c.add(CodeUpstreamHealthActiveThresholdInvalid, upPath(i, ".health.active.threshold"), "must not be negative")
	}

	p := &h.Passive
	switch p.Policy {
	case "", "TransportFailureRate", "TransportFailureRateWith5xx":
	default:
		c.add(CodeUpstreamHealthPassivePolicyUnknown, upPath(i, ".health.passive.policy"), "unknown passive health policy "+quote(p.Policy))
	}
	c.durationIn(p.Window, 1, noMax, CodeUpstreamHealthPassiveWindowInvalid,
		i, ".health.passive.window", "must be a duration > 0")
	if p.MinRequests < 0 {
		c.add(CodeUpstreamHealthPassiveMinRequestsInvalid, upPath(i, ".health.passive.minRequests"), "must not be negative")
	}
	if !(p.FailureRate >= 0 && p.FailureRate < 1) {
		c.add(CodeUpstreamHealthPassiveFailureRateInvalid, upPath(i, ".health.passive.failureRate"),
			strconv.FormatFloat(p.FailureRate, 'g', -1, 64)+" is not in (0, 1)")
	}
	c.durationIn(p.ReactivationPeriod, 1, noMax, CodeUpstreamHealthPassiveReactivationInvalid,
		i, ".health.passive.reactivationPeriod", "must be a duration > 0")

	switch h.Availability {
	case "", "HealthyOrPanic", "HealthyAndUnknown":
	default:
		c.add(CodeUpstreamHealthAvailabilityUnknown, upPath(i, ".health.availability"), "unknown availability policy "+quote(h.Availability))
	}
	if h.ProbeFirst && !a.Enabled {
		c.add(CodeUpstreamHealthProbeFirstNeedsActive, upPath(i, ".health.probeFirst"), "probeFirst needs active health enabled")
	}
	c.durationIn(h.SlowStart, 0, noMax, CodeUpstreamHealthSlowStartInvalid,
		i, ".health.slowStart", "must be a duration >= 0")
}

// checkProbePath returns why p is not a probe path, or "".
func checkProbePath(p string) string {
	switch {
	case p[0] != '/':
		return "must start with /"
	case strings.IndexByte(p, '?') >= 0:
		return "a query goes in the query field"
	case strings.IndexByte(p, '#') >= 0:
		return "a fragment is not allowed"
	case hasCtlOrSpace(p):
		return "control characters and spaces are not allowed"
	}
	return ""
}

func hasCtlOrSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

func (c *docCheck) affinity(i int, a *Affinity) {
	switch a.Mode {
	case "", "HashCookie", "ArrCookie", "Header":
	default:
		c.add(CodeUpstreamAffinityModeUnknown, upPath(i, ".affinity.mode"), "unknown affinity mode "+quote(a.Mode))
	}
	switch a.FailurePolicy {
	case "", "Redistribute", "Return503":
	default:
		c.add(CodeUpstreamAffinityFailurePolicyUnknown, upPath(i, ".affinity.failurePolicy"), "unknown affinity failure policy "+quote(a.FailurePolicy))
	}
	if a.Key != "" && !httpguts.ValidHeaderFieldName(a.Key) {
		c.add(CodeUpstreamAffinityKeyInvalid, upPath(i, ".affinity.key"), quote(a.Key)+" is not a cookie or header name (an HTTP token)")
	}
	ck := &a.Cookie
	if ck.Path != "" && !validCookiePath(ck.Path) {
		c.add(CodeUpstreamAffinityCookiePathInvalid, upPath(i, ".affinity.cookie.path"), quote(ck.Path)+": must start with / and hold no ;, control characters or non-ASCII")
	}
	if ck.Domain != "" {
		d := strings.TrimPrefix(ck.Domain, ".")
		if _, wildcard, err := canonHostName(d); err != nil || wildcard || d != strings.TrimSpace(d) {
			c.add(CodeUpstreamAffinityCookieDomainInvalid, upPath(i, ".affinity.cookie.domain"), quote(ck.Domain)+" is not a host name")
		}
	}
	switch ck.Secure {
	case "", "SameAsRequest", "Always", "Never":
	default:
		c.add(CodeUpstreamAffinityCookieSecureUnknown, upPath(i, ".affinity.cookie.secure"), quote(ck.Secure)+" is not SameAsRequest, Always or Never")
	}
	switch ck.SameSite {
	case "", "Lax", "Strict", "Unspecified":
	case "None":
		// Browsers drop a SameSite=None cookie that is not Secure; with
		// SameAsRequest that would happen on every plain-HTTP request.
		if ck.Secure != "Always" {
			c.add(CodeUpstreamAffinityCookieSameSiteNeedsSecure, upPath(i, ".affinity.cookie.sameSite"), "sameSite None needs secure \"Always\"")
		}
	default:
		c.add(CodeUpstreamAffinityCookieSameSiteUnknown, upPath(i, ".affinity.cookie.sameSite"), quote(ck.SameSite)+" is not Lax, Strict, None or Unspecified")
	}
	c.durationIn(ck.MaxAge, 1, noMax, CodeUpstreamAffinityCookieMaxAgeInvalid,
		i, ".affinity.cookie.maxAge", "must be a duration > 0 (leave it out for a session cookie)")
}

// validCookiePath reports whether p can be a cookie's Path attribute.
func validCookiePath(p string) bool {
	if p[0] != '/' {
		return false
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < ' ' || c >= 0x7f || c == ';' {
			return false
		}
	}
	return true
}

func (c *docCheck) accessLists() {
	lists := c.doc.AccessLists
	ids := idMap(len(lists))
	for i := range lists {
		l := &lists[i]
		c.listID(l.ID, i, "accessLists", CodeAccessListIDMissing, CodeAccessListIDInvalid, CodeAccessListIDDuplicate,
			ids, func(k int) (string, bool) { return lists[k].ID, true })
		for k, p := range l.Allow {
			if _, reason := parseAddrPrefix(p); reason != "" {
				c.add(CodeAccessListPrefixInvalid, index("accessLists", i)+index(".allow", k), quote(p)+": "+reason)
			}
		}
		for k, p := range l.Deny {
			if _, reason := parseAddrPrefix(p); reason != "" {
				c.add(CodeAccessListPrefixInvalid, index("accessLists", i)+index(".deny", k), quote(p)+": "+reason)
			}
		}
	}
}

func (c *docCheck) certificates() {
	certs := c.doc.Certificates
	ids := idMap(len(certs))
	for i := range certs {
		ct := &certs[i]
		c.listID(ct.ID, i, "certificates", CodeCertificateIDMissing, CodeCertificateIDInvalid, CodeCertificateIDDuplicate,
			ids, func(k int) (string, bool) { return certs[k].ID, true })
		if ct.CertFile == "" {
			c.add(CodeCertificateFileMissing, index("certificates", i)+".certFile", "a certificate needs certFile and keyFile")
		}
		if ct.KeyFile == "" {
			c.add(CodeCertificateFileMissing, index("certificates", i)+".keyFile", "a certificate needs certFile and keyFile")
		}
	}
}

// listID checks the ID of entry i of a list of access lists or
// certificates; ids (nil for short lists) finds duplicates in long ones.
func (c *docCheck) listID(id string, i int, list, missing, invalid, duplicate string, ids map[string]int, idAt func(k int) (string, bool)) {
	switch {
	case id == "":
		c.add(missing, index(list, i)+".id", "an ID is required")
	case !validID(id):
		c.add(invalid, index(list, i)+".id", quote(id)+": "+idRule)
	default:
		if prev := seenBefore(ids, id, i, idAt); prev >= 0 {
			c.add(duplicate, index(list, i)+".id", quote(id)+" is also "+index(list, prev))
		}
	}
}

// idMap returns a map for seenBefore when a list is too long to compare
// pairs, and nil otherwise.
func idMap(n int) map[string]int {
	if n > smallList {
		return make(map[string]int, n)
	}
	return nil
}
