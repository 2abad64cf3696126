package gate

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// Target is what a route hands a request to: the proxy's forwarder, or any
// handler of the embedder's. rq lives until Forward returns and must not be
// kept after that.
type Target interface {
	Forward(w http.ResponseWriter, r *http.Request, rq *Request)
}

// TargetFunc adapts a function to [Target].
type TargetFunc func(w http.ResponseWriter, r *http.Request, rq *Request)

// Forward calls f(w, r, rq).
func (f TargetFunc) Forward(w http.ResponseWriter, r *http.Request, rq *Request) { f(w, r, rq) }

// HostKind says what a host does with its requests.
type HostKind uint8

const (
	// HostProxy routes requests to targets (the zero value).
	HostProxy HostKind = iota
	// HostRedirect answers every request with a redirect.
	HostRedirect
	// HostFixed answers every request with a fixed answer.
	HostFixed
)

// Config describes a gate. It is a plain value: build it by hand to embed
// the gate, or let the snapshot compiler build it from a document. [New]
// validates it and copies what it keeps.
type Config struct {
	// Hosts are the virtual hosts.
	Hosts []Host
	// Default answers requests for unknown hosts; the zero value is a 404
	// with a short text body.
	Default Answer
	// TrustedProxies are the peers allowed to supply the client address in
	// X-Forwarded-For. IPv4-mapped IPv6 prefixes are normalised.
	TrustedProxies []netip.Prefix
	// TrustForwardedProto lets a trusted proxy supply the scheme in
	// X-Forwarded-Proto.
	TrustForwardedProto bool
	// Server is the default Server header; empty means "Paduraksa".
	Server string
	// Tracer, when not nil, receives every step of every decision. Leave
	// it nil in production: the disabled path costs one branch per step.
	Tracer *Tracer
}

// Host is one virtual host.
type Host struct {
	// Names are exact names, "*.parent" wildcards or IP literals, in any
	// case and in Unicode or punycode.
	Names []string
	Kind  HostKind
	// Redirect is the answer of a HostRedirect host.
	Redirect Redirect
	// Fixed is the answer of a HostFixed host.
	Fixed Answer
	// Routes are matched most specific prefix first, whatever their order.
	Routes []Route
	// Server overrides Config.Server.
	Server string

	server  []string
	answers *answerSet // the gate's own answers, with this host's headers
	fixed   *answer
}

// Route sends requests under a path prefix to a target.
type Route struct {
	// ID names the route in traces; optional.
	ID string
	// Prefix matches on segment boundaries: "/api" matches "/api" and
	// "/api/x" but not "/apix"; "/" and "" match everything.
	Prefix string
	Target Target
}

// Redirect is a precomputed redirect answer.
type Redirect struct {
	// To is an absolute URL prefix.
	To string
	// Status is 301, 302, 303, 307 or 308; 0 means 308.
	Status int
	// DropPath sends every request to To itself instead of appending the
	// request's path and query.
	DropPath bool
}

// Answer is a response the gate writes itself.
type Answer struct {
	// Status is the status code; 0 means 200 for fixed hosts and 404 for
	// the default answer.
	Status int
	// ContentType defaults to "text/plain; charset=utf-8".
	ContentType string
	// Body is sent as is.
	Body []byte
}

// Gate decides what happens to each request. It is immutable and safe for
// concurrent use; publish a new Gate to change anything.
type Gate struct {
	hosts          hostTable
	def            *answer
	defServer      []string
	trusted        []netip.Prefix
	trustProto     bool
	tracer         *Tracer
	hostStore      []Host
	defaultAnswers *answerSet
}

// ErrInvalidConfig wraps every problem [New] finds.
var ErrInvalidConfig = errors.New("gate: invalid config")

