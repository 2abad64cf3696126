package gate

import (
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/ipaddr"
)

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
	for i, p := range cfg.TrustedProxies {
		if err := ipaddr.CheckPrefix(p); err != nil {
			fail("trustedProxies[%d]: %v", i, err)
		}
	}
	for i, p := range cfg.ProbeSources {
		if err := ipaddr.CheckPrefix(p); err != nil {
			fail("probeSources[%d]: %v", i, err)
		}
	}
	g.trusted = ipaddr.NewPrefixSet(cfg.TrustedProxies)
	g.probes = ipaddr.NewPrefixSet(cfg.ProbeSources)
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
