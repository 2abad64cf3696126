package snapshot

import (
	"cmp"
	"crypto/x509"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// host maps hosts[i] onto the gate's host and the proxy's site and
// routes, recording every problem: the document's own from the checker,
// then the owners'; the gate checks the host itself when it is built.
func (r *run) host(i int, h *config.Host, s *Snapshot, pols map[string]policy) gate.Host {
	r.check.Host(i)
	at := func(field string) func() string { return func() string { return hostPath(i, field) } }
	gh := gate.Host{Names: h.Names, Server: h.Server}
	gh.Kind = name(r, at(".kind"), h.Kind, gate.ParseHostKind, gate.HostKindNames(), gate.CodeHostKindUnknown)
	if h.Redirect != nil {
		gh.Redirect = gate.Redirect{To: h.Redirect.To, Status: h.Redirect.Status, DropPath: h.Redirect.DropPath}
	}
	if h.Fixed != nil {
		gh.Fixed = answer(h.Fixed)
	}

	if p, ok := pols[h.AccessList]; ok && p.accessList && p.use.Policy != nil {
		gh.Policies = append(gh.Policies, p.use)
	}
	gh.Policies = chain(gh.Policies, h.Policies, pols)

	if t := h.TLS; t != nil && (h.Certificate != "" || r.doc.Global.TLS.DefaultCertificate != "") {
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
		gh.HSTS = gate.HSTS{MaxAge: duration(hs.MaxAge), IncludeSubdomains: hs.IncludeSubdomains, Preload: hs.Preload}
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

	site := r.site(i, h)
	if site != nil && (h.RequestID != "" || len(h.Headers.Response) > 0) {
		gh.AnswerHeaders = site
	}
	if gh.Kind == gate.HostProxy {
		gh.Routes = make([]gate.Route, len(h.Routes))
		for j := range h.Routes {
			gh.Routes[j] = r.route(i, j, &h.Routes[j], s, site, pols)
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

// chain resolves policy IDs onto uses after head; an unknown ID (which
// the checker reports) or one whose policy has problems of its own is left
// out.
func chain(head []gate.PolicyUse, ids []string, pols map[string]policy) []gate.PolicyUse {
	for _, id := range ids {
		if p := pols[id]; p.use.Policy != nil {
			head = append(head, p.use)
		}
	}
	return head
}

// site maps a host's forwarding settings onto the proxy's site. A host
// that forwards nothing (redirect, fixed) takes only the settings of its
// own answers: the response rules and the request ID (the checker reports
// the others).
func (r *run) site(i int, h *config.Host) *proxy.Site {
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
	site, err := proxy.NewSite(cfg)
	r.under(hostPath(i, ""), err, sitePath)
	return site
}

func sitePath(p string) string { return renameHead(headerPath(p), "requestID", "requestId") }

// headerRules maps a list of header rules onto the proxy's; an unknown
// operation is recorded at path(k), and the rule checked for the rest as
// a set, or a remove when it has no value.
func (r *run) headerRules(rules []config.HeaderRule, path func(k int) string) []proxy.HeaderRule {
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
func (r *run) route(i, j int, rt *config.Route, s *Snapshot, site *proxy.Site, pols map[string]policy) gate.Route {
	at := func(field string) string { return routePath(i, j, field) }
	gr := gate.Route{ID: rt.ID, Prefix: rt.Path, MaxBodyBytes: int64(rt.MaxBodyBytes)}
	r.routeMatch(i, j, rt, &gr)
	for k, n := range rt.AllowInPath {
		a, ok := gate.ParsePathAllow(n)
		if !ok {
			r.add(gate.CodeRoutePathAllowUnknown, at(index(".allowInPath", k)), "unknown path allowance "+quote(n)+" (want one of "+joinNames(gate.PathAllowNames())+")")
		}
		gr.PathAllow |= a
	}
	gr.Policies = chain(nil, rt.Policies, pols)
	if rt.Redirect != nil || rt.Fixed != nil {
		r.routeAnswer(i, j, rt, site, &gr)
		return gr
	}

	cfg := proxy.RouteConfig{
		Site:            site,
		HostName:        rt.HostName,
		RequestHeaders:  r.headerRules(rt.Headers.Request, func(k int) string { return at(index(".headers.request", k)) }),
		ResponseHeaders: r.headerRules(rt.Headers.Response, func(k int) string { return at(index(".headers.response", k)) }),
		Retry: proxy.Retry{Attempts: rt.Retry.Attempts, BodyLimit: int64(rt.Retry.BodyLimit), Budget: rt.Retry.Budget,
			ConnectFailures: r.connectFailures(func() string { return at(".retry.connectFailures") }, rt.Retry.ConnectFailures)},
		Rewrite: proxy.Rewrite{
			AddPrefix:    rt.Rewrite.AddPrefix,
			KeepLocation: rt.Rewrite.RewriteLocation != nil && !*rt.Rewrite.RewriteLocation,
			Template:     rt.Rewrite.Template,
		},
	}
	r.routeFilters(rt, &gr, &cfg)
	cfg.HostHeader = name(r, func() string { return at(".hostHeader") }, rt.HostHeader,
		proxy.ParseHostHeader, proxy.HostHeaderNames(), proxy.CodeRouteHostHeaderUnknown)
	if rt.Rewrite.StripPrefix && (gr.PathType == gate.PathPrefix || gr.PathType == gate.PathExact) && gate.CheckPrefix(rt.Path) == nil {
		// The route "/" strips "/", which the proxy refuses: there is no
		// prefix to strip. An invalid path is the gate's to report.
		cfg.Rewrite.StripPrefix = cmp.Or(config.RoutePrefix(rt.Path), "/")
	}
	key := routeKey{host: firstName(&r.doc.Hosts[i]), route: gate.RouteLabel(&gr)}
	cfg.Mirror = r.mirror(i, j, rt, s, key)
	var target gate.Target
	if len(rt.Backends) > 0 {
		if sp := r.split(i, j, rt, s, cfg, key); sp != nil {
			target = sp
		}
	} else {
		cfg.Cluster = r.clusterOf(s, rt.Upstream)
		if t, err := proxy.NewRoute(cfg); t != nil {
			target = t
		} else {
			r.under(at(""), err, headerPath)
		}
	}
	if target == nil {
		gr.Target = notServed
	} else {
		gr.Target = target
	}
	return gr
}

// routeMatch maps a route's path type, matches and order onto the gate's
// route; the gate checks them when it is built.
func (r *run) routeMatch(i, j int, rt *config.Route, gr *gate.Route) {
	at := func(field string) func() string { return func() string { return routePath(i, j, field) } }
	gr.PathType = name(r, at(".pathType"), rt.PathType, gate.ParsePathType, gate.PathTypeNames(), gate.CodeRoutePathTypeUnknown)
	gr.Order = rt.Order
	m := &rt.Match
	gr.Match.Methods = m.Methods
	for k, hm := range m.Headers {
		t := name(r, at(index(".match.headers", k)+".type"), hm.Type, gate.ParseHeaderMatchType, gate.HeaderMatchTypeNames(), gate.CodeRouteMatchHeaderTypeUnknown)
		gr.Match.Headers = append(gr.Match.Headers, gate.HeaderMatch{Name: hm.Name, Type: t, Value: hm.Value})
	}
	for k, qm := range m.Query {
		t := name(r, at(index(".match.query", k)+".type"), qm.Type, gate.ParseQueryMatchType, gate.QueryMatchTypeNames(), gate.CodeRouteMatchQueryTypeUnknown)
		gr.Match.Query = append(gr.Match.Query, gate.QueryMatch{Name: qm.Name, Type: t, Value: qm.Value})
	}
}
