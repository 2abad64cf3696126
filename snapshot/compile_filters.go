package snapshot

import (
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
)

// A route's filters and its own answers: the rewrite's replaced prefix,
// path and query, its timeouts, and a redirect or fixed answer in place
// of an upstream.

// routeFilters maps a forwarding route's replaced prefix, path, query
// and timeouts onto the proxy's route config. A replaced prefix takes
// the route's path off as stripPrefix does (config refuses it on other
// path types and with stripPrefix).
func (r *run) routeFilters(rt *config.Route, gr *gate.Route, cfg *proxy.RouteConfig) {
	rw := &rt.Rewrite
	cfg.Rewrite.Path = rw.Path
	cfg.Rewrite.Query = proxy.QueryRewrite{Set: rw.Query.Set, Add: rw.Query.Add, Remove: rw.Query.Remove}
	if rw.ReplacePrefix != "" && gr.PathType == gate.PathPrefix && gate.CheckPrefix(rt.Path) == nil {
		cfg.Rewrite.ReplacePrefix = rw.ReplacePrefix
		if p := config.RoutePrefix(rt.Path); p != "" && p != "/" {
			cfg.Rewrite.StripPrefix = p
		}
	}
	cfg.Timeouts = proxy.Timeouts{Request: duration(rt.Timeouts.Request), PerTry: duration(rt.Timeouts.PerTry)}
}

// routeAnswer maps a route's redirect or fixed answer onto the gate's
// route, with the route's response header rules (over its host's) as
// the answer's headers.
func (r *run) routeAnswer(i, j int, rt *config.Route, site *proxy.Site, gr *gate.Route) {
	if rd := rt.Redirect; rd != nil {
		gr.Redirect = &gate.RouteRedirect{Scheme: rd.Scheme, Host: rd.Host, Port: rd.Port, Path: rd.Path, Prefix: rd.Prefix, Status: rd.Status}
	}
	if rt.Fixed != nil {
		a := answer(rt.Fixed)
		gr.Fixed = &a
	}
	rules := r.headerRules(rt.Headers.Response, func(k int) string { return routePath(i, j, index(".headers.response", k)) })
	ah, err := proxy.NewAnswerRules(site, rules)
	r.under(routePath(i, j, ""), err, headerPath)
	if ah != nil {
		gr.AnswerHeaders = ah
	}
}
