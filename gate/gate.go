package gate

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
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
	// X-Forwarded-For (and, in Cloudflare mode, CF-Connecting-IP).
	// IPv4-mapped IPv6 prefixes are normalised.
	TrustedProxies []netip.Prefix
	// TrustForwardedProto lets a trusted proxy supply the scheme in
	// X-Forwarded-Proto.
	TrustForwardedProto bool
	// Cloudflare mode: the trusted proxies are Cloudflare's edge (or a
	// local cloudflared). From them the client comes from
	// CF-Connecting-IP (else X-Forwarded-For, counted as a fallback), the
	// scheme from CF-Visitor (else X-Forwarded-Proto), and
	// [Request.CloudflareTrusted] tells the forwarder to keep the cf-*
	// headers. From anyone else those headers are ignored.
	Cloudflare bool
	// ProbeSources are the addresses of health checkers (a load
	// balancer's probes); rate limits with ExemptProbes let them through.
	ProbeSources []netip.Prefix
	// Challenges answers ACME HTTP-01 challenges on plain HTTP; nil
	// means none.
	Challenges *ChallengeStore
	// State keeps policy state and counters across gates; nil means a
	// private one.
	State *State
	// Server is the default Server header; empty means "Paduraksa".
	Server string
	// Logger receives the "would have blocked" lines of shadowed
	// policies; nil means none.
	Logger *slog.Logger
	// Tracer, when not nil, receives every step of every decision. Leave
	// it nil in production: the disabled path costs one branch per step.
	Tracer *Tracer
	// MaxPasswordChecks bounds the bcrypt checks of basic auth running at
	// once across the gateway (the State's count); a check over the bound
	// is answered 503 with Retry-After. 0 means half the CPUs the Go
	// runtime uses, at least 1.
	MaxPasswordChecks int
	// Reuse lists hosts compiled by an earlier Gate, taken as they are
	// after the hosts of Hosts: a publish that changes a few hosts of
	// thousands then costs little more than the changed ones. The caller
	// vouches that each came from [Gate.Host] of a Gate whose config was
	// equal for that host: same host, same Server, same policy instances
	// and targets.
	Reuse []*Host
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
	// TLS is re-checked per request (421 when the connection is weaker).
	TLS TLSPolicy
	// HSTS is sent on HTTPS answers; the zero value sends none.
	HSTS HSTS
	// Policies is the host's chain; it also guards the redirect, robots
	// and fixed answers.
	Policies []PolicyUse
	// Limits bounds the host's requests.
	Limits Limits
	// HTTPSRedirect sends plain-HTTP requests to HTTPS.
	HTTPSRedirect HTTPSRedirect
	// Robots, when not nil, is served for GET and HEAD /robots.txt as
	// text/plain, before redirect and fixed answers and route matching.
	Robots []byte

	server    []string
	answers   *answerSet // the gate's own answers, with this host's headers
	fixed     *answer
	chain     chain
	altSvc    []string
	hsts      []string
	robots    *Page
	scopeKey  uint64
	httpsLoc  map[string]*location // exact names
	httpsPort string               // ":8443" or ""
	rootLoc   []string             // a HostRedirect's Location for "/"
	dropLoc   []string             // a DropPath HostRedirect's Location
	httpsPage *Page
	redirPage *Page
	firstName string
	owned     []string // headers the host's policies set for the upstream
}

// HSTS configures Strict-Transport-Security. It is sent only when the
// trusted scheme is HTTPS, and never for IP literals or loopback names
// (localhost, *.localhost).
type HSTS struct {
	// MaxAge is the policy's lifetime; 0 sends no header.
	MaxAge            time.Duration
	IncludeSubdomains bool
	Preload           bool
}

// HTTPSRedirect configures the plain-HTTP to HTTPS redirect, decided on
// the trusted scheme, so a TLS-terminating proxy in front cannot loop it.
type HTTPSRedirect struct {
	Enabled bool
	// Status is 301, 302, 307 or 308; 0 means 308.
	Status int
	// Port is the HTTPS port in the Location; 0 means 443.
	Port int
}

