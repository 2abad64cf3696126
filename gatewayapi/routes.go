package gatewayapi

import (
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/paduraksa/paduraksa/config"
)

// attachment is an HTTPRoute attached to a listener for one hostname.
type attachment struct {
	route    *gwv1.HTTPRoute
	l        *listener
	hostname string // the hostname requests must have: "" any, "*.example.com" or an exact name
	at       string // the parentRef's path
}

// ruleKey names a rule of a route.
type ruleKey struct {
	route *gwv1.HTTPRoute
	index int
}

// rule is one rule of a route, translated once whatever the hosts it
// serves: a route of the document per match, or a redirect to HTTPS.
type rule struct {
	path   string // "HTTPRoute ns/name: spec.rules[i]"
	routes []*routeOut
	// httpsRedirect is set for a rule that only redirects every request
	// to HTTPS, which the document says host-wide (hosts[].httpsRedirect)
	// when it is all a hostname's plain HTTP listener serves; redirectAt
	// is its filter's path, reported when it is not.
	httpsRedirect *config.HTTPSRedirect
	redirectAt    string
}

// routeOut is one route of the document, from one match of a rule.
type routeOut struct {
	route   config.Route
	origins []origin // document paths relative to the route ("", ".path", ...) onto object paths
}

func routePath(r *gwv1.HTTPRoute, field string) string {
	return objPath("HTTPRoute", r.Namespace, r.Name, field)
}

// routes attaches every HTTPRoute to its listeners and translates its
// rules.
func (t *translation) routes() {
	for _, r := range t.routesIn {
		if r.Spec.UseDefaultGateways != "" {
			t.probs.Add(CodeRouteFieldUnsupported, routePath(r, "spec.useDefaultGateways"), "default Gateways are not translated: name the Gateway in parentRefs")
		}
		if len(r.Spec.ParentRefs) == 0 {
			t.probs.Add(CodeRouteParentRefsMissing, routePath(r, "spec.parentRefs"), "a route attaches to Gateways by parentRefs")
		}
		ours := len(r.Spec.ParentRefs) == 0
		for i := range r.Spec.ParentRefs {
			if t.attach(r, &r.Spec.ParentRefs[i], routePath(r, "spec.parentRefs["+strconv.Itoa(i)+"]")) {
				ours = true
			}
		}
		if !ours {
			continue // attached only to Gateways of another class
		}
		for i := range r.Spec.Rules {
			t.rules[ruleKey{r, i}] = t.rule(r, i, &r.Spec.Rules[i], routePath(r, "spec.rules["+strconv.Itoa(i)+"]"))
		}
		if len(r.Spec.Rules) == 0 {
			// The API's default: one rule that matches every request,
			// with no backend, which answers 500.
			t.rules[ruleKey{r, 0}] = t.rule(r, 0, &gwv1.HTTPRouteRule{}, routePath(r, "spec.rules"))
		}
	}
}

// attach attaches r to the listeners ref names, and reports whether ref
// names a Gateway of the translation (or one that is not in the objects).
func (t *translation) attach(r *gwv1.HTTPRoute, ref *gwv1.ParentReference, at string) bool {
	if (ref.Group != nil && *ref.Group != gatewayGroup) || (ref.Kind != nil && *ref.Kind != "Gateway") {
		t.probs.Add(CodeRouteParentRefKind, at, "only Gateways are translated as parents")
		return true
	}
	gref := ObjectRef{ns(r.Namespace), string(ref.Name)}
	if ref.Namespace != nil {
		gref.Namespace = string(*ref.Namespace)
	}
	gw, known := t.gwByRef[gref]
	if !known {
		t.probs.Add(CodeRouteParentRefUnknown, at, "no Gateway "+gref.Namespace+"/"+gref.Name+" in the objects")
		return true
	}
	if gw == nil {
		return false
	}
	var named []*listener
	for _, l := range gw.listeners {
		if (ref.SectionName == nil || string(*ref.SectionName) == string(l.obj.Name)) && (ref.Port == nil || *ref.Port == l.obj.Port) {
			named = append(named, l)
		}
	}
	if len(named) == 0 {
		if ref.SectionName != nil || ref.Port != nil {
			t.probs.Add(CodeRouteParentRefListener, at, "Gateway "+gref.Namespace+"/"+gref.Name+" has no listener of this sectionName and port")
		}
		return true
	}
	allowed, matched := 0, 0
	for _, l := range named {
		if l.noHTTPRoutes || l.fromNone || (!l.fromAll && ns(r.Namespace) != ns(gw.obj.Namespace)) {
			continue
		}
		allowed++
		for _, h := range routeHostnames(r) {
			if hn, ok := intersect(l.hostname, h); ok {
				matched++
				t.atts = append(t.atts, &attachment{route: r, l: l, hostname: hn, at: at})
			}
		}
	}
	switch {
	case allowed == 0:
		t.probs.Add(CodeRouteParentRefNotAllowed, at, "the listeners' allowedRoutes take no HTTPRoute of namespace "+ns(r.Namespace))
	case matched == 0:
		t.probs.Add(CodeRouteHostnamesNoMatch, routePath(r, "spec.hostnames"), "no hostname of the route is one the listeners of "+at+" take")
	}
	return true
}

