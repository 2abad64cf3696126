package gate

import (
	"cmp"
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/hostname"
	"github.com/paduraksa/paduraksa/internal/ipaddr"
	"github.com/paduraksa/paduraksa/internal/problem"
	"golang.org/x/net/http/httpguts"
)

// New validates cfg and builds a Gate. It returns every problem of cfg at
// once, each a [ValidationError] with a path relative to cfg, and copies
// what it keeps. Host names are canonicalised with [CanonicalHostName]; a
// name used twice is an error.
func New(cfg Config) (*Gate, error) {
	g := &Gate{
		hosts:      newHostTable(cfg),
		trustProto: cfg.TrustForwardedProto,
		cloudflare: cfg.Cloudflare,
		challenges: cfg.Challenges,
		state:      cfg.State,
		logger:     cfg.Logger,
		tracer:     cfg.Tracer,
		observer:   cfg.Observer,
		answerHook: cfg.Answer,
		accessLog:  cfg.AccessLog,
		compiled:   make([]*Host, len(cfg.Hosts), len(cfg.Hosts)+len(cfg.Reuse)),
	}
	if g.state == nil {
		g.state = new(State)
	}
	if g.tracer != nil && g.tracer.OnStep == nil {
		g.tracer = nil // a zero Tracer: nothing to report to
	}
	var errs problem.List
	switch g.maxPasswordChecks = cfg.MaxPasswordChecks; {
	case g.maxPasswordChecks == 0:
		g.maxPasswordChecks = max(1, runtime.GOMAXPROCS(0)/2)
	case g.maxPasswordChecks < 0:
		errs.Add(CodeMaxPasswordChecksInvalid, "maxPasswordChecks", "negative (0 means half the CPUs)")
	}
	if cfg.HTTPSPort < 0 || cfg.HTTPSPort > 65535 {
		errs.Add(CodeHTTPSPortInvalid, "httpsPort", "port "+strconv.Itoa(cfg.HTTPSPort)+" is not 1-65535 (0 means 443)")
	}
	httpsPort := cmp.Or(cfg.HTTPSPort, DefaultHTTPSPort)
	checkPrefixes(&errs, "trustedProxies", cfg.TrustedProxies)
	checkPrefixes(&errs, "probeSources", cfg.ProbeSources)
	g.trusted = ipaddr.NewPrefixSet(cfg.TrustedProxies)
	g.probes = ipaddr.NewPrefixSet(cfg.ProbeSources)
	checkHeaderValue(&errs, CodeServerInvalid, "server", cfg.Server)
	g.defServer = headerValue(cmpOr(cfg.Server, DefaultServer))
	answers := answerCache{}
	servers := map[string][]string{g.defServer[0]: g.defServer}
	g.defaultAnswers = answers.get(g.defServer)
	def := cfg.Default
	if def.Status == 0 {
		def.Status = DefaultAnswerStatus
		if def.Body == nil {
			def.Body = []byte("not found\n")
		}
	}
	checkAnswer(&errs, "default", def)
	g.def = newAnswer(def, g.defServer)

	for i, h := range cfg.Reuse {
		// Compiled by an earlier Gate from an equal config: its names go
		// into this table as they are.
		g.compiled = append(g.compiled, h)
		for j, n := range h.Names {
			if !g.hosts.add(n, h) {
				errs.Add(CodeHostNameDuplicate, problem.Index(problem.Index("reuse", i)+".names", j), strconv.Quote(n)+" is used twice")
			}
		}
	}
	for i := range cfg.Hosts {
		h := new(Host)
		g.compiled[i] = h
		*h = cfg.Hosts[i]
		h.Names = slices.Clone(h.Names)
		h.Routes = slices.Clone(h.Routes)
		at := problem.Index("hosts", i)
		h.server = g.defServer
		if h.Server != "" {
			checkHeaderValue(&errs, CodeServerInvalid, at+".server", h.Server)
			if h.server = servers[h.Server]; h.server == nil {
				h.server = headerValue(h.Server)
				servers[h.Server] = h.server
			}
		}
		h.answers = answers.get(h.server)
		if len(h.Names) == 0 {
			errs.Add(CodeHostNamesEmpty, at+".names", "a host needs at least one name")
		}
		for j, n := range h.Names {
			canon, _, err := CanonicalHostName(n)
			if hostname.IsCatchAll(n) {
				canon, err = CatchAll, nil
			}
			if err != nil {
				errs.Add(CodeHostNameInvalid, problem.Index(at+".names", j), strconv.Quote(n)+": "+err.Error())
				continue
			}
			h.Names[j] = canon
			if !g.hosts.add(canon, h) {
				msg := strconv.Quote(n) + " is used twice"
				if canon == CatchAll {
					msg += ": a gate has at most one catch-all host"
				}
				errs.Add(CodeHostNameDuplicate, problem.Index(at+".names", j), msg)
			}
		}
		if len(h.Names) > 0 {
			h.firstName = h.Names[0]
		}
		h.scopeKey = scopeKeyOf(h.firstName)
		h.compileCommon(&errs, at, httpsPort)
		h.chain = compileChain(&errs, at+".policies", ScopeHost, h.Policies)
		h.owned = ownedHeaders(h.Policies)
		switch h.Kind {
		case HostProxy:
			for j := range h.Routes {
				n := len(errs)
				compileRoute(&errs, problem.Index(at+".routes", j), h, &h.Routes[j], j)
				h.Routes[j].matcher.invalid = len(errs) > n
			}
			h.orderRoutes(&errs, at)
		case HostRedirect:
			if h.Redirect.Status == 0 {
				h.Redirect.Status = DefaultRedirectStatus
			}
			switch h.Redirect.Status {
			case 301, 302, 303, 307, 308:
			default:
				errs.Add(CodeHostRedirectStatusInvalid, at+".redirect.status", "status "+strconv.Itoa(h.Redirect.Status)+" is not 301, 302, 303, 307 or 308")
			}
			if reason := checkRedirectTo(h.Redirect.To, h.Redirect.DropPath); reason != "" {
				errs.Add(CodeHostRedirectToInvalid, at+".redirect.to", strconv.Quote(h.Redirect.To)+": "+reason)
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
				h.Fixed.Status = DefaultFixedStatus
			}
			checkAnswer(&errs, at+".fixed", h.Fixed)
			h.fixed = newAnswer(h.Fixed, h.server)
		default:
			errs.Add(CodeHostKindUnknown, at+".kind", "unknown host kind "+h.Kind.String()+" (want "+hostKindNames.List()+")")
		}
	}
	g.redirectLoops(&errs, cfg.Hosts)
	g.routeRedirectLoops(&errs, cfg.Hosts, httpsPort)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	g.attachMetrics(g.compiled[:len(cfg.Hosts)])
	return g, nil
}

