package gatewayapi

// The parts of an HTTPRoute the document cannot say yet. Each is the
// translation of one planned field of a route, which refuses what it
// would translate with its code and path until the field exists: then it
// fills the field instead, and its refusal goes.

import (
	"strconv"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// notYet is the message of a refusal of what a planned field will say.
func notYet(what, field string) string {
	return "not yet expressible: " + what + " (the document's " + field + ", planned)"
}

// weighted translates the backendRefs of a rule that have a weight
// other than 0 when there are several: the route's backends, each an
// upstream with its weight (routes[].backends).
func (t *translation) weighted(refs []gwv1.HTTPBackendRef, at string) {
	t.probs.Add(CodeBackendRefsWeighted, at, notYet(strconv.Itoa(len(refs))+" backends with weights", "routes[].backends"))
}

// noBackend translates a rule whose requests no backend takes (no
// backendRef, or every weight 0), which the API answers with 500: a
// fixed answer of the route (routes[].fixed).
func (t *translation) noBackend(at string) {
	t.probs.Add(CodeBackendRefsNone, at, notYet("a rule with no backend of weight above 0 answers 500", "routes[].fixed"))
}

// redirect translates a RequestRedirect other than a whole hostname's
// to HTTPS: the route's redirect (routes[].redirect: scheme, host, port,
// path or prefix, status).
func (t *translation) redirect(r *gwv1.HTTPRequestRedirectFilter, at string) {
	_ = r
	t.probs.Add(CodeFilterRedirect, at, notYet("a redirect of the requests of one rule", "routes[].redirect")+
		"; a hostname's redirect to HTTPS is expressible as the only rule of its HTTP listener: scheme https alone, or with a port, status 301, 302, 307 or 308")
}

// rewritePath translates a URLRewrite's path: ReplacePrefixMatch is the
// route's rewrite.replacePrefix, ReplaceFullPath its rewrite.path.
func (t *translation) rewritePath(p *gwv1.HTTPPathModifier, at string) {
	field := "routes[].rewrite.path"
	if p.Type == gwv1.PrefixMatchHTTPPathModifier {
		field = "routes[].rewrite.replacePrefix"
	}
	t.probs.Add(CodeFilterRewritePath, at, notYet("a path rewrite ("+string(p.Type)+")", field))
}

// requestMirror translates a RequestMirror: the route's mirror, an
// upstream of the backendRef's Service with its percent or fraction
// (routes[].mirror).
func (t *translation) requestMirror(m *gwv1.HTTPRequestMirrorFilter, at string) {
	_ = m
	t.probs.Add(CodeFilterMirror, at, notYet("a mirror", "routes[].mirror"))
}

// timeouts translates a rule's timeouts: request is the route's
// timeouts.request, backendRequest its timeouts.perTry.
func (t *translation) timeouts(tm *gwv1.HTTPRouteTimeouts, at string) {
	_ = tm
	t.probs.Add(CodeRuleTimeouts, at, notYet("timeouts per route", "routes[].timeouts"))
}
