package gatewayapi

import (
	"net/http"
	"strconv"
	"strings"

	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/paduraksa/paduraksa/config"
)

// filters translates a rule's filters onto base, the route every match
// of the rule becomes, and reports whether the rule redirects (its
// problems reported, or out.httpsRedirect set).
func (t *translation) filters(base *config.Route, origins *[]origin, out *rule, fs []gwv1.HTTPRouteFilter, at string) (redirect bool) {
	seen := map[gwv1.HTTPRouteFilterType]bool{}
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
			t.urlRewrite(base, origins, f.URLRewrite, fat+".urlRewrite")
		case gwv1.HTTPRouteFilterRequestRedirect:
			if seen[gwv1.HTTPRouteFilterURLRewrite] {
				t.probs.Add(CodeFilterConfigInvalid, fat, "RequestRedirect beside URLRewrite: a redirect forwards nothing to rewrite")
			}
			redirect = true
			out.redirectAt = fat
			out.httpsRedirect = t.requestRedirect(f.RequestRedirect, len(fs) == 1, fat)
		case gwv1.HTTPRouteFilterRequestMirror:
			t.requestMirror(f.RequestMirror, fat)
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
// upstream (hostHeader custom); its path is refused until the document
// can replace a prefix or the path.
func (t *translation) urlRewrite(base *config.Route, origins *[]origin, u *gwv1.HTTPURLRewriteFilter, at string) {
	if u.Hostname != nil {
		base.HostHeader, base.HostName = "custom", string(*u.Hostname)
		*origins = append(*origins, origin{".hostHeader", at + ".hostname"}, origin{".hostName", at + ".hostname"})
	}
	if u.Path != nil {
		t.rewritePath(u.Path, at+".path")
	}
}

// requestRedirect translates a RequestRedirect. The one the document
// can say now is a whole hostname's redirect to HTTPS (scheme https and
// nothing else but a port and a status): returned for the host, which
// uses it when it is all the hostname's plain HTTP listener serves. Any
// other is refused until the document has redirects per route
// (routes[].redirect).
func (t *translation) requestRedirect(r *gwv1.HTTPRequestRedirectFilter, alone bool, at string) *config.HTTPSRedirect {
	status := http.StatusFound // the API's default
	if r.StatusCode != nil {
		status = *r.StatusCode
	}
	toHTTPS := r.Scheme != nil && *r.Scheme == "https" && r.Hostname == nil && r.Path == nil && alone
	if toHTTPS && status != http.StatusSeeOther {
		// "If redirect scheme is not-empty, the redirect port MUST be
		// the well-known port associated with the redirect scheme."
		port := 443
		if r.Port != nil {
			port = int(*r.Port)
		}
		return &config.HTTPSRedirect{Status: status, Port: port}
	}
	t.redirect(r, at)
	return nil
}
