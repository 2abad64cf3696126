package proxy

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// Rewrite changes the path a route forwards. The zero value forwards the
// gate's forwarded spelling of the path ([gate.Request.ForwardPath])
// untouched.
type Rewrite struct {
	// StripPrefix is the route's path to take off the front of the
	// forwarded path, as the route matched it ("/app"): /app/x goes as /x
	// and /app as /. The gate has matched the request's path view on it,
	// so the forwarded path's first segments are its spelling of the
	// prefix, whatever their case, escapes or ;parameters; a request whose
	// view is not under the prefix (a Route used as the target of another
	// prefix) is answered 404. Empty means no strip; "/" is refused.
	StripPrefix string
	// AddPrefix is put in front of the forwarded path: it starts with /,
	// has no trailing /, no empty, . or .. segment, and only URL path
	// characters and valid escapes; at most 256 bytes.
	AddPrefix string
	// KeepLocation turns off the mapping of the upstream's Location back
	// under the client's prefix (see [Route]); the mapping is on by default
	// on a route that strips or adds a prefix.
	KeepLocation bool
	// Template replaces the whole path with a path filled from the values
	// of the gate's template route ([gate.Request.PathValue]): each
	// "{name}" (or "{**name}") is what the route's path matched under that
	// name, in the client's spelling, and the rest is literal. On
	// "/v1/{**rest}", the template "/api/{rest}" sends /v1/users/7 as
	// /api/users/7 and /v1 as /api/; an empty value between two "/" leaves
	// no empty segment ("/api/{rest}/x" sends /api/x). It starts with /, and with each value
	// taken for one segment it is a path of URL path characters and valid
	// escapes without empty, . or .. segments; at most 256 bytes. It takes
	// neither StripPrefix nor AddPrefix, and no Location is mapped back.
	// gate.New refuses a route whose path does not capture a name the
	// template uses ([gate.PathValueReader]).
	Template string

	// The filters of a route's rewrite beside the prefix and the
	// template: a replaced prefix, a replaced path and the query.

	// ReplacePrefix puts a path in the place of the prefix StripPrefix
	// names (of the root when StripPrefix is empty: then it goes in
	// front), segment by segment on the forwarded spelling as StripPrefix
	// takes it off: with StripPrefix "/app", "/v2" sends /app/x as /v2/x
	// and /app as /v2, and "/" sends them as /x and /, as StripPrefix
	// alone does. A trailing "/" is dropped ("/v2/" is "/v2", as the
	// Gateway API's ReplacePrefixMatch reads it); the rest is held to
	// AddPrefix's rules. It takes no AddPrefix, Template or Path. An
	// answer's Location is mapped back as for StripPrefix with AddPrefix.
	ReplacePrefix string
	// Path replaces the whole path: every request of the route goes to
	// it, whatever its path ("/maintenance"). It starts with /, is a path
	// of URL path characters and valid escapes without empty, . or ..
	// segments (a trailing / allowed) and at most 256 bytes, and takes
	// none of StripPrefix, AddPrefix, ReplacePrefix and Template. No
	// Location is mapped back: every path went to this one.
	Path string
	// Query sets, adds and removes parameters of the forwarded query;
	// the zero value forwards the client's query as it came.
	Query QueryRewrite
}

// CheckRewrite reports every problem of a rewrite, each a
// [ValidationError] with a path relative to it, joined, or nil.
func CheckRewrite(rw Rewrite) error {
	var errs problem.List
	if p := rw.StripPrefix; p != "" {
		switch t := strings.TrimSuffix(p, "/"); {
		case t == "":
			errs.Add(CodeRewriteStripPrefixRoot, "stripPrefix", "the route \"/\" has no prefix to strip")
		case gate.CheckPrefix(p) != nil:
			errs.Add(CodeRewriteStripPrefixInvalid, "stripPrefix", quote(p)+" is not a prefix the gate can match")
		}
	}
	if p := rw.AddPrefix; p != "" && !validAddPrefix(p) {
		errs.Add(CodeRewriteAddPrefixInvalid, "addPrefix", quote(p)+": want /segments of URL path characters and valid escapes, no trailing /, no empty, . or .. segment, at most 256 bytes")
	}
	if t := rw.Template; t != "" {
		if _, reason := parseTemplate(t); reason != "" {
			errs.Add(CodeRewriteTemplateInvalid, "template", quote(t)+": "+reason)
		}
		if rw.StripPrefix != "" || rw.AddPrefix != "" {
			errs.Add(CodeRewriteTemplateConflict, "template", "a template replaces the whole path: it takes no stripPrefix or addPrefix")
		}
	}
	checkFilters(&errs, rw)
	return errs.Err()
}

// templatePart is a literal of a rewrite template followed by the value
// of name ("" for none).
type templatePart struct{ lit, name string }

