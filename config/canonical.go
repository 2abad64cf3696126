package config

import (
	"encoding/base64"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/hostname"
	"github.com/paduraksa/paduraksa/internal/strictdecode"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// Canonical returns the canonical JSON of a document: two documents that
// mean the same config serialise to the same bytes, so a publish of an
// unchanged config can be detected by comparing them.
//
// Keys come in the order of the Go fields, map keys sorted. Values equal to
// their default are left out (kind "proxy", route path "/", versionPolicy
// "orLower", loadBalancing "PowerOfTwoChoices", redirect status 308,
// durations equal to their default or 0 where 0 means the default, ...),
// and so are empty lists, maps and objects, except the redirect, fixed,
// defaultAnswer and mirror blocks, whose presence means something. Every default is
// the owning package's exported one, and a default that depends on other
// settings (a health threshold the upstream's metadata sets, a
// reactivation period that is the window) is the one the owner's
// normalizer resolves ([health.Config.Resolve]). Valid values are written
// in canonical form: host names as the library's host-name rule spells
// them (lowercase, punycode, IP literals canonical), durations in their
// shortest [time.Duration.String] form, addresses as "scheme://host:port",
// prefixes as netip writes them (an address alone for a full-length
// prefix), route prefixes without a trailing slash (an exact root path
// as the default), TLS pins in padded
// standard base64. Invalid values are written as they are, so Canonical
// works on any document; lists keep their order.
//
// Canonical does not modify doc. It fails only for a number JSON cannot
// hold (NaN or an infinity).
func Canonical(doc *Document) ([]byte, error) {
	f, err := CanonicalForm(doc)
	return f.bytes, err
}

// span is a byte range of a canonical form.
type span struct{ start, end int }

// Form is a document's canonical form with the byte ranges of its parts:
// the global block, each host and upstream, and the policy blocks. A
// compiler compares them with an earlier document's to reuse what an
// unchanged part compiled to. The zero Form is empty; a Form is not
// modified once made.
type Form struct {
	bytes     []byte
	global    span
	hosts     []span
	upstreams []span
	// policies covers everything after the upstreams: access lists,
	// certificates and the gate's policy blocks, which hosts name by ID.
	policies span
	// hostIn and upIn hold, for a form of CanonicalFormSince, a copy of
	// each host and upstream its bytes are the encoding of.
	hostIn []*Host
	upIn   []*Upstream
}

// Bytes returns the canonical form, [Canonical]'s bytes. They must not be
// modified.
func (f Form) Bytes() []byte { return f.bytes }

// Global returns the canonical bytes of the global block's fields.
func (f Form) Global() []byte { return f.of(f.global) }

// Hosts returns the number of hosts.
func (f Form) Hosts() int { return len(f.hosts) }

// Host returns the canonical bytes of hosts[i]'s fields.
func (f Form) Host(i int) []byte { return f.of(f.hosts[i]) }

// Upstream returns the canonical bytes of upstreams[i]'s fields.
func (f Form) Upstream(i int) []byte { return f.of(f.upstreams[i]) }

// Policies returns the canonical bytes of everything after the upstreams:
// access lists, certificates, rule sets, rate limits and forward auths.
func (f Form) Policies() []byte { return f.of(f.policies) }

func (f Form) of(s span) []byte { return f.bytes[s.start:s.end] }

// CanonicalForm returns the canonical form of a document with the byte
// ranges of its parts; see [Canonical].
func CanonicalForm(doc *Document) (Form, error) {
	return CanonicalFormOver(Form{}, doc)
}

// CanonicalFormOver is [CanonicalForm] written over the memory of
// scratch, a form an earlier call returned that nothing uses any more
// (the zero Form is none): the bytes are the same, and a caller that
// compares most documents with one it keeps (the unchanged check of a
// publish) allocates nothing for those it does not keep. The form it
// returns is valid until the next call given it; [Form.Clone] keeps it.
func CanonicalFormOver(scratch Form, doc *Document) (Form, error) {
	return canonicalForm(scratch, Form{}, false, doc)
}

// canonicalForm is [CanonicalFormOver], and since base [CanonicalFormSince].
func canonicalForm(scratch, base Form, since bool, doc *Document) (Form, error) {
	if doc == nil {
		return Form{}, errors.New("config: canonical form of a nil document")
	}
	b := scratch.bytes[:0]
	if b == nil {
		b = make([]byte, 0, 256+80*len(doc.Hosts)+160*len(doc.Upstreams))
	}
	e := canonEnc{b: b, base: base, since: since}
	e.spans.hosts = resize(scratch.hosts, len(doc.Hosts))
	e.spans.upstreams = resize(scratch.upstreams, len(doc.Upstreams))
	if since {
		e.spans.hostIn = resize(scratch.hostIn, len(doc.Hosts))
		e.spans.upIn = resize(scratch.upIn, len(doc.Upstreams))
	}
	e.document(doc)
	if e.err != nil {
		return Form{}, e.err
	}
	e.spans.bytes = e.b
	return e.spans, nil
}

// resize returns s with length n, reusing its memory when it holds n.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Clone returns a copy of f that shares no memory with it but the
// host and upstream copies of [CanonicalFormSince], which no form
// modifies: one allocation for the bytes, one for the ranges, two for
// those copies.
func (f Form) Clone() Form {
	c := f
	c.bytes = slices.Clone(f.bytes)
	spans := make([]span, len(f.hosts)+len(f.upstreams))
	c.hosts = spans[:copy(spans, f.hosts):len(f.hosts)]
	c.upstreams = spans[len(f.hosts):]
	copy(c.upstreams, f.upstreams)
	c.hostIn, c.upIn = slices.Clone(f.hostIn), slices.Clone(f.upIn)
	return c
}

// canonEnc appends canonical JSON to b. first reports whether the object
// being written has no field yet.
type canonEnc struct {
	b     []byte
	first bool
	err   error
	spans Form
	base  Form // CanonicalFormSince's, with since
	since bool
}

// objMark remembers where an object started, to drop it if it stays empty.
type objMark struct {
	pos   int
	first bool
}

func (e *canonEnc) key(k string) {
	if !e.first {
		e.b = append(e.b, ',')
	}
	e.first = false
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

// open starts the object field k.
func (e *canonEnc) open(k string) objMark {
	m := objMark{len(e.b), e.first}
	e.key(k)
	e.b = append(e.b, '{')
	e.first = true
	return m
}

// close ends an object started by open; an empty one is removed with its
// key unless keep.
func (e *canonEnc) close(m objMark, keep bool) {
	if e.first && !keep {
		e.b = e.b[:m.pos]
		e.first = m.first
		return
	}
	e.b = append(e.b, '}')
	e.first = false
}

// openArray starts the array field k; elements call elem before each value.
func (e *canonEnc) openArray(k string) {
	e.key(k)
	e.b = append(e.b, '[')
}

func (e *canonEnc) elem(i int) {
	if i > 0 {
		e.b = append(e.b, ',')
	}
}

func (e *canonEnc) closeArray() { e.b = append(e.b, ']') }

// beginElemObj and endElemObj write an object as an array element; it is
// kept even when empty, as its position matters.
func (e *canonEnc) beginElemObj(i int) {
	e.elem(i)
	e.b = append(e.b, '{')
	e.first = true
}

func (e *canonEnc) endElemObj() {
	e.b = append(e.b, '}')
	e.first = false
}

// objects writes, when n > 0, an array of n objects under k, each object's
// fields by write(i); with spans, it records where each object's fields
// start and end.
func (e *canonEnc) objects(k string, n int, spans []span, write func(i int)) {
	if n == 0 {
		return
	}
	e.openArray(k)
	for i := range n {
		e.beginElemObj(i)
		start := len(e.b)
		write(i)
		if spans != nil {
			spans[i] = span{start, len(e.b)}
		}
		e.endElemObj()
	}
	e.closeArray()
}

func (e *canonEnc) str(k, v string) {
	if v != "" {
		e.key(k)
		e.b = strictdecode.AppendString(e.b, v)
	}
}

func (e *canonEnc) strDefault(k, v, def string) {
	if v != def {
		e.str(k, v)
	}
}

func (e *canonEnc) boolean(k string, v bool) {
	if v {
		e.key(k)
		e.b = append(e.b, "true"...)
	}
}

func (e *canonEnc) integer(k string, v, def int) {
	if v != 0 && v != def {
		e.key(k)
		e.b = strconv.AppendInt(e.b, int64(v), 10)
	}
}

func (e *canonEnc) float(k string, v, def float64) {
	if v == 0 || v == def {
		return
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		if e.err == nil {
			e.err = errors.New("config: canonical form: " + k + " is not a finite number")
		}
		return
	}
	e.key(k)
	e.b = strconv.AppendFloat(e.b, v, 'g', -1, 64)
}

// duration writes d in its shortest form unless it is empty; an invalid
// duration is written as it is.
func (e *canonEnc) duration(k string, d Duration) { e.durationOmit(k, d, -1, -1) }

// durationOr writes d unless it is empty, 0 or def: a field whose owner
// reads 0 as its default.
func (e *canonEnc) durationOr(k string, d Duration, def time.Duration) { e.durationOmit(k, d, 0, def) }

// durationOmit writes d in its shortest form unless it is empty, a or b;
// an invalid duration is written as it is.
func (e *canonEnc) durationOmit(k string, d Duration, a, b time.Duration) {
	if d == "" {
		return
	}
	v, err := time.ParseDuration(string(d))
	if err != nil || v < 0 {
		e.str(k, string(d))
		return
	}
	if v == a || v == b {
		return
	}
	e.key(k)
	e.b = append(e.b, '"')
	e.b = appendDuration(e.b, v)
	e.b = append(e.b, '"')
}

func (e *canonEnc) prefixes(k string, vs []string) {
	if len(vs) == 0 {
		return
	}
	e.openArray(k)
	for i, v := range vs {
		e.elem(i)
		if p, err := ParsePrefix(v); err == nil {
			e.b = append(e.b, '"')
			e.b = appendPrefix(e.b, p)
			e.b = append(e.b, '"')
		} else {
			e.b = strictdecode.AppendString(e.b, v)
		}
	}
	e.closeArray()
}

func (e *canonEnc) metadata(k string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for mk := range m {
		keys = append(keys, mk)
	}
	slices.Sort(keys)
	mark := e.open(k)
	for _, mk := range keys {
		if !e.first {
			e.b = append(e.b, ',')
		}
		e.first = false
		e.b = strictdecode.AppendString(e.b, mk)
		e.b = append(e.b, ':')
		e.b = strictdecode.AppendString(e.b, m[mk])
	}
	e.close(mark, true)
}

func (e *canonEnc) document(d *Document) {
	e.b = append(e.b, '{')
	e.first = true
	e.spans.global.start = len(e.b)
	e.global(&d.Global)
	e.spans.global.end = len(e.b)
	e.objects("hosts", len(d.Hosts), e.spans.hosts, func(i int) { e.hostFrom(i, &d.Hosts[i]) })
	e.objects("upstreams", len(d.Upstreams), e.spans.upstreams, func(i int) { e.upstreamFrom(i, &d.Upstreams[i]) })
	e.spans.policies.start = len(e.b)
	defer func() { e.spans.policies.end = len(e.b) }()
	e.objects("accessLists", len(d.AccessLists), nil, func(i int) {
		l := &d.AccessLists[i]
		e.str("id", l.ID)
		e.prefixes("allow", l.Allow)
		e.prefixes("deny", l.Deny)
		e.stringList("allowCountries", l.AllowCountries)
		e.stringList("denyCountries", l.DenyCountries)
		e.strDefault("mode", l.Mode, gate.ModeNames()[0])
		e.objects("users", len(l.Users), nil, func(j int) {
			e.str("name", l.Users[j].Name)
			e.str("passwordHash", l.Users[j].PasswordHash)
		})
		e.strDefault("realm", l.Realm, gate.DefaultRealm)
	})
	e.objects("certificates", len(d.Certificates), nil, func(i int) {
		c := &d.Certificates[i]
		e.str("id", c.ID)
		e.str("certFile", c.CertFile)
		e.str("keyFile", c.KeyFile)
		e.boolean("acme", c.ACME)
	})
	e.gatePolicies(d)
	e.b = append(e.b, '}')
}

func (e *canonEnc) global(g *Global) {
	m := e.open("global")
	e.prefixes("trustedProxies", g.TrustedProxies)
	e.boolean("trustForwardedProto", g.TrustForwardedProto)
	e.str("zone", g.Zone)
	e.strDefault("server", g.Server, gate.DefaultServer)
	if g.DefaultAnswer != nil {
		e.fixed("defaultAnswer", g.DefaultAnswer, gate.DefaultAnswerStatus)
	}
	e.boolean("cloudflare", g.Cloudflare)
	e.prefixes("probeSources", g.ProbeSources)
	e.integer("httpsPort", g.HTTPSPort, 0)
	mt := e.open("tls")
	e.str("defaultCertificate", g.TLS.DefaultCertificate)
	e.strDefault("unknownSni", g.TLS.UnknownSNI, string(tlsselect.FallbackDefault))
	e.strDefault("noSni", g.TLS.NoSNI, string(tlsselect.FallbackDefault))
	e.durationOr("ticketKeyPeriod", g.TLS.TicketKeyPeriod, tlsselect.DefaultTicketKeyPeriod)
	e.close(mt, false)
	e.close(m, false)
}

func (e *canonEnc) fixed(k string, f *FixedAnswer, defStatus int) {
	m := e.open(k)
	e.integer("status", f.Status, defStatus)
	e.strDefault("contentType", f.ContentType, gate.DefaultContentType)
	e.str("body", f.Body)
	e.close(m, true)
}

func (e *canonEnc) host(h *Host) {
	if len(h.Names) > 0 {
		e.openArray("names")
		for i, n := range h.Names {
			e.elem(i)
			if canon, _, err := hostname.Canonical(n); err == nil {
				n = canon
			} else if hostname.IsCatchAll(n) {
				n = hostname.CatchAll
			}
			e.b = strictdecode.AppendString(e.b, n)
		}
		e.closeArray()
	}
	e.strDefault("kind", h.Kind, gate.HostKindNames()[0])
	if r := h.Redirect; r != nil {
		m := e.open("redirect")
		to := r.To
		if gate.CheckRedirectTarget(to, r.DropPath) == nil {
			if t := strings.TrimSuffix(to, "/"); !strings.HasSuffix(t, "/") {
				to = t
			}
		}
		e.str("to", to)
		e.integer("status", r.Status, gate.DefaultRedirectStatus)
		e.boolean("dropPath", r.DropPath)
		e.close(m, true)
	}
	if h.Fixed != nil {
		e.fixed("fixed", h.Fixed, gate.DefaultFixedStatus)
	}
	e.objects("routes", len(h.Routes), nil, func(i int) {
		r := &h.Routes[i]
		e.str("id", r.ID)
		p := r.Path
		switch r.PathType {
		case "", gate.PathPrefix.String():
			if p == "/" {
				p = "" // the default, most routes' (RoutePrefix's answer)
			} else if gate.CheckPrefix(p) == nil {
				p = RoutePrefix(p)
			}
		case gate.PathExact.String():
			if p == "/" {
				p = "" // the default: the root, as the gate reads it
			}
		}
		e.str("path", p)
		e.routeMatch(r)
		e.stringList("allowInPath", r.AllowInPath)
		e.str("upstream", r.Upstream)
		e.stringList("policies", r.Policies)
		e.integer("maxBodyBytes", r.MaxBodyBytes, 0)
		e.routeForwarding(r)
		e.routeBackends(r)
	})
	e.str("accessList", h.AccessList)
	e.str("certificate", h.Certificate)
	e.str("server", h.Server)
	e.hostGate(h)
	e.headers(&h.Headers)
	if c := &h.Compression; c.Enabled || c.MinimumSize != 0 || len(c.Encodings) > 0 {
		m := e.open("compression")
		e.boolean("enabled", c.Enabled)
		e.integer("minimumSize", c.MinimumSize, proxy.DefaultMinimumSize)
		if !slices.Equal(c.Encodings, proxy.EncodingNames()) {
			e.stringList("encodings", c.Encodings)
		}
		e.close(m, false)
	}
	e.strDefault("requestId", h.RequestID, proxy.RequestIDModeNames()[0])
	e.boolean("keepUnderscoreHeaders", h.KeepUnderscoreHeaders)
	if v := h.AccessLog; v != nil && !*v {
		e.key("accessLog")
		e.b = append(e.b, "false"...)
	}
}

// routeMatch writes a route's path type, matches and order; defaults
// write nothing.
func (e *canonEnc) routeMatch(r *Route) {
	e.strDefault("pathType", r.PathType, gate.PathTypeNames()[0])
	if len(r.Match.Methods) > 0 || len(r.Match.Headers) > 0 || len(r.Match.Query) > 0 {
		e.routeMatchBlock(&r.Match)
	}
	e.integer("order", r.Order, 0)
}

// routeMatchBlock writes a route's match block, which is not empty.
func (e *canonEnc) routeMatchBlock(rm *RouteMatch) {
	m := e.open("match")
	e.stringList("methods", rm.Methods)
	e.objects("headers", len(rm.Headers), nil, func(k int) {
		hm := &rm.Headers[k]
		e.str("name", hm.Name)
		e.strDefault("type", hm.Type, gate.HeaderMatchTypeNames()[0])
		e.str("value", hm.Value)
	})
	e.objects("query", len(rm.Query), nil, func(k int) {
		qm := &rm.Query[k]
		e.str("name", qm.Name)
		e.strDefault("type", qm.Type, gate.QueryMatchTypeNames()[0])
		e.str("value", qm.Value)
	})
	e.close(m, false)
}

// routeForwarding writes a route's forwarding blocks; defaults write
// nothing.
func (e *canonEnc) routeForwarding(r *Route) {
	e.strDefault("hostHeader", r.HostHeader, proxy.HostHeaderNames()[0])
	e.str("hostName", r.HostName)
	// Most routes rewrite nothing and keep the default retries: their
	// empty blocks are neither written nor removed.
	if rw := &r.Rewrite; rw.StripPrefix || rw.AddPrefix != "" || rw.RewriteLocation != nil || rw.Template != "" ||
		rw.ReplacePrefix != "" || rw.Path != "" || len(rw.Query.Set) > 0 || len(rw.Query.Add) > 0 || len(rw.Query.Remove) > 0 {
		e.rewrite(rw)
	}
	e.headers(&r.Headers)
	if r.Retry != (RouteRetry{}) {
		m := e.open("retry")
		e.integer("attempts", r.Retry.Attempts, 0)
		e.integer("bodyLimit", r.Retry.BodyLimit, proxy.DefaultRetryBodyLimit)
		e.float("budget", r.Retry.Budget, proxy.DefaultRetryBudget)
		e.retryConnectFailures(&r.Retry)
		e.close(m, false)
	}
	e.routeAnswers(r)
}

// rewrite writes a route's rewrite block; defaults write nothing.
func (e *canonEnc) rewrite(rw *Rewrite) {
	m := e.open("rewrite")
	e.boolean("stripPrefix", rw.StripPrefix)
	e.str("addPrefix", rw.AddPrefix)
	if v := rw.RewriteLocation; v != nil && !*v {
		e.key("rewriteLocation")
		e.b = append(e.b, "false"...)
	}
	e.str("template", rw.Template)
	e.rewriteFilters(rw)
	e.close(m, false)
}

// rewriteFilters writes a rewrite's replaced prefix, path and query;
// defaults write nothing. A replaced prefix's trailing "/" is dropped,
// as the proxy reads it.
func (e *canonEnc) rewriteFilters(rw *Rewrite) {
	p := rw.ReplacePrefix
	if len(p) > 1 {
		p = strings.TrimSuffix(p, "/")
	}
	e.str("replacePrefix", p)
	e.str("path", rw.Path)
	m := e.open("query")
	e.metadata("set", rw.Query.Set)
	e.metadata("add", rw.Query.Add)
	e.stringList("remove", rw.Query.Remove)
	e.close(m, false)
}

// routeAnswers writes a route's redirect, fixed answer and timeouts;
// defaults write nothing, a present redirect or fixed answer an object.
func (e *canonEnc) routeAnswers(r *Route) {
	if rd := r.Redirect; rd != nil {
		m := e.open("redirect")
		e.str("scheme", rd.Scheme)
		e.str("host", strings.ToLower(rd.Host))
		port := rd.Port
		if (rd.Scheme == "http" && port == 80) || (rd.Scheme == "https" && port == 443) {
			port = 0
		}
		e.integer("port", port, 0)
		e.str("path", rd.Path)
		p := rd.Prefix
		if len(p) > 1 {
			p = strings.TrimSuffix(p, "/")
		}
		e.str("prefix", p)
		e.integer("status", rd.Status, gate.DefaultRouteRedirectStatus)
		e.close(m, true)
	}
	if r.Fixed != nil {
		e.fixed("fixed", r.Fixed, gate.DefaultFixedStatus)
	}
	if r.Timeouts != (RouteTimeouts{}) {
		m := e.open("timeouts")
		e.durationOr("request", r.Timeouts.Request, 0)
		e.durationOr("perTry", r.Timeouts.PerTry, 0)
		e.close(m, false)
	}
}

// routeBackends writes a route's backends, split and mirror; defaults
// write nothing. The backends and the force rules keep their order: a
// sticky key's side depends on it.
func (e *canonEnc) routeBackends(r *Route) {
	e.objects("backends", len(r.Backends), nil, func(k int) {
		b := &r.Backends[k]
		e.str("upstream", b.Upstream)
		if b.Weight != nil && *b.Weight != 1 {
			e.key("weight")
			e.b = strconv.AppendInt(e.b, int64(*b.Weight), 10)
		}
	})
	if r.Split.Sticky != (Sticky{}) || len(r.Split.Force) > 0 {
		e.split(&r.Split)
	}
	if mr := r.Mirror; mr != nil {
		m := e.open("mirror")
		e.str("upstream", mr.Upstream)
		if p := mr.Percent; p != nil && *p != 100 {
			if *p == 0 {
				e.key("percent")
				e.b = append(e.b, '0')
			} else {
				e.float("percent", *p, 100)
			}
		}
		e.integer("maxBodyBytes", mr.MaxBodyBytes, proxy.DefaultMirrorMaxBodyBytes)
		e.integer("maxInFlight", mr.MaxInFlight, proxy.DefaultMirrorMaxInFlight)
		e.str("hostName", mr.HostName)
		e.durationOr("timeout", mr.Timeout, proxy.DefaultMirrorTimeout)
		e.close(m, true)
	}
}

// split writes a route's split block; defaults write nothing.
func (e *canonEnc) split(sp *Split) {
	m := e.open("split")
	ms := e.open("sticky")
	e.str("cookie", sp.Sticky.Cookie)
	e.str("header", sp.Sticky.Header)
	e.boolean("client", sp.Sticky.Client)
	e.close(ms, false)
	e.objects("force", len(sp.Force), nil, func(k int) {
		f := &sp.Force[k]
		e.str("header", f.Header)
		e.str("cookie", f.Cookie)
		e.str("value", f.Value)
		e.str("upstream", f.Upstream)
	})
	e.close(m, false)
}

// headers writes custom header rules. Names are written as given: the
// round trip through Decode keeps the document's own spelling.
func (e *canonEnc) headers(h *Headers) {
	if len(h.Request) == 0 && len(h.Response) == 0 {
		// Most hosts and routes have none: skip the empty block's writing
		// and removal, a quarter of a fleet's encoding.
		return
	}
	m := e.open("headers")
	for _, dir := range [...]struct {
		k     string
		rules []HeaderRule
	}{{"request", h.Request}, {"response", h.Response}} {
		e.objects(dir.k, len(dir.rules), nil, func(i int) {
			r := &dir.rules[i]
			e.str("name", r.Name)
			e.strDefault("operation", r.Operation, proxy.HeaderOpNames()[0])
			e.str("value", r.Value)
		})
	}
	e.close(m, false)
}

func (e *canonEnc) upstream(u *Upstream) {
	e.str("id", u.ID)
	e.objects("destinations", len(u.Destinations), nil, func(i int) {
		d := &u.Destinations[i]
		e.str("id", d.ID)
		addr, reason := parseAddr(d.Address)
		if reason == "" {
			e.key("address")
			e.b = append(e.b, '"')
			e.b = addr.AppendURL(e.b)
			e.b = append(e.b, '"')
		} else {
			e.str("address", d.Address)
		}
		if d.Health != "" {
			if ha, hreason := parseAddr(d.Health); hreason != "" {
				e.str("health", d.Health)
			} else if reason != "" || ha != addr {
				e.key("health")
				e.b = append(e.b, '"')
				e.b = ha.AppendURL(e.b)
				e.b = append(e.b, '"')
			}
		}
		e.metadata("metadata", d.Metadata)
		e.boolean("drain", d.Drain)
	})
	e.strDefault("loadBalancing", u.LoadBalancing, balance.PolicyNames()[0])

	if h := &u.HTTP; h.Version != "" || h.VersionPolicy != "" || h.ConnectTimeout != "" || h.IdleTimeout != "" ||
		h.HTTP1Client != "" || h.TLS.Trust != "" || len(h.TLS.Pins) > 0 || h.TLS.ServerName != "" ||
		h.TLS.CAFile != "" || h.TLS.ClientCertificate != "" || h.ProxyProtocol != "" {
		e.upstreamHTTP(h)
	}
	if u.Health != (HealthCheck{}) {
		e.health(&u.Health, u.Metadata)
	}
	if u.Affinity != (Affinity{}) {
		e.affinity(&u.Affinity)
	}
	e.metadata("metadata", u.Metadata)
	e.upstreamLimits(&u.Limits)
}

func (e *canonEnc) upstreamHTTP(h *UpstreamHTTP) {
	m := e.open("http")
	e.strDefault("version", h.Version, proxy.HTTPVersionNames()[0])
	e.strDefault("versionPolicy", h.VersionPolicy, proxy.VersionPolicyNames()[0])
	e.durationOr("connectTimeout", h.ConnectTimeout, proxy.DefaultConnectTimeout)
	e.durationOmit("idleTimeout", h.IdleTimeout, proxy.DefaultIdleTimeout, proxy.DefaultIdleTimeout) // "0s" is never
	e.strDefault("http1Client", h.HTTP1Client, proxy.HTTP1ClientNames()[0])
	t := &h.TLS
	mt := e.open("tls")
	e.strDefault("trust", t.Trust, proxy.TrustNames()[0])
	if len(t.Pins) > 0 {
		e.openArray("pins")
		for i, p := range t.Pins {
			e.elem(i)
			if sum, ok := ParsePin(p); ok {
				e.b = append(e.b, '"')
				e.b = base64.StdEncoding.AppendEncode(e.b, sum[:])
				e.b = append(e.b, '"')
			} else {
				e.b = strictdecode.AppendString(e.b, p)
			}
		}
		e.closeArray()
	}
	if sn := t.ServerName; sn != "" {
		if canon, wildcard, err := hostname.Canonical(sn); err == nil && !wildcard {
			sn = canon
		}
		e.str("serverName", sn)
	}
	e.upstreamTLSIdentity(t)
	e.close(mt, false)
	e.upstreamProxyProtocol(h)
	e.close(m, false)
}

// health writes a health block. A value is left out when it is what its
// field left empty stands for, as package health resolves it
// (health.Config.Resolve): with the upstream's metadata, which sets the
// threshold and the failure rate, and for the reactivation period with
// the block's own window.
func (e *canonEnc) health(hc *HealthCheck, metadata map[string]string) {
	def := health.Config{Metadata: metadata}.Resolve()
	m := e.open("health")
	a := &hc.Active
	ma := e.open("active")
	e.boolean("enabled", a.Enabled)
	e.durationOr("interval", a.Interval, def.Active.Interval)
	e.durationOr("timeout", a.Timeout, def.Active.Timeout)
	e.strDefault("path", a.Path, def.Active.Path)
	e.str("query", a.Query)
	e.strDefault("policy", a.Policy, def.Active.Policy)
	e.integer("threshold", a.Threshold, def.Active.Threshold)
	e.close(ma, false)
	p := &hc.Passive
	mp := e.open("passive")
	e.boolean("enabled", p.Enabled)
	e.strDefault("policy", p.Policy, def.Passive.Policy)
	e.durationOr("window", p.Window, def.Passive.Window)
	e.integer("minRequests", p.MinRequests, def.Passive.MinRequests)
	e.float("failureRate", p.FailureRate, def.Passive.FailureRate)
	window := health.Config{Passive: health.PassiveConfig{Window: DurationOf(p.Window)}}.Resolve()
	e.durationOr("reactivationPeriod", p.ReactivationPeriod, window.Passive.ReactivationPeriod)
	e.close(mp, false)
	e.outlier(&hc.Outlier, def.Outlier)
	e.strDefault("availability", hc.Availability, def.Availability)
	e.boolean("probeFirst", hc.ProbeFirst)
	e.durationOr("slowStart", hc.SlowStart, 0) // 0 is off, like empty
	e.close(m, false)
}

func (e *canonEnc) affinity(af *Affinity) {
	m := e.open("affinity")
	e.boolean("enabled", af.Enabled)
	e.strDefault("mode", af.Mode, balance.AffinityModeNames()[0])
	e.strDefault("failurePolicy", af.FailurePolicy, balance.AffinityFailurePolicyNames()[0])
	e.strDefault("key", af.Key, balance.DefaultAffinityKeyName)
	ck := &af.Cookie
	mc := e.open("cookie")
	e.str("path", ck.Path)
	e.str("domain", ck.Domain)
	if ck.HTTPOnly != nil && !*ck.HTTPOnly {
		e.key("httpOnly")
		e.b = append(e.b, "false"...)
	}
	e.strDefault("secure", ck.Secure, balance.CookieSecureNames()[0])
	e.strDefault("sameSite", ck.SameSite, balance.CookieSameSiteNames()[0])
	e.durationOr("maxAge", ck.MaxAge, 0) // 0 is a session cookie, like empty
	e.close(mc, false)
	e.close(m, false)
}

// appendDuration appends d >= 0 as [time.Duration.String] writes it,
// without allocating.
func appendDuration(b []byte, d time.Duration) []byte {
	var buf [32]byte
	w := len(buf)
	u := uint64(d)
	if u < uint64(time.Second) {
		var prec int
		w--
		buf[w] = 's'
		w--
		switch {
		case u == 0:
			return append(b, "0s"...)
		case u < uint64(time.Microsecond):
			buf[w] = 'n'
		case u < uint64(time.Millisecond):
			prec = 3
			w-- // "µ" is two bytes
			copy(buf[w:], "µ")
		default:
			prec = 6
			buf[w] = 'm'
		}
		w, u = durationFrac(buf[:w], u, prec)
		w = durationInt(buf[:w], u)
	} else {
		w--
		buf[w] = 's'
		w, u = durationFrac(buf[:w], u, 9)
		w = durationInt(buf[:w], u%60)
		u /= 60
		if u > 0 {
			w--
			buf[w] = 'm'
			w = durationInt(buf[:w], u%60)
			u /= 60
			if u > 0 {
				w--
				buf[w] = 'h'
				w = durationInt(buf[:w], u)
			}
		}
	}
	return append(b, buf[w:]...)
}

// durationFrac writes the fraction of v/10^prec at the end of buf, without
// trailing zeros (and without the dot if it is zero); it returns the index
// where the output starts and v/10^prec.
func durationFrac(buf []byte, v uint64, prec int) (int, uint64) {
	w := len(buf)
	printed := false
	for range prec {
		digit := v % 10
		printed = printed || digit != 0
		if printed {
			w--
			buf[w] = byte(digit) + '0'
		}
		v /= 10
	}
	if printed {
		w--
		buf[w] = '.'
	}
	return w, v
}

// durationInt writes v at the end of buf and returns where it starts.
func durationInt(buf []byte, v uint64) int {
	w := len(buf)
	if v == 0 {
		w--
		buf[w] = '0'
		return w
	}
	for v > 0 {
		w--
		buf[w] = byte(v%10) + '0'
		v /= 10
	}
	return w
}