// routeHostnames returns a route's hostnames in lower case, or [""] for
// a route that names none (it takes the listener's).
func routeHostnames(r *gwv1.HTTPRoute) []string {
	if len(r.Spec.Hostnames) == 0 {
		return []string{""}
	}
	hs := make([]string, 0, len(r.Spec.Hostnames))
	for _, h := range r.Spec.Hostnames {
		hs = append(hs, strings.ToLower(string(h)))
	}
	return hs
}

// intersect returns the hostnames a request must have to be taken by a
// listener of hostname l and a route of hostname r, as the specification
// intersects them ("" is any name, "*.example.com" any name below
// example.com), and whether any name is taken by both.
func intersect(l, r string) (string, bool) {
	switch {
	case l == "":
		return r, true
	case r == "", l == r:
		return l, true
	case covers(l, r):
		return r, true
	case covers(r, l):
		return l, true
	}
	return "", false
}

// covers reports whether the wildcard w takes every name that name
// takes: "*.example.com" covers "a.example.com", "a.b.example.com" and
// "*.b.example.com", not "example.com". "" covers every name.
func covers(w, name string) bool {
	if w == "" {
		return true
	}
	return strings.HasPrefix(w, "*.") && len(name) > len(w)-1 && strings.HasSuffix(name, w[1:])
}

// rule translates ro, rule i of r at path at.
func (t *translation) rule(r *gwv1.HTTPRoute, i int, ro *gwv1.HTTPRouteRule, at string) *rule {
	out := &rule{path: at}
	var base config.Route
	var baseOrigins []origin
	if ro.Timeouts != nil {
		t.timeouts(&base, &baseOrigins, ro.Timeouts, at+".timeouts")
	}
	if ro.Retry != nil {
		t.probs.Add(CodeRuleRetry, at+".retry", "retries on status codes are not translated (a route's retry retries only requests that never reached a destination)")
	}
	if ro.SessionPersistence != nil {
		t.probs.Add(CodeRuleSessionPersist, at+".sessionPersistence", "session persistence per rule is not translated (an upstream's affinity is the library's)")
	}
	redirect := t.filters(&base, &baseOrigins, out, r, ro, at)
	switch {
	case redirect && len(ro.BackendRefs) > 0:
		// A redirect answers the request, so backendRefs would never
		// take one; the document's route has one target.
		t.probs.Add(CodeFilterRedirect, out.redirectAt, "a redirect beside backendRefs: a route has one target")
		out.httpsRedirect = nil
		return out
	case !redirect:
		t.target(&base, &baseOrigins, r, ro, at)
	}
	if out.httpsRedirect != nil && matchesAll(ro.Matches) {
		return out // a candidate for the hostname's httpsRedirect
	}
	out.httpsRedirect = nil
	matches := ro.Matches
	if len(matches) == 0 {
		matches = []gwv1.HTTPRouteMatch{{}}
	}
	for j := range matches {
		mat := at
		if len(ro.Matches) > 0 {
			mat += ".matches[" + strconv.Itoa(j) + "]"
		}
		rt := &routeOut{route: base, origins: append([]origin{{"", mat}}, baseOrigins...)}
		rt.route.ID = routeID(r, i, j)
		t.match(rt, &matches[j], mat)
		out.routes = append(out.routes, rt)
	}
	return out
}

// routeID names the document's route of match j of rule i of r:
// "default.shop.r1.m0". Namespaces have no dots, so no two routes share
// one; an ID past the document's 128 bytes keeps its end.
func routeID(r *gwv1.HTTPRoute, i, j int) string {
	id := ns(r.Namespace) + "." + r.Name + ".r" + strconv.Itoa(i) + ".m" + strconv.Itoa(j)
	if len(id) > 128 {
		id = id[len(id)-128:]
		id = strings.TrimLeft(id, ".")
	}
	return id
}