// parseTemplate splits a rewrite template into its parts, or says why it
// is not one.
func parseTemplate(t string) ([]templatePart, string) {
	if len(t) > 256 {
		return nil, "over 256 bytes"
	}
	if t[0] != '/' {
		return nil, "a template starts with /"
	}
	var parts []templatePart
	var sample strings.Builder // each value as one segment
	for rest := t; rest != "" || len(parts) == 0; {
		lit, after, found := strings.Cut(rest, "{")
		if strings.IndexByte(lit, '}') >= 0 {
			return nil, "a } without its {"
		}
		sample.WriteString(lit)
		if !found {
			parts = append(parts, templatePart{lit: lit})
			break
		}
		name, tail, closed := strings.Cut(after, "}")
		if !closed {
			return nil, "a { without its }"
		}
		name = strings.TrimPrefix(name, "**")
		if !validValueName(name) {
			return nil, quote("{"+name+"}") + ": a value's name is letters, digits, \"_\", \"-\" and \".\""
		}
		parts = append(parts, templatePart{lit: lit, name: name})
		sample.WriteString("x")
		rest = tail
	}
	if !validTemplatePath(sample.String()) {
		return nil, "want a path of URL path characters and valid escapes, without empty, . or .. segments, once each value is filled in"
	}
	return parts, ""
}

func validValueName(n string) bool {
	if n == "" {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// validTemplatePath holds a filled template to what validAddPrefix holds
// an added prefix to, a trailing / allowed.
func validTemplatePath(p string) bool {
	if strings.Contains(p, "//") {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0:
		case c == '%':
		default:
			return false
		}
	}
	v, err := gate.ReadPath(p)
	return err == nil && v.Needs == 0 && v.Forward == p
}

// validAddPrefix holds an added prefix to RFC 3986 path characters, valid
// escapes, no empty, dot or loosely escaped segment.
func validAddPrefix(p string) bool {
	if len(p) < 2 || len(p) > 256 || p[0] != '/' || p[len(p)-1] == '/' || strings.Contains(p, "//") {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0:
		case c == '%': // ReadPath checks the escape
		default:
			return false
		}
	}
	// One reading only: no dot segment, no escape the gate would refuse
	// in a request, hex in upper case.
	v, err := gate.ReadPath(p)
	return err == nil && v.Needs == 0 && v.Forward == p
}

// rewriter is a compiled Rewrite.
type rewriter struct {
	active    bool
	strip     string // the prefix in its percent-encoded spelling, for Location
	stripView string // the prefix as the view spells it
	stripSegs int    // its segments
	add       string
	location  bool
	template  []templatePart
	values    []gate.PathValueUse // the names template reads
	path      string              // Path: the whole path replaced
	query     queryRewriter
}

func newRewriter(rw Rewrite) (rewriter, error) {
	if err := CheckRewrite(rw); err != nil {
		return rewriter{}, err
	}
	r := rewriter{add: rw.AddPrefix, location: !rw.KeepLocation}
	if rw.StripPrefix != "" {
		p := strings.TrimSuffix(rw.StripPrefix, "/")
		r.stripView = p
		r.stripSegs = strings.Count(p, "/")
		r.strip = (&url.URL{Path: p}).EscapedPath()
	}
	if rw.Template != "" {
		r.template, _ = parseTemplate(rw.Template)
		r.location = false
		for _, p := range r.template {
			if p.name != "" && !slices.ContainsFunc(r.values, func(u gate.PathValueUse) bool { return u.Name == p.name }) {
				r.values = append(r.values, gate.PathValueUse{Name: p.name, Path: "rewrite.template"})
			}
		}
	}
	r.compileFilters(rw)
	r.active = r.strip != "" || r.add != "" || r.template != nil || r.path != ""
	return r, nil
}

// apply returns the path to forward for the gate's forwarded spelling and
// path view, or 404 when the view is not under the prefix to strip. It
// allocates only when it adds a prefix or fills a template.
func (rw *rewriter) apply(forward, view string, rq *gate.Request) (string, int) {
	if rw.path != "" {
		return rw.path, 0
	}
	if rw.template != nil {
		n := 0
		for _, p := range rw.template {
			n += len(p.lit) + len(rq.PathValue(p.name))
		}
		b := make([]byte, 0, n)
		empty := false // the last value was empty, after a "/"
		for _, p := range rw.template {
			lit := p.lit
			if empty && lit != "" && lit[0] == '/' {
				lit = lit[1:] // no empty segment where a value is empty
			}
			b = append(b, lit...)
			if p.name != "" {
				v := rq.PathValue(p.name)
				b = append(b, v...)
				empty = v == "" && len(b) > 0 && b[len(b)-1] == '/'
			}
		}
		return string(b), 0
	}
	rest := forward
	if rw.strip != "" {
		if !gate.HasPathPrefix(view, rw.stripView) {
			return "", http.StatusNotFound
		}
		// The view and the forwarded spelling have the same segments:
		// drop as many as the prefix has.
		i := 0
		for n := 0; n < rw.stripSegs; n++ {
			j := strings.IndexByte(forward[i+1:], '/')
			if j < 0 {
				i = len(forward)
				break
			}
			i += 1 + j
		}
		rest = forward[i:]
	}
	switch {
	case rw.add != "":
		return rw.add + rest, 0
	case rest == "":
		return "/", 0
	}
	return rest, 0
}

// prefixLen returns len(prefix) when s starts with prefix, ignoring ASCII
// case, at a segment boundary; else -1.
func prefixLen(s, prefix string) int {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return -1
	}
	if len(s) > len(prefix) && s[len(prefix)] != '/' {
		return -1
	}
	return len(prefix)
}