// Route sends requests under a path prefix to a target.
type Route struct {
	// ID names the route in traces; optional.
	ID string
	// Prefix matches the path view ([PathView.Match]) on segment
	// boundaries, ASCII letters in any case: "/api" matches "/api",
	// "/API/x" and "/api;v=1/x" but not "/apix"; "/" and "" match
	// everything. It is spelled as the view spells paths ([CheckPrefix]).
	Prefix string
	Target Target
	// Policies is the route's own chain, after the host's.
	Policies []PolicyUse
	// MaxBodyBytes overrides the host's Limits.MaxBodyBytes; 0 means the
	// host's.
	MaxBodyBytes int64
	// PathAllow lists the path spellings the gate refuses by default that
	// this route accepts (see [PathAllow] for what each one asks of the
	// upstream).
	PathAllow PathAllow

	chain    chain
	owned    []string
	lower    string // Prefix, ASCII lower case
	scopeKey uint64
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

// location holds a precomputed HTTPS redirect for one exact name.
type location struct {
	prefix string   // "https://example.com[:port]"
	root   []string // prefix + "/"
}

// Gate decides what happens to each request. It is immutable and safe for
// concurrent use; publish a new Gate to change anything.
type Gate struct {
	hosts          hostTable
	def            *answer
	defServer      []string
	trusted        prefixSet
	probes         prefixSet
	trustProto     bool
	cloudflare     bool
	challenges     *ChallengeStore
	state          *State
	logger         *slog.Logger
	tracer         *Tracer
	compiled       []*Host // the compiled hosts: Config.Hosts, then Config.Reuse
	defaultAnswers *answerSet

	maxPasswordChecks int
}

// ErrInvalidConfig wraps every problem [New] finds.
var ErrInvalidConfig = errors.New("gate: invalid config")

// New validates cfg and builds a Gate. Host names are canonicalised with
// [CanonicalHostName]; a name used twice is an error.
func New(cfg Config) (*Gate, error) {
	g := &Gate{
		hosts:      newHostTable(cfg),
		trustProto: cfg.TrustForwardedProto,
		cloudflare: cfg.Cloudflare,
		challenges: cfg.Challenges,
		state:      cfg.State,
		logger:     cfg.Logger,
		tracer:     cfg.Tracer,
		compiled:   make([]*Host, len(cfg.Hosts), len(cfg.Hosts)+len(cfg.Reuse)),
	}
	if g.state == nil {
		g.state = new(State)
	}
	var errs []error
	switch g.maxPasswordChecks = cfg.MaxPasswordChecks; {
	case g.maxPasswordChecks == 0:
		g.maxPasswordChecks = max(1, runtime.GOMAXPROCS(0)/2)
	case g.maxPasswordChecks < 0:
		errs = append(errs, fmt.Errorf("%w: negative MaxPasswordChecks", ErrInvalidConfig))
	}
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	for _, p := range cfg.TrustedProxies {
		if !p.IsValid() {
			fail("invalid trusted proxy prefix")
		}
	}
	for _, p := range cfg.ProbeSources {
		if !p.IsValid() {
			fail("invalid probe source prefix")
		}
	}
	g.trusted = newPrefixSet(cfg.TrustedProxies)
	g.probes = newPrefixSet(cfg.ProbeSources)
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

	for i, h := range cfg.Reuse {
		// Compiled by an earlier Gate from an equal config: its names go
		// into this table as they are.
		g.compiled = append(g.compiled, h)
		for j, n := range h.Names {
			if !g.hosts.add(n, h) {
				fail("reuse[%d].names[%d]: %q is used twice", i, j, n)
			}
		}
	}
	for i := range cfg.Hosts {
		h := new(Host)
		g.compiled[i] = h
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
		if len(h.Names) > 0 {
			h.firstName = h.Names[0]
		}
		h.scopeKey = scopeKeyOf(h.firstName)
		if err := h.compileCommon(); err != nil {
			fail("hosts[%d]: %v", i, err)
		}
		h.chain = compileChain(ScopeHost, h.Policies, func(format string, args ...any) {
			fail("hosts[%d].policies: "+format, append([]any{i}, args...)...)
		})
		h.owned = ownedHeaders(h.Policies)
		switch h.Kind {
		case HostProxy:
			for j := range h.Routes {
				rt := &h.Routes[j]
				if rt.Target == nil {
					fail("hosts[%d].routes[%d]: no target", i, j)
				}
				if err := CheckPrefix(rt.Prefix); err != nil {
					fail("hosts[%d].routes[%d]: prefix %q: %v", i, j, rt.Prefix, err)
				}
				if rt.PathAllow&^pathAllowAll != 0 {
					fail("hosts[%d].routes[%d]: unknown path allowance %d", i, j, rt.PathAllow)
				}
				if rt.MaxBodyBytes < 0 {
					fail("hosts[%d].routes[%d]: negative body limit", i, j)
				}
				rt.Prefix = strings.TrimSuffix(rt.Prefix, "/")
				rt.lower = lowerASCII(rt.Prefix)
				rt.scopeKey = scopeKeyOf(h.firstName, "route", cmpOr(rt.ID, rt.Prefix+"/"))
				rt.chain = compileChain(ScopeRoute, rt.Policies, func(format string, args ...any) {
					fail("hosts[%d].routes[%d].policies: "+format, append([]any{i, j}, args...)...)
				})
				rt.owned = ownedHeaders(rt.Policies)
			}
			// Most specific first: longer prefixes before shorter ones;
			// equal prefixes keep their order.
			slices.SortStableFunc(h.Routes, func(a, b Route) int { return len(b.Prefix) - len(a.Prefix) })
			if len(h.Routes) > 1 {
				seen := make(map[string]int, len(h.Routes))
				for j := range h.Routes {
					k := h.Routes[j].lower
					if prev, dup := seen[k]; dup {
						fail("hosts[%d]: routes with prefixes %q and %q match the same paths (prefixes match ASCII letters in any case)", i, h.Routes[prev].Prefix+"/", h.Routes[j].Prefix+"/")
					}
					seen[k] = j
				}
			}
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
			if h.Redirect.DropPath {
				h.dropLoc = headerValue(h.Redirect.To)
			} else {
				h.Redirect.To = strings.TrimSuffix(h.Redirect.To, "/")
				h.rootLoc = headerValue(h.Redirect.To + "/")
			}
			h.redirPage = NewPage(h.Redirect.Status, "", nil, nil)
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

// compileCommon precomputes a host's TLS, HSTS, HTTPS redirect, robots and
// limits.
func (h *Host) compileCommon() error {
	if h.TLS.HTTP3 {
		h.altSvc = headerValue(cmpOr(h.TLS.AltSvc, defaultAltSvc))
	}
	if h.HSTS.MaxAge < 0 {
		return errors.New("negative HSTS max-age")
	}
	if h.HSTS.MaxAge > 0 {
		v := "max-age=" + strconv.FormatInt(int64(h.HSTS.MaxAge/time.Second), 10)
		if h.HSTS.IncludeSubdomains {
			v += "; includeSubDomains"
		}
		if h.HSTS.Preload {
			v += "; preload"
		}
		h.hsts = headerValue(v)
	}
	if rd := &h.HTTPSRedirect; rd.Enabled {
		if rd.Status == 0 {
			rd.Status = http.StatusPermanentRedirect
		}
		switch rd.Status {
		case 301, 302, 307, 308:
		default:
			return fmt.Errorf("HTTPS redirect status %d", rd.Status)
		}
		if rd.Port < 0 || rd.Port > 65535 {
			return fmt.Errorf("HTTPS redirect port %d", rd.Port)
		}
		if rd.Port != 0 && rd.Port != 443 {
			h.httpsPort = ":" + strconv.Itoa(rd.Port)
		}
		h.httpsLoc = map[string]*location{}
		for _, n := range h.Names {
			if strings.HasPrefix(n, "*.") {
				continue
			}
			name := n
			if strings.IndexByte(n, ':') >= 0 {
				name = "[" + n + "]"
			}
			p := "https://" + name + h.httpsPort
			h.httpsLoc[n] = &location{prefix: p, root: headerValue(p + "/")}
		}
		h.httpsPage = NewPage(rd.Status, "", nil, nil)
	}
	if h.Robots != nil {
		h.robots = NewPage(http.StatusOK, "text/plain; charset=utf-8", h.Robots, nil)
	}
	l := &h.Limits
	if l.MaxURIBytes < 0 || l.MaxHeaderCount < 0 || l.MaxHeaderBytes < 0 || l.MaxBodyBytes < 0 {
		return errors.New("negative limit")
	}
	return nil
}

func compileChain(scope Scope, uses []PolicyUse, fail func(string, ...any)) chain {
	c := chain{scope: scope, uses: slices.Clone(uses)}
	for i, u := range c.uses {
		if u.Policy == nil {
			fail("[%d]: no policy", i)
		}
		if u.Mode > Off {
			fail("[%d]: unknown mode %d", i, u.Mode)
		}
	}
	return c
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

// Host returns the i-th compiled host: Config.Hosts[i], then the hosts of
// Config.Reuse. It is immutable and may be passed back to a later [New] in
// Config.Reuse.
func (g *Gate) Host(i int) *Host { return g.compiled[i] }

// Lookup returns the host a Host header value names, and how it matched.
// It allocates nothing.
func (g *Gate) Lookup(host string) (*Host, HostMatch) {
	var buf [maxHostLen]byte
	h, m, _ := g.hosts.lookup(buf[:0], host)
	return h, m
}

// State returns the gate's long-lived state.
func (g *Gate) State() *State { return g.state }

var requestPool = sync.Pool{New: func() any { return new(Request) }}

// ServeHTTP runs the decision pipeline for one request. Every decision
// comes from this Gate.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rq := requestPool.Get().(*Request)
	rq.gate, rq.Tracer = g, g.tracer
	defer g.release(rq)
	g.decide(w, r, rq)
}

func (g *Gate) release(rq *Request) {
	*rq = Request{}
	requestPool.Put(rq)
}

// Simulate runs the same pipeline for the simulator: every step reports to
// tr, stateful policies only look (a rate limit takes no token), deferred
// policies are not called, a drop is traced but not carried out, no
// counter moves, and the route's target is not called: the hand-over step
// names it. Answers the gate gives itself are written to w.
func (g *Gate) Simulate(w http.ResponseWriter, r *http.Request, tr *Tracer) {
	rq := requestPool.Get().(*Request)
	rq.gate, rq.Tracer, rq.DryRun = g, tr, true
	defer g.release(rq)
	g.decide(w, r, rq)
}

func (g *Gate) decide(w http.ResponseWriter, r *http.Request, rq *Request) {
	tr := rq.Tracer
	rq.Conn = ConnInfoFrom(r.Context())
	g.resolveClient(r, rq)
	if tr != nil {
		tr.OnStep(Step{Kind: StepClient, Addr: rq.Client, Peer: rq.Peer, Scheme: rq.Scheme, Reason: rq.ClientSource.String()})
	}

	// ACME HTTP-01, on plain HTTP, before everything else.
	if g.challenges != nil && r.TLS == nil && (rq.Conn == nil || !rq.Conn.HTTP3) {
		if t := acmeToken(r); t != "" {
			if p := g.challenges.lookup(t); p != nil {
				w.Header()["Server"] = g.defServer
				p.write(w, r)
				if tr != nil {
					tr.OnStep(Step{Kind: StepACME, Status: p.status, Name: t})
				}
				return
			}
		}
	}

	h, match, key := g.hosts.lookup(rq.keyBuf[:0], r.Host)
	rq.Match = match
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
	hdr := w.Header()
	hdr["Server"] = h.server

	if reason := tlsCheck(&h.TLS, r, rq.Conn); reason != "" {
		if tr != nil {
			tr.OnStep(Step{Kind: StepTLS, Status: http.StatusMisdirectedRequest, Reason: reason})
		}
		rq.Answer(w, r, http.StatusMisdirectedRequest)
		return
	}
	if tr != nil && (r.TLS != nil || r.ProtoMajor == 3) {
		tr.OnStep(Step{Kind: StepTLS, Reason: "ok"})
	}
	g.responseHeaders(hdr, r, rq, h, key)

	view, err := ReadPath(RequestPath(r))
	if err != nil {
		if tr != nil {
			tr.OnStep(Step{Kind: StepPath, Status: http.StatusBadRequest, Reason: err.Error()})
		}
		rq.Answer(w, r, http.StatusBadRequest)
		return
	}
	rq.Path, rq.ForwardPath = view.Match, view.Forward
	removeOwned(r.Header, h.owned)
	if len(h.chain.uses) > 0 && g.applyChain(&h.chain, w, r, rq) {
		return
	}
	if status, reason := checkLimits(&h.Limits, r); status != 0 {
		if tr != nil {
			tr.OnStep(Step{Kind: StepLimits, Status: status, Reason: reason})
		}
		rq.Answer(w, r, status)
		return
	}
	if h.httpsPage != nil && rq.Scheme == schemeHTTP {
		g.httpsRedirect(w, r, rq, h, key)
		return
	}
	if h.robots != nil && rq.Path == "/robots.txt" && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		h.robots.write(w, r)
		if tr != nil {
			tr.OnStep(Step{Kind: StepAnswer, Status: http.StatusOK, Reason: "robots.txt"})
		}
		return
	}

	switch h.Kind {
	case HostRedirect:
		g.hostRedirect(w, r, rq, h)
		return
	case HostFixed:
		h.fixed.write(w, r)
		if tr != nil {
			tr.OnStep(Step{Kind: StepAnswer, Status: h.fixed.status, Reason: "fixed host"})
		}
		return
	}

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
	}
	if need := view.Needs &^ rt.PathAllow; need != 0 {
		if tr != nil {
			tr.OnStep(Step{Kind: StepPath, Status: http.StatusBadRequest, Reason: need.refusal()})
		}
		rq.Answer(w, r, http.StatusBadRequest)
		return
	}
	removeOwned(r.Header, rt.owned)
	if len(rt.chain.uses) > 0 && g.applyChain(&rt.chain, w, r, rq) {
		return
	}

	limit := rt.MaxBodyBytes
	if limit == 0 {
		limit = h.Limits.MaxBodyBytes
	}
	if limit > 0 {
		rq.MaxBodyBytes = limit
		if r.ContentLength > limit {
			if tr != nil {
				tr.OnStep(Step{Kind: StepLimits, Status: http.StatusRequestEntityTooLarge, Reason: "declared body over limit"})
			}
			rq.Answer(w, r, http.StatusRequestEntityTooLarge)
			return
		}
		if r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody && !rq.DryRun {
			// One allocation, only for bodies of unknown length.
			r.Body = &limitedBody{rc: r.Body, left: limit}
		}
	}

	if tr != nil {
		tr.OnStep(Step{Kind: StepHandOver, Name: rt.ID})
	}
	if rq.DryRun {
		return
	}
	rt.Target.Forward(w, r, rq)
}

// applyChain runs a chain and carries out its decision. It reports
// whether the request was answered (or dropped).
func (g *Gate) applyChain(c *chain, w http.ResponseWriter, r *http.Request, rq *Request) bool {
	d, _ := g.run(c, r, rq)
	switch d.Verdict {
	case Continue:
		return false
	case Drop:
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(Step{Kind: StepDrop, Reason: d.Reason})
		}
		if rq.DryRun {
			return true
		}
		g.state.counters.Dropped.Add(1)
		panic(http.ErrAbortHandler)
	}
	p := d.Page
	if p == nil {
		p = internalErrorPage
	}
	p.write(w, r)
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepAnswer, Status: p.status, Reason: d.Reason})
	}
	return true
}

