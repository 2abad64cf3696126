package gatewayapi

import (
	"cmp"
	"net/http"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/paduraksa/paduraksa/config"
)

// filters translates the filters of rule ro onto base, the route every
// match of the rule becomes, and reports whether the rule redirects (its
// route's redirect set, and out.httpsRedirect when it could be its
// hostname's redirect to HTTPS).
func (t *translation) filters(base *config.Route, origins *[]origin, out *rule, r *gwv1.HTTPRoute, ro *gwv1.HTTPRouteRule, at string) (redirect bool) {
	fs := ro.Filters
	seen := map[gwv1.HTTPRouteFilterType]bool{}
	mirrorAt := ""
	for i := range fs {
		f := &fs[i]
		fat := at + ".filters[" + strconv.Itoa(i) + "]"
		if !t.filterBlock(f, fat) {
			continue
		}
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier, gwv1.HTTPRouteFilterResponseHeaderModifier, gwv1.HTTPRouteFilterURLRewrite, gwv1.HTTPRouteFilterRequestRedirect:
			if seen[f.Type] {
				t.probs.Add(CodeFilterDuplicate, fat, "a second "+string(f.Type)+" filter in the rule")
				continue
			}
			seen[f.Type] = true
		}
		switch f.Type {
		case gwv1.HTTPRouteFilterRequestHeaderModifier:
			base.Headers.Request = t.headerModifier(f.RequestHeaderModifier, origins, "headers.request", fat+".requestHeaderModifier")
		case gwv1.HTTPRouteFilterResponseHeaderModifier:
			base.Headers.Response = t.headerModifier(f.ResponseHeaderModifier, origins, "headers.response", fat+".responseHeaderModifier")
		case gwv1.HTTPRouteFilterURLRewrite:
			if seen[gwv1.HTTPRouteFilterRequestRedirect] {
				t.probs.Add(CodeFilterConfigInvalid, fat, "URLRewrite beside RequestRedirect: a redirect forwards nothing to rewrite")
			}
			t.urlRewrite(base, origins, f.URLRewrite, ro.Matches, fat+".urlRewrite")
		case gwv1.HTTPRouteFilterRequestRedirect:
			if seen[gwv1.HTTPRouteFilterURLRewrite] {
				t.probs.Add(CodeFilterConfigInvalid, fat, "RequestRedirect beside URLRewrite: a redirect forwards nothing to rewrite")
			}
			redirect = true
			out.redirectAt = fat
			out.httpsRedirect = t.requestRedirect(base, origins, f.RequestRedirect, len(fs) == 1, ro.Matches, fat+".requestRedirect")
		case gwv1.HTTPRouteFilterRequestMirror:
			if mirrorAt != "" {
				t.probs.Add(CodeFilterMirror, fat, "a second RequestMirror in the rule: a route of the document has one mirror (the first is "+mirrorAt+")")
				continue
			}
			mirrorAt = fat
			t.requestMirror(base, origins, r, f.RequestMirror, fat+".requestMirror")
		case gwv1.HTTPRouteFilterCORS:
			t.probs.Add(CodeFilterCORS, fat, "CORS is not translated: the library has no CORS filter")
		case gwv1.HTTPRouteFilterExternalAuth:
			t.probs.Add(CodeFilterExternalAuth, fat, "external authorization is not translated (a forwardAuth policy of the document is the library's)")
		case gwv1.HTTPRouteFilterExtensionRef:
			t.probs.Add(CodeFilterExtensionRef, fat, "an implementation's own filter ("+string(f.ExtensionRef.Group)+"/"+string(f.ExtensionRef.Kind)+" "+string(f.ExtensionRef.Name)+") is not translated")
		}
	}
	return redirect
}

// filterBlock reports whether a filter has a known type and the block of
// its type, and no other.
func (t *translation) filterBlock(f *gwv1.HTTPRouteFilter, at string) bool {
	blocks := []struct {
		typ gwv1.HTTPRouteFilterType
		set bool
	}{
		{gwv1.HTTPRouteFilterRequestHeaderModifier, f.RequestHeaderModifier != nil},
		{gwv1.HTTPRouteFilterResponseHeaderModifier, f.ResponseHeaderModifier != nil},
		{gwv1.HTTPRouteFilterRequestMirror, f.RequestMirror != nil},
		{gwv1.HTTPRouteFilterRequestRedirect, f.RequestRedirect != nil},
		{gwv1.HTTPRouteFilterURLRewrite, f.URLRewrite != nil},
		{gwv1.HTTPRouteFilterCORS, f.CORS != nil},
		{gwv1.HTTPRouteFilterExternalAuth, f.ExternalAuth != nil},
		{gwv1.HTTPRouteFilterExtensionRef, f.ExtensionRef != nil},
	}
	known, ok := false, true
	for _, b := range blocks {
		if b.typ == f.Type {
			known = true
			if !b.set {
				t.probs.Add(CodeFilterConfigInvalid, at, "type "+string(f.Type)+" without its block ("+lowerFirst(string(f.Type))+")")
				ok = false
			}
		} else if b.set {
			t.probs.Add(CodeFilterConfigInvalid, at+"."+lowerFirst(string(b.typ)), "the block of "+string(b.typ)+" on a filter of type "+strconv.Quote(string(f.Type)))
			ok = false
		}
	}
	if !known {
		t.probs.Add(CodeFilterTypeUnknown, at+".type", "filter type "+strconv.Quote(string(f.Type))+" is not one of the API's")
		return false
	}
	return ok
}

