package snapshot

import (
	"crypto/x509"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// host maps hosts[i] onto the gate's host and the proxy's site and
// routes, recording every problem; the gate checks the host itself when
// it is built.
func (r *run) host(i int, h *Host, s *Snapshot, upstreams map[string]bool, pols map[string]policy) gate.Host {
	at := func(field string) func() string { return func() string { return hostPath(i, field) } }
	gh := gate.Host{Names: h.Names, Server: h.Server}
	gh.Kind = name(r, at(".kind"), h.Kind, gate.ParseHostKind, gate.HostKindNames(), gate.CodeHostKindUnknown)
	kindKnown := h.Kind == "" || gh.Kind.String() == h.Kind
	kind := gh.Kind.String()
	if h.Redirect != nil {
		if kindKnown && gh.Kind != gate.HostRedirect {
			r.add(CodeHostRedirectUnexpected, at(".redirect")(), "a redirect block on a "+kind+" host")
		}
		gh.Redirect = gate.Redirect{To: h.Redirect.To, Status: h.Redirect.Status, DropPath: h.Redirect.DropPath}
	} else if gh.Kind == gate.HostRedirect {
		r.add(CodeHostRedirectMissing, at(".redirect")(), "a redirect host needs a redirect block")
	}
	if h.Fixed != nil {
		if kindKnown && gh.Kind != gate.HostFixed {
			r.add(CodeHostFixedUnexpected, at(".fixed")(), "a fixed block on a "+kind+" host")
		}
		gh.Fixed = answer(h.Fixed)
	} else if gh.Kind == gate.HostFixed {
		r.add(CodeHostFixedMissing, at(".fixed")(), "a fixed host needs a fixed block")
	}
	switch {
	case kindKnown && gh.Kind == gate.HostProxy && len(h.Routes) == 0:
		r.add(CodeHostRoutesEmpty, at(".routes")(), "a proxy host needs at least one route")
	case kindKnown && gh.Kind != gate.HostProxy && len(h.Routes) > 0:
		r.add(CodeHostRoutesUnexpected, at(".routes")(), "a "+kind+" host has no routes")
	}

	if h.AccessList != "" {
		switch p, ok := pols[h.AccessList]; {
		case !ok || !p.accessList:
			r.add(CodeHostAccessListUnknown, at(".accessList")(), "unknown access list "+quote(h.AccessList))
		case p.use.Policy != nil:
			gh.Policies = append(gh.Policies, p.use)
		}
	}
	gh.Policies = r.chain(gh.Policies, h.Policies, pols, CodeHostPolicyUnknown, func(k int) string { return hostPath(i, index(".policies", k)) })

	if t := h.TLS; t != nil && h.Certificate == "" && r.doc.Global.TLS.DefaultCertificate == "" {
		// No handshake is ever made for the host: its policy could
		// neither be asked of clients nor re-checked against a
		// handshake of its own.
		r.add(CodeHostTLSUnused, at(".tls")(), "a tls block on a host served over plain HTTP only (no certificate, and no global.tls.defaultCertificate)")
	} else if t != nil {
		gh.TLS = gate.TLSPolicy{HTTP1Only: t.HTTP1Only, HTTP3: t.HTTP3, AltSvc: t.AltSvc}
		gh.TLS.MinVersion = name(r, at(".tls.minVersion"), t.MinVersion, gate.ParseTLSVersion, gate.TLSVersionNames(), gate.CodeHostTLSMinVersionInvalid)
		// The names are tlsselect's; the roots are the ones its
		// handshake verifies against, so that a request is checked
		// against its own host's pool whatever connection it came on.
		switch tlsselect.ClientAuth(t.ClientAuth) {
		case tlsselect.ClientAuthRequired:
			gh.TLS.RequireClientCert, gh.TLS.ClientCAs = true, r.casOf(i)
		case tlsselect.ClientAuthOptional:
			gh.TLS.ClientCAs = r.casOf(i)
		}
	}
	if hs := h.HSTS; hs != nil {
		gh.HSTS = gate.HSTS{MaxAge: r.duration(at(".hsts.maxAge"), hs.MaxAge), IncludeSubdomains: hs.IncludeSubdomains, Preload: hs.Preload}
		if hs.MaxAge == "" {
			r.add(CodeHostHSTSMaxAgeMissing, at(".hsts.maxAge")(), "an hsts block needs a max-age")
		}
	}
	if rd := h.HTTPSRedirect; rd != nil {
		gh.HTTPSRedirect = gate.HTTPSRedirect{Enabled: true, Status: rd.Status, Port: rd.Port}
	}
	if h.Robots != "" {
		gh.Robots = []byte(h.Robots)
	}
	gh.NoAccessLog = h.AccessLog != nil && !*h.AccessLog
	if l := h.Limits; l != nil {
		gh.Limits = gate.Limits{MaxURIBytes: l.MaxURIBytes, MaxHeaderCount: l.MaxHeaderCount,
			MaxHeaderBytes: l.MaxHeaderBytes, MaxBodyBytes: int64(l.MaxBodyBytes)}
	}

	site := r.site(i, h, kindKnown && gh.Kind != gate.HostProxy)
	if site != nil && (h.RequestID != "" || len(h.Headers.Response) > 0) {
		gh.AnswerHeaders = site
	}
	if gh.Kind == gate.HostProxy {
		gh.Routes = make([]gate.Route, len(h.Routes))
		for j := range h.Routes {
			gh.Routes[j] = r.route(i, j, &h.Routes[j], s, site, upstreams, pols)
		}
	}
	return gh
}

// casOf returns the client CA roots read for hosts[i], or nil.
func (r *run) casOf(i int) []*x509.Certificate {
	if i < len(r.hostCAs) {
		return r.hostCAs[i]
	}
	return nil
}

// chain resolves policy IDs onto uses after head; an unknown ID is
// recorded with code at path(k), one whose policy has problems of its own
// is left out.
func (r *run) chain(head []gate.PolicyUse, ids []string, pols map[string]policy, code string, path func(k int) string) []gate.PolicyUse {
	for k, id := range ids {
		p, ok := pols[id]
		switch {
		case !ok:
			r.add(code, path(k), "unknown policy "+quote(id))
		case p.use.Policy != nil:
			head = append(head, p.use)
		}
	}
	return head
}

// site maps a host's forwarding settings onto the proxy's site. A host
// that forwards nothing (redirect, fixed) takes only the settings of its
// own answers: the response rules and the request ID.
func (r *run) site(i int, h *Host, answersOnly bool) *proxy.Site {
	cfg := proxy.SiteConfig{
		RequestHeaders:  r.headerRules(h.Headers.Request, func(k int) string { return hostPath(i, index(".headers.request", k)) }),
		ResponseHeaders: r.headerRules(h.Headers.Response, func(k int) string { return hostPath(i, index(".headers.response", k)) }),
		Compression: proxy.Compression{
			Enabled:     h.Compression.Enabled,
			MinimumSize: int64(h.Compression.MinimumSize),
			Encodings:   h.Compression.Encodings,
		},
		KeepUnderscoreHeaders: h.KeepUnderscoreHeaders,
	}
	cfg.RequestID = name(r, func() string { return hostPath(i, ".requestId") }, h.RequestID,
		proxy.ParseRequestIDMode, proxy.RequestIDModeNames(), proxy.CodeSiteRequestIDUnknown)
	if answersOnly {
		for _, f := range [...]struct {
			field string
			set   bool
		}{
			{".headers.request", len(h.Headers.Request) > 0},
			{".compression", h.Compression.Enabled || h.Compression.MinimumSize != 0 || len(h.Compression.Encodings) > 0},
			{".keepUnderscoreHeaders", h.KeepUnderscoreHeaders},
		} {
			if f.set {
				r.add(CodeHostForwardingUnused, hostPath(i, f.field), "a host that forwards nothing takes no "+f.field[1:])
			}
		}
	}
	site, err := proxy.NewSite(cfg)
	r.under(hostPath(i, ""), err, sitePath)
	return site
}

func sitePath(p string) string { return renameHead(headerPath(p), "requestID", "requestId") }

// headerRules maps a list of header rules onto the proxy's; an unknown
// operation is recorded at path(k), and the rule checked for the rest as
// a set, or a remove when it has no value.
func (r *run) headerRules(rules []HeaderRule, path func(k int) string) []proxy.HeaderRule {
	if len(rules) == 0 {
		return nil
	}
	out := make([]proxy.HeaderRule, len(rules))
	for k, hr := range rules {
		op, ok := proxy.ParseHeaderOp(hr.Operation)
		if !ok && hr.Operation != "" {
			r.add(proxy.CodeHeaderOpInvalid, path(k)+".operation", "unknown operation "+quote(hr.Operation)+" (want "+joinNames(proxy.HeaderOpNames())+")")
			if hr.Value == "" {
				op = proxy.HeaderRemove
			}
		}
		out[k] = proxy.HeaderRule{Name: hr.Name, Op: op, Value: hr.Value}
	}
	return out
}

// route maps hosts[i].routes[j] onto the gate's route and the proxy's
// target.
func (r *run) route(i, j int, rt *Route, s *Snapshot, site *proxy.Site, upstreams map[string]bool, pols map[string]policy) gate.Route {
	at := func(field string) string { return routePath(i, j, field) }
	h := &r.doc.Hosts[i]
	if rt.ID != "" {
		if !validID(rt.ID) {
			r.add(CodeRouteIDInvalid, at(".id"), quote(rt.ID)+": "+idRule)
		} else {
			for k := range j {
				if h.Routes[k].ID == rt.ID {
					r.add(CodeRouteIDDuplicate, at(".id"), quote(rt.ID)+" is also routes["+itoa(k)+"]")
					break
				}
			}
		}
	}
	gr := gate.Route{ID: rt.ID, Prefix: rt.Path, MaxBodyBytes: int64(rt.MaxBodyBytes)}
	for k, n := range rt.AllowInPath {
		a, ok := gate.ParsePathAllow(n)
		switch {
		case !ok:
			r.add(gate.CodeRoutePathAllowUnknown, at(index(".allowInPath", k)), "unknown path allowance "+quote(n)+" (want one of "+joinNames(gate.PathAllowNames())+")")
		case gr.PathAllow&a != 0:
			r.add(CodeRouteAllowInPathDuplicate, at(index(".allowInPath", k)), quote(n)+" is listed twice")
		}
		gr.PathAllow |= a
	}
	gr.Policies = r.chain(nil, rt.Policies, pols, CodeRoutePolicyUnknown, func(k int) string { return at(index(".policies", k)) })

	cluster := s.clusters[rt.Upstream]
	switch {
	case rt.Upstream == "":
		r.add(CodeRouteUpstreamMissing, at(".upstream"), "a route needs an upstream")
	case !upstreams[rt.Upstream]:
		r.add(CodeRouteUpstreamUnknown, at(".upstream"), "unknown upstream "+quote(rt.Upstream))
	}
	if cluster == nil {
		// The document is refused; the route's own settings are still
		// checked.
		cluster = r.c.placeholderCluster()
	}
	cfg := proxy.RouteConfig{
		Cluster:         cluster,
		Site:            site,
		HostName:        rt.HostName,
		RequestHeaders:  r.headerRules(rt.Headers.Request, func(k int) string { return at(index(".headers.request", k)) }),
		ResponseHeaders: r.headerRules(rt.Headers.Response, func(k int) string { return at(index(".headers.response", k)) }),
		Retry:           proxy.Retry{Attempts: rt.Retry.Attempts, BodyLimit: int64(rt.Retry.BodyLimit), Budget: rt.Retry.Budget},
		Rewrite: proxy.Rewrite{
			AddPrefix:    rt.Rewrite.AddPrefix,
			KeepLocation: rt.Rewrite.RewriteLocation != nil && !*rt.Rewrite.RewriteLocation,
		},
	}
	cfg.HostHeader = name(r, func() string { return at(".hostHeader") }, rt.HostHeader,
		proxy.ParseHostHeader, proxy.HostHeaderNames(), proxy.CodeRouteHostHeaderUnknown)
	if rt.Rewrite.StripPrefix && gate.CheckPrefix(rt.Path) == nil {
		// The route "/" strips "/", which the proxy refuses: there is no
		// prefix to strip. An invalid path is the gate's to report.
		cfg.Rewrite.StripPrefix = cmpOr(routeKey(rt.Path), "/")
	}
	target, err := proxy.NewRoute(cfg)
	r.under(at(""), err, headerPath)
	if target == nil {
		gr.Target = notServed
	} else {
		gr.Target = target
	}
	return gr
}

// routeKey returns the prefix a valid route path matches: "" for "/" and
// the empty path, and no trailing slash ("/api/" is "/api").
func routeKey(p string) string {
	if len(p) > 0 && p[len(p)-1] == '/' {
		return p[:len(p)-1]
	}
	return p
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