// responseHeaders applies stage 2: Alt-Svc on TCP HTTPS for HTTP/3 hosts,
// HSTS when the trusted scheme is HTTPS and the name is neither an IP
// literal nor a loopback name.
func (g *Gate) responseHeaders(hdr http.Header, r *http.Request, rq *Request, h *Host, key []byte) {
	if h.altSvc != nil && r.TLS != nil && r.ProtoMajor < 3 && (rq.Conn == nil || !rq.Conn.HTTP3) {
		hdr["Alt-Svc"] = h.altSvc
	}
	if h.hsts != nil && rq.Scheme == schemeHTTPS && !ipOrLoopback(key) {
		hdr["Strict-Transport-Security"] = h.hsts
	}
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepHeaders, Reason: "server, alt-svc, hsts"})
	}
}

// ipOrLoopback reports whether a host key is an IP literal, localhost or
// a name under localhost.
func ipOrLoopback(key []byte) bool {
	s := key
	if len(s) == 0 {
		return true
	}
	ip := true
	for _, c := range s {
		if c == ':' {
			return true // IPv6 literal
		}
		if (c < '0' || c > '9') && c != '.' {
			ip = false
		}
	}
	if ip {
		return true
	}
	const lh = "localhost"
	return string(s) == lh || (len(s) > len(lh) && string(s[len(s)-len(lh)-1:]) == "."+lh)
}