// matchesAll reports whether matches take every request: none, or one
// of the prefix "/" alone.
func matchesAll(ms []gwv1.HTTPRouteMatch) bool {
	if len(ms) == 0 {
		return true
	}
	if len(ms) > 1 {
		return false
	}
	m := &ms[0]
	if len(m.Headers) > 0 || len(m.QueryParams) > 0 || m.Method != nil {
		return false
	}
	return m.Path == nil || (m.Path.Type == nil || *m.Path.Type == gwv1.PathMatchPathPrefix) && (m.Path.Value == nil || *m.Path.Value == "/")
}

// match translates one HTTPRouteMatch onto ro's route.
func (t *translation) match(ro *routeOut, m *gwv1.HTTPRouteMatch, at string) {
	rt := &ro.route
	rt.Path = "/"
	if p := m.Path; p != nil {
		if p.Value != nil {
			rt.Path = *p.Value
		}
		typ := gwv1.PathMatchPathPrefix
		if p.Type != nil {
			typ = *p.Type
		}
		switch typ {
		case gwv1.PathMatchPathPrefix:
			// "When specified, a trailing / is ignored."
			if len(rt.Path) > 1 {
				rt.Path = strings.TrimRight(rt.Path, "/")
				if rt.Path == "" {
					rt.Path = "/"
				}
			}
		case gwv1.PathMatchExact:
			rt.PathType = "exact"
		case gwv1.PathMatchRegularExpression:
			rt.PathType = "regex"
		default:
			t.probs.Add(CodeMatchTypeUnknown, at+".path.type", "path type "+strconv.Quote(string(typ))+": Exact, PathPrefix or RegularExpression")
		}
		ro.origins = append(ro.origins, origin{".path", at + ".path.value"}, origin{".pathType", at + ".path.type"})
	}
	if m.Method != nil {
		rt.Match.Methods = []string{string(*m.Method)}
		ro.origins = append(ro.origins, origin{".match.methods", at + ".method"})
	}
	seen := map[string]bool{}
	for k, h := range m.Headers {
		hat := at + ".headers[" + strconv.Itoa(k) + "]"
		name := strings.ToLower(string(h.Name))
		if seen[name] {
			t.probs.Add(CodeMatchHeaderDup, hat+".name", "header "+strconv.Quote(string(h.Name))+" again: names match in any case, and the API ignores all but the first, which would drop this one")
			continue
		}
		seen[name] = true
		hm := config.HeaderMatch{Name: string(h.Name), Value: h.Value}
		if h.Type != nil {
			switch *h.Type {
			case gwv1.HeaderMatchExact:
			case gwv1.HeaderMatchRegularExpression:
				hm.Type = "regex"
			default:
				t.probs.Add(CodeMatchTypeUnknown, hat+".type", "header match type "+strconv.Quote(string(*h.Type))+": Exact or RegularExpression")
			}
		}
		ro.origins = append(ro.origins, origin{".match.headers[" + strconv.Itoa(len(rt.Match.Headers)) + "]", hat})
		rt.Match.Headers = append(rt.Match.Headers, hm)
	}
	clear(seen)
	for k, q := range m.QueryParams {
		qat := at + ".queryParams[" + strconv.Itoa(k) + "]"
		if seen[string(q.Name)] {
			t.probs.Add(CodeMatchQueryDup, qat+".name", "query parameter "+strconv.Quote(string(q.Name))+" again: the API ignores all but the first, which would drop this one")
			continue
		}
		seen[string(q.Name)] = true
		qm := config.QueryMatch{Name: string(q.Name), Value: q.Value}
		if q.Type != nil {
			switch *q.Type {
			case gwv1.QueryParamMatchExact:
			case gwv1.QueryParamMatchRegularExpression:
				qm.Type = "regex"
			default:
				t.probs.Add(CodeMatchTypeUnknown, qat+".type", "query match type "+strconv.Quote(string(*q.Type))+": Exact or RegularExpression")
			}
		}
		ro.origins = append(ro.origins, origin{".match.query[" + strconv.Itoa(len(rt.Match.Query)) + "]", qat})
		rt.Match.Query = append(rt.Match.Query, qm)
	}
}