// New validates cfg and builds a Gate. Host names are canonicalised with
// [CanonicalHostName]; a name used twice is an error.
func New(cfg Config) (*Gate, error) {
	g := &Gate{
		hosts:      hostTable{exact: map[string]*Host{}, wildcard: map[string]*Host{}},
		trustProto: cfg.TrustForwardedProto,
		tracer:     cfg.Tracer,
		hostStore:  make([]Host, len(cfg.Hosts)),
	}
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	for _, p := range cfg.TrustedProxies {
		if !p.IsValid() {
			fail("invalid trusted proxy prefix")
			continue
		}
		g.trusted = append(g.trusted, unmapPrefix(p))
	}
	g.defServer = headerValue(cmpOr(cfg.Server, "Paduraksa"))
	answers := answerCache{}
	servers := map[string][]string{g.defServer[0]: g.defServer}
	g.defaultAnswers = answers.get(g.defServer)
	def := cfg.Default
	if def.Status == 0 {
		def.Status = http.StatusNotFound
		if def.Body == nil {
			def.Body = []byte("not found\n")
		}
	}
	if !validStatus(def.Status) {
		fail("default answer status %d", def.Status)
	}
	g.def = newAnswer(def, g.defServer)

	for i := range cfg.Hosts {
		h := &g.hostStore[i]
		*h = cfg.Hosts[i]
		h.Names = slices.Clone(h.Names)
		h.Routes = slices.Clone(h.Routes)
		h.server = g.defServer
		if h.Server != "" {
			if h.server = servers[h.Server]; h.server == nil {
				h.server = headerValue(h.Server)
				servers[h.Server] = h.server
			}
		}
		h.answers = answers.get(h.server)
		if len(h.Names) == 0 {
			fail("hosts[%d]: no names", i)
		}
		for j, n := range h.Names {
			canon, _, err := CanonicalHostName(n)
			if err != nil {
				fail("hosts[%d].names[%d]: %q: %v", i, j, n, err)
				continue
			}
			h.Names[j] = canon
			if !g.hosts.add(canon, h) {
				fail("hosts[%d].names[%d]: %q is used twice", i, j, n)
			}
		}
		switch h.Kind {
		case HostProxy:
			for j, rt := range h.Routes {
				if rt.Target == nil {
					fail("hosts[%d].routes[%d]: no target", i, j)
				}
				p := strings.TrimSuffix(rt.Prefix, "/")
				if rt.Prefix != "" && !strings.HasPrefix(rt.Prefix, "/") {
					fail("hosts[%d].routes[%d]: prefix %q does not start with /", i, j, rt.Prefix)
				}
				h.Routes[j].Prefix = p
			}
			// Most specific first: longer prefixes before shorter ones;
			// equal prefixes keep their order.
			slices.SortStableFunc(h.Routes, func(a, b Route) int { return len(b.Prefix) - len(a.Prefix) })
		case HostRedirect:
			if h.Redirect.Status == 0 {
				h.Redirect.Status = http.StatusPermanentRedirect
			}
			switch h.Redirect.Status {
			case 301, 302, 303, 307, 308:
			default:
				fail("hosts[%d]: redirect status %d", i, h.Redirect.Status)
			}
			if !strings.HasPrefix(h.Redirect.To, "http://") && !strings.HasPrefix(h.Redirect.To, "https://") {
				fail("hosts[%d]: redirect target %q is not an absolute http(s) URL", i, h.Redirect.To)
			}
			h.Redirect.To = strings.TrimSuffix(h.Redirect.To, "/")
		case HostFixed:
			if h.Fixed.Status == 0 {
				h.Fixed.Status = http.StatusOK
			}
			if !validStatus(h.Fixed.Status) {
				fail("hosts[%d]: fixed status %d", i, h.Fixed.Status)
			}
			h.fixed = newAnswer(h.Fixed, h.server)
		default:
			fail("hosts[%d]: unknown kind %d", i, h.Kind)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return g, nil
}

func validStatus(s int) bool { return s >= 200 && s <= 599 }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func unmapPrefix(p netip.Prefix) netip.Prefix {
	if p.Addr().Is4In6() {
		bits := p.Bits() - 96
		if bits < 0 {
			bits = 0
		}
		return netip.PrefixFrom(p.Addr().Unmap(), bits).Masked()
	}
	return p.Masked()
}

// Lookup returns the host a Host header value names, and how it matched.
// It allocates nothing.
func (g *Gate) Lookup(host string) (*Host, HostMatch) { return g.hosts.lookup(host) }

var requestPool = sync.Pool{New: func() any { return new(Request) }}

// ServeHTTP runs the decision pipeline for one request: client address,
// host, host answers, route match, hand-over. Every decision comes from this
// Gate.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := requestPool.Get().(*Request)
	rq.gate, rq.Tracer = g, g.tracer
	g.decide(w, r, rq)
	*rq = Request{}
	requestPool.Put(rq)
}

func (g *Gate) decide(w http.ResponseWriter, r *http.Request, rq *Request) {
	tr := rq.Tracer
	g.resolveClient(r, rq)
	if tr != nil {
		tr.OnStep(Step{Kind: StepClient, Addr: rq.Client, Peer: rq.Peer, Scheme: rq.Scheme, Reason: rq.ClientSource.String()})
	}

	h, match := g.hosts.lookup(r.Host)
	if tr != nil {
		tr.OnStep(Step{Kind: StepHost, Match: match, Name: r.Host})
	}
	if h == nil {
		g.def.write(w, r)
		if tr != nil {
			tr.OnStep(Step{Kind: StepAnswer, Status: g.def.status, Reason: "unknown host"})
		}
		return
	}
	rq.Host = h
	w.Header()["Server"] = h.server

	switch h.Kind {
	case HostRedirect:
		status := writeRedirect(w, r, &h.Redirect)
		if tr != nil {
			tr.OnStep(Step{Kind: StepRedirect, Status: status, Name: h.Redirect.To})
		}
		return
	case HostFixed:
		h.fixed.write(w, r)
		if tr != nil {
			tr.OnStep(Step{Kind: StepAnswer, Status: h.fixed.status, Reason: "fixed host"})
		}
		return
	}

	rq.Path = r.URL.Path
	rt := matchRoute(h.Routes, rq.Path)
	if rt == nil {
		if tr != nil {
			tr.OnStep(Step{Kind: StepRoute, Path: rq.Path, Status: http.StatusNotFound, Reason: "no route"})
		}
		rq.Answer(w, r, http.StatusNotFound)
		return
	}
	rq.Route = rt
	if tr != nil {
		tr.OnStep(Step{Kind: StepRoute, Path: rq.Path, Name: rt.ID, Reason: rt.Prefix})
		tr.OnStep(Step{Kind: StepHandOver, Name: rt.ID})
	}
	rt.Target.Forward(w, r, rq)
}

// matchRoute returns the first route (most specific first) whose prefix
// matches path on a segment boundary.
func matchRoute(routes []Route, path string) *Route {
	for i := range routes {
		p := routes[i].Prefix
		if p == "" {
			return &routes[i]
		}
		if strings.HasPrefix(path, p) && (len(path) == len(p) || path[len(p)] == '/') {
			return &routes[i]
		}
	}
	return nil
}

func writeRedirect(w http.ResponseWriter, r *http.Request, rd *Redirect) int {
	loc := rd.To
	if !rd.DropPath {
		loc += r.URL.RequestURI()
	}
	w.Header()["Location"] = []string{loc}
	w.Header()["Content-Length"] = zeroLength
	w.WriteHeader(rd.Status)
	return rd.Status
}

var zeroLength = headerValue("0")

// headerValue returns a shared header value slice whose length equals its
// capacity, so an Add by anyone appends to a copy.
func headerValue(v string) []string { return []string{v}[:1:1] }