// httpsRedirect answers a plain-HTTP request with its HTTPS location. For
// an exact host name and the request target "/", the Location is
// precomputed (no allocation); any other target costs the one string and
// its header slice.
func (g *Gate) httpsRedirect(w http.ResponseWriter, r *http.Request, rq *Request, h *Host, key []byte) {
	uri := requestURI(r)
	var loc []string
	if l := h.httpsLoc[string(key)]; l != nil {
		if uri == "/" {
			loc = l.root
		} else {
			loc = []string{l.prefix + uri}
		}
	} else {
		name := string(key)
		if strings.IndexByte(name, ':') >= 0 {
			name = "[" + name + "]"
		}
		loc = []string{"https://" + name + h.httpsPort + uri}
	}
	w.Header()["Location"] = loc
	h.httpsPage.write(w, r)
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepRedirect, Status: h.httpsPage.status, Name: loc[0], Reason: "https redirect"})
	}
}

// hostRedirect answers for a HostRedirect host.
func (g *Gate) hostRedirect(w http.ResponseWriter, r *http.Request, rq *Request, h *Host) {
	var loc []string
	switch uri := requestURI(r); {
	case h.dropLoc != nil:
		loc = h.dropLoc
	case uri == "/":
		loc = h.rootLoc
	default:
		loc = []string{h.Redirect.To + uri}
	}
	w.Header()["Location"] = loc
	h.redirPage.write(w, r)
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepRedirect, Status: h.redirPage.status, Name: loc[0]})
	}
}

// requestURI returns the request's origin-form target.
func requestURI(r *http.Request) string {
	if u := r.RequestURI; len(u) > 0 && u[0] == '/' {
		return u
	}
	return r.URL.RequestURI()
}

// matchRoute returns the first route (most specific first) whose prefix
// matches path on a segment boundary, ASCII letters in any case.
func matchRoute(routes []Route, path string) *Route {
	for i := range routes {
		if underLower(path, routes[i].lower) {
			return &routes[i]
		}
	}
	return nil
}

// headerValue returns a shared header value slice whose length equals its
// capacity, so an Add by anyone appends to a copy.
func headerValue(v string) []string { return []string{v}[:1:1] }