// lowerFirst is a filter type's block name: "URLRewrite" is "urlRewrite".
func lowerFirst(s string) string {
	if strings.HasPrefix(s, "URL") || strings.HasPrefix(s, "CORS") {
		return strings.ToLower(s[:3]) + s[3:]
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// headerModifier translates a RequestHeaderModifier or
// ResponseHeaderModifier into a direction's header rules (set, add,
// remove; one rule per name, as the API asks too), noting their origins
// under doc ("headers.request").
func (t *translation) headerModifier(h *gwv1.HTTPHeaderFilter, origins *[]origin, doc, at string) []config.HeaderRule {
	var rules []config.HeaderRule
	seen := map[string]string{}
	add := func(name, op, value, from string) {
		if first, dup := seen[strings.ToLower(name)]; dup {
			t.probs.Add(CodeFilterHeaderDup, from, "header "+strconv.Quote(name)+" again (first at "+first+"): one action per name")
			return
		}
		seen[strings.ToLower(name)] = from
		*origins = append(*origins, origin{"." + doc + "[" + strconv.Itoa(len(rules)) + "]", from})
		rules = append(rules, config.HeaderRule{Name: name, Operation: op, Value: value})
	}
	for i, s := range h.Set {
		add(string(s.Name), "", s.Value, at+".set["+strconv.Itoa(i)+"]")
	}
	for i, a := range h.Add {
		add(string(a.Name), "add", a.Value, at+".add["+strconv.Itoa(i)+"]")
	}
	for i, name := range h.Remove {
		add(name, "remove", "", at+".remove["+strconv.Itoa(i)+"]")
	}
	return rules
}

// urlRewrite translates a URLRewrite: its hostname is the Host sent
// upstream (hostHeader custom), its path the route's rewrite: the
// ReplaceFullPath the rewrite's path, a ReplacePrefixMatch its
// replacePrefix.
func (t *translation) urlRewrite(base *config.Route, origins *[]origin, u *gwv1.HTTPURLRewriteFilter, matches []gwv1.HTTPRouteMatch, at string) {
	if u.Hostname != nil {
		base.HostHeader, base.HostName = "custom", string(*u.Hostname)
		*origins = append(*origins, origin{".hostHeader", at + ".hostname"}, origin{".hostName", at + ".hostname"})
	}
	if u.Path != nil {
		full, prefix, ok := t.pathModifier(u.Path, matches, at+".path")
		switch {
		case !ok:
		case full != "":
			base.Rewrite.Path = full
			*origins = append(*origins, origin{".rewrite.path", at + ".path.replaceFullPath"})
		default:
			base.Rewrite.ReplacePrefix = prefix
			*origins = append(*origins, origin{".rewrite.replacePrefix", at + ".path.replacePrefixMatch"})
		}
	}
}

// pathModifier reads a rewrite's or a redirect's path: the full path
// that replaces the request's, or else the path that replaces the
// matched prefix ("" is "/": the prefix taken off), and whether it is
// one the rule can have. ReplacePrefixMatch needs a rule whose matches
// are all path prefixes, as the API asks ("exactly one PathPrefix match"
// there; each match is a route of its own here, with its own prefix).
func (t *translation) pathModifier(p *gwv1.HTTPPathModifier, matches []gwv1.HTTPRouteMatch, at string) (full, prefix string, ok bool) {
	switch p.Type {
	case gwv1.FullPathHTTPPathModifier:
		if p.ReplaceFullPath == nil || p.ReplacePrefixMatch != nil {
			t.probs.Add(CodeFilterConfigInvalid, at, "type ReplaceFullPath takes replaceFullPath alone")
			return "", "", false
		}
		return *p.ReplaceFullPath, "", true
	case gwv1.PrefixMatchHTTPPathModifier:
		if p.ReplacePrefixMatch == nil || p.ReplaceFullPath != nil {
			t.probs.Add(CodeFilterConfigInvalid, at, "type ReplacePrefixMatch takes replacePrefixMatch alone")
			return "", "", false
		}
		ok = true
		for j := range matches {
			if m := matches[j].Path; m != nil && m.Type != nil && *m.Type != gwv1.PathMatchPathPrefix {
				t.probs.Add(CodeFilterPrefixMatchOnly, at+".replacePrefixMatch", "ReplacePrefixMatch replaces a matched prefix, and matches["+strconv.Itoa(j)+"] is a path match of type "+string(*m.Type))
				ok = false
			}
		}
		return "", cmp.Or(*p.ReplacePrefixMatch, "/"), ok
	}
	t.probs.Add(CodeFilterConfigInvalid, at+".type", "path modifier type "+strconv.Quote(string(p.Type))+": ReplaceFullPath or ReplacePrefixMatch")
	return "", "", false
}

// requestRedirect translates a RequestRedirect into the route's
// redirect: scheme, hostname, port, path (the full path, or the matched
// prefix replaced) and status (302 when absent, the API's default). A
// port left out is, with a scheme, that scheme's well-known port, and
// without one the port of the request's Host: the Gateway listener's
// port the client reached, as the API asks. A redirect of a whole
// hostname to HTTPS (scheme https and nothing else but a port and a
// status other than 303, the rule's only filter) is also returned, for
// the host: it is the host's httpsRedirect when it is all the
// hostname's plain HTTP listener serves.
func (t *translation) requestRedirect(base *config.Route, origins *[]origin, r *gwv1.HTTPRequestRedirectFilter, alone bool, matches []gwv1.HTTPRouteMatch, at string) *config.HTTPSRedirect {
	rd := &config.RouteRedirect{}
	*origins = append(*origins, origin{".redirect", at})
	if r.Scheme != nil {
		rd.Scheme = *r.Scheme
		*origins = append(*origins, origin{".redirect.scheme", at + ".scheme"})
	}
	if r.Hostname != nil {
		rd.Host = string(*r.Hostname)
		*origins = append(*origins, origin{".redirect.host", at + ".hostname"})
	}
	if r.Port != nil {
		rd.Port = int(*r.Port)
		*origins = append(*origins, origin{".redirect.port", at + ".port"})
	}
	if r.StatusCode != nil {
		rd.Status = *r.StatusCode
		*origins = append(*origins, origin{".redirect.status", at + ".statusCode"})
	}
	if r.Path != nil {
		full, prefix, ok := t.pathModifier(r.Path, matches, at+".path")
		switch {
		case !ok:
		case full != "":
			rd.Path = full
			*origins = append(*origins, origin{".redirect.path", at + ".path.replaceFullPath"})
		default:
			rd.Prefix = prefix
			*origins = append(*origins, origin{".redirect.prefix", at + ".path.replacePrefixMatch"})
		}
	}
	base.Redirect = rd
	status := cmp.Or(rd.Status, http.StatusFound)
	if rd.Scheme == "https" && r.Hostname == nil && r.Path == nil && alone && status != http.StatusSeeOther {
		// "If redirect scheme is not-empty, the redirect port MUST be
		// the well-known port associated with the redirect scheme."
		return &config.HTTPSRedirect{Status: status, Port: cmp.Or(rd.Port, 443)}
	}
	return nil
}

// requestMirror translates a RequestMirror into the route's mirror: the
// backendRef's Service port is the mirror's upstream, and its percent,
// or fraction, the share of requests copied (100 when neither is
// given).
func (t *translation) requestMirror(base *config.Route, origins *[]origin, r *gwv1.HTTPRoute, m *gwv1.HTTPRequestMirrorFilter, at string) {
	var pct *float64
	switch {
	case m.Percent != nil && m.Fraction != nil:
		t.probs.Add(CodeFilterConfigInvalid, at, "percent and fraction: one of them")
		return
	case m.Percent != nil:
		if *m.Percent < 0 || *m.Percent > 100 {
			t.probs.Add(CodeFilterConfigInvalid, at+".percent", "percent "+strconv.Itoa(int(*m.Percent))+" is not 0-100")
			return
		}
		p := float64(*m.Percent)
		pct = &p
	case m.Fraction != nil:
		den := int32(100)
		if m.Fraction.Denominator != nil {
			den = *m.Fraction.Denominator
		}
		if den < 1 || m.Fraction.Numerator < 0 || m.Fraction.Numerator > den {
			t.probs.Add(CodeFilterConfigInvalid, at+".fraction", "fraction "+strconv.Itoa(int(m.Fraction.Numerator))+"/"+strconv.Itoa(int(den))+
				": a numerator of 0 or more, at most the denominator, which is 1 or more")
			return
		}
		p := float64(m.Fraction.Numerator) * 100 / float64(den)
		pct = &p
	}
	b := t.backendObject(r, &m.BackendRef, at+".backendRef")
	if b == nil {
		return
	}
	base.Mirror = &config.Mirror{Upstream: b.id, Percent: pct}
	*origins = append(*origins, origin{".mirror", at}, origin{".mirror.upstream", at + ".backendRef"})
	switch {
	case m.Percent != nil:
		*origins = append(*origins, origin{".mirror.percent", at + ".percent"})
	case m.Fraction != nil:
		*origins = append(*origins, origin{".mirror.percent", at + ".fraction"})
	}
}