// compileRoute checks and precomputes one route of h; at is its path, j
// its index.
func compileRoute(errs *problem.List, at string, h *Host, rt *Route, j int) {
	compileAnswer(errs, at, h, rt)
	switch t := rt.Target.(type) {
	case nil:
		if rt.Redirect == nil && rt.Fixed == nil {
			errs.Add(CodeRouteTargetMissing, at+".target", "a route needs a target, a redirect or a fixed answer")
		}
	case TargetChecker:
		if err := t.CheckTarget(); err != nil {
			errs.Add(CodeRouteTargetMissing, at+".target", "the target cannot serve")
			errs.Under(at+".target", CodeRouteTargetMissing, err)
		}
	}
	if ah, ok := rt.Target.(AnswerHeaders); ok {
		rt.answerHeaders = ah
	}
	if rt.AnswerHeaders != nil {
		rt.answerHeaders = rt.AnswerHeaders
	}
	rt.chain = compileChain(errs, at+".policies", ScopeRoute, rt.Policies)
	rt.owned = ownedHeaders(rt.Policies)
	n := len(*errs)
	compileMatch(errs, at, rt, j)
	if len(*errs) == n {
		checkPathValues(errs, at, rt) // on a path without problems of its own
	}
	if rt.PathAllow&^pathAllowAll != 0 {
		errs.Add(CodeRoutePathAllowUnknown, at+".pathAllow", "unknown path allowance "+strconv.Itoa(int(rt.PathAllow&^pathAllowAll)))
	}
	if rt.MaxBodyBytes < 0 {
		errs.Add(CodeRouteMaxBodyBytesInvalid, at+".maxBodyBytes", "negative (0 means the host's limit)")
	}
	key := rt.Prefix + "/"
	if !rt.plain() {
		key = strconv.Itoa(rt.Order) + "\x00" + rt.matchKey()
	}
	rt.scopeKey = scopeKeyOf(h.firstName, "route", cmpOr(rt.ID, key))
}

// compileCommon checks and precomputes a host's TLS, HSTS, HTTPS redirect,
// robots and limits; at is its path, httpsPort the gate's public HTTPS
// port (Config.HTTPSPort with its default).
func (h *Host) compileCommon(errs *problem.List, at string, httpsPort int) {
	if !knownTLSVersion(h.TLS.MinVersion) {
		errs.Add(CodeHostTLSMinVersionInvalid, at+".tls.minVersion", "TLS version "+strconv.Itoa(int(h.TLS.MinVersion))+" is not one of "+strings.Join(TLSVersionNames(), ", "))
	}
	if h.TLS.AltSvc != "" {
		switch {
		case !h.TLS.HTTP3:
			errs.Add(CodeHostTLSAltSvcInvalid, at+".tls.altSvc", "Alt-Svc is only sent for HTTP/3 hosts")
		case !httpguts.ValidHeaderFieldValue(h.TLS.AltSvc):
			errs.Add(CodeHostTLSAltSvcInvalid, at+".tls.altSvc", "not a valid header value")
		}
	}
	h.compileClientCAs(errs, at)
	if h.TLS.HTTP3 {
		h.altSvc = headerValue(cmpOr(h.TLS.AltSvc, AltSvcFor(httpsPort)))
	}
	if m := h.HSTS.MaxAge; m < 0 || (m > 0 && m < time.Second) {
		errs.Add(CodeHostHSTSMaxAgeInvalid, at+".hsts.maxAge", "max-age "+m.String()+" is negative or under a second (0 sends no header)")
	}
	if h.HSTS.MaxAge >= time.Second {
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
			rd.Status = DefaultRedirectStatus
		}
		switch rd.Status {
		case 301, 302, 307, 308:
		default:
			errs.Add(CodeHostHTTPSRedirectStatusInvalid, at+".httpsRedirect.status", "status "+strconv.Itoa(rd.Status)+" is not 301, 302, 307 or 308")
		}
		if rd.Port < 0 || rd.Port > 65535 {
			errs.Add(CodeHostHTTPSRedirectPortInvalid, at+".httpsRedirect.port", "port "+strconv.Itoa(rd.Port)+" is not 1-65535 (0 means the gate's httpsPort)")
		}
		if port := cmp.Or(rd.Port, httpsPort); port != DefaultHTTPSPort {
			h.httpsPort = ":" + strconv.Itoa(port)
		}
		h.httpsLoc = map[string]*location{}
		for _, n := range h.Names {
			if strings.HasPrefix(n, "*") { // a wildcard or the catch-all: the Location names the request's host
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
		if len(h.Robots) > MaxAnswerBody {
			errs.Add(CodeAnswerBodyTooLarge, at+".robots", strconv.Itoa(len(h.Robots))+" bytes; at most "+strconv.Itoa(MaxAnswerBody))
		}
		h.robots = NewPage(http.StatusOK, DefaultContentType, h.Robots, nil)
	}
	l := &h.Limits
	for _, f := range [...]struct {
		name string
		v    int64
	}{{"maxUriBytes", int64(l.MaxURIBytes)}, {"maxHeaderCount", int64(l.MaxHeaderCount)}, {"maxHeaderBytes", int64(l.MaxHeaderBytes)}, {"maxBodyBytes", l.MaxBodyBytes}} {
		if f.v < 0 {
			errs.Add(CodeHostLimitsInvalid, at+".limits."+f.name, "negative (0 means no limit)")
		}
	}
}

func compileChain(errs *problem.List, at string, scope Scope, uses []PolicyUse) chain {
	c := chain{scope: scope, uses: slices.Clone(uses)}
	for i, u := range c.uses {
		switch p := u.Policy.(type) {
		case nil:
			errs.Add(CodeChainPolicyMissing, problem.Index(at, i), "a policy use without a policy")
		case builtIn:
			p.checkBuilt(errs, problem.Index(at, i))
		}
		if !modeNames.Known(u.Mode) {
			errs.Add(CodeChainModeUnknown, problem.Index(at, i)+".mode", "unknown mode "+u.Mode.String()+" (want "+modeNames.List()+")")
		}
	}
	return c
}

// builtIn is implemented by the built-in policies, which their
// constructors build: a zero or nil one (a &RateLimit{} written by hand)
// has no table, page or rules to decide with, and New refuses it rather
// than fail its first request.
type builtIn interface {
	// checkBuilt records why the policy cannot decide at at, if it
	// cannot.
	checkBuilt(errs *problem.List, at string)
}

// notBuilt records a built-in policy its constructor did not make.
func notBuilt(errs *problem.List, at, typ, constructor string) {
	errs.Add(CodeChainPolicyMissing, at, "a *gate."+typ+" not made by "+constructor+" (its zero value decides nothing)")
}

// redirectLoops refuses redirect hosts whose target comes back to them,
// directly or through other redirect hosts: every request would loop.
// Targets are looked up in the host table as a Host header is.
func (g *Gate) redirectLoops(errs *problem.List, hosts []Host) {
	var buf [maxHostLen]byte
	target := func(h *Host) *Host {
		if h.Kind != HostRedirect {
			return nil
		}
		u, err := url.Parse(h.Redirect.To)
		if err != nil || u.Host == "" {
			return nil
		}
		next, _, _ := g.hosts.lookup(buf[:0], u.Host)
		return next
	}
	for i := range hosts {
		h := g.compiled[i]
		at := h
		for range len(g.compiled) {
			if at = target(at); at == nil {
				break
			}
			if at == h {
				errs.Add(CodeHostRedirectToLoop, problem.Index("hosts", i)+".redirect.to", strconv.Quote(hosts[i].Redirect.To)+" leads back to this host: every request would be redirected forever")
				break
			}
		}
	}
}

// CheckRedirectTarget reports whether to can be a redirect host's target
// ([Redirect.To]): an absolute http or https URL with a host, without user
// info or a fragment, and without a query unless the path is dropped. New
// refuses a redirect host whose target fails it.
func CheckRedirectTarget(to string, dropPath bool) error {
	if reason := checkRedirectTo(to, dropPath); reason != "" {
		return errors.New("gate: redirect target " + strconv.Quote(to) + ": " + reason)
	}
	return nil
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
	} else if _, wildcard, err := CanonicalHostName(host); err != nil || wildcard {
		return "invalid host " + strconv.Quote(host)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 || p[0] == '0' {
			return "invalid port " + strconv.Quote(p)
		}
	}
	return ""
}

// checkAnswer checks an answer the gate gives itself; at is its path.
func checkAnswer(errs *problem.List, at string, a Answer) {
	if !validStatus(a.Status) {
		errs.Add(CodeAnswerStatusInvalid, at+".status", "status "+strconv.Itoa(a.Status)+" is not 200-599")
	}
	checkHeaderValue(errs, CodeAnswerContentTypeInvalid, at+".contentType", a.ContentType)
	if len(a.Body) > MaxAnswerBody {
		errs.Add(CodeAnswerBodyTooLarge, at+".body", strconv.Itoa(len(a.Body))+" bytes; at most "+strconv.Itoa(MaxAnswerBody))
	}
}

func checkHeaderValue(errs *problem.List, code, at, v string) {
	if v != "" && !httpguts.ValidHeaderFieldValue(v) {
		errs.Add(code, at, "not a valid header value")
	}
}

func checkPrefixes(errs *problem.List, at string, ps []netip.Prefix) {
	for i, p := range ps {
		if err := ipaddr.CheckPrefix(p); err != nil {
			errs.Add(CodePrefixInvalid, problem.Index(at, i), err.Error())
		}
	}
}

func validStatus(s int) bool { return s >= 200 && s <= 599 }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
