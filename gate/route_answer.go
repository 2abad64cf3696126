package gate

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// A route's own answers: a redirect ([RouteRedirect]) or a fixed answer
// in place of a target. Both are given once the route matched, after its
// policies (a refusal of theirs comes first) and before the body limit,
// with the route's answer headers ([Route.AnswerHeaders]).

// RouteRedirect is a route's redirect, the Gateway API's RequestRedirect:
// each field given replaces that part of the request's URL, and the rest
// is the request's. The query is always the request's, as sent.
type RouteRedirect struct {
	// Scheme is "http" or "https"; "" keeps the request's (its trusted
	// scheme, [Request.Scheme]).
	Scheme string
	// Host is the name in the Location, without a port; "" keeps the
	// name of the request's Host.
	Host string
	// Port is the Location's port, 1-65535; one that is the scheme's
	// well-known port (80, 443) is left out. 0 means: with Scheme given,
	// that scheme's well-known port; without, the port of the request's
	// Host, as the client sent it.
	Port int
	// Path replaces the whole path ("/new"): it starts with /, and is
	// a path of URL path characters and valid escapes, without empty, .
	// or .. segments. "" keeps the request's path, or replaces its
	// prefix with Prefix.
	Path string
	// Prefix replaces the route's matched prefix (prefix routes only),
	// segment by segment on the request's spelling as a rewrite's
	// stripPrefix takes it off: on the route "/old", the prefix "/new"
	// redirects /old/x to /new/x and /old to /new, and "/" redirects them
	// to /x and /. A trailing "/" is dropped. It takes no Path.
	Prefix string
	// Status is 301, 302, 303, 307 or 308; 0 means 302, as the Gateway
	// API's default.
	Status int
}

// DefaultRouteRedirectStatus is the status of a [RouteRedirect] without
// one: 302 Found, as the Gateway API's.
const DefaultRouteRedirectStatus = http.StatusFound

// routeAnswer is a route's compiled redirect or fixed answer.
type routeAnswer struct {
	fixed     *answer
	page      *Page    // the redirect's page: its status, an empty body
	loc       []string // the whole Location, when no part of it is the request's
	scheme    string   // "" for the request's
	authority string   // "host[:port]"; "" for the request's
	keepPort  bool     // with authority's host, the request's port
	path      string   // Path; "" for the request's (or its prefix replaced)
	prefix    string   // Prefix, its trailing / dropped; "" with replace false
	replace   bool     // Prefix is given
	segs      int      // the segments of the route's prefix
}

// compileAnswer checks and compiles a route's redirect or fixed answer;
// at is the route's path. A route has a target, a redirect or a fixed
// answer: exactly one.
func compileAnswer(errs *problem.List, at string, h *Host, rt *Route) {
	n := 0
	for _, set := range [...]bool{rt.Target != nil, rt.Redirect != nil, rt.Fixed != nil} {
		if set {
			n++
		}
	}
	if n > 1 {
		errs.Add(CodeRouteAnswerConflict, at, "a route has one of a target, a redirect and a fixed answer")
		return
	}
	switch {
	case rt.Fixed != nil:
		a := *rt.Fixed
		if a.Status == 0 {
			a.Status = DefaultFixedStatus
		}
		checkAnswer(errs, at+".fixed", a)
		rt.answer = &routeAnswer{fixed: newAnswer(a, h.server)}
	case rt.Redirect != nil:
		rt.answer = compileRedirect(errs, at+".redirect", rt)
	}
}

func compileRedirect(errs *problem.List, at string, rt *Route) *routeAnswer {
	rd := *rt.Redirect
	ra := &routeAnswer{scheme: rd.Scheme, path: rd.Path}
	status := rd.Status
	if status == 0 {
		status = DefaultRouteRedirectStatus
	}
	switch status {
	case 301, 302, 303, 307, 308:
	default:
		errs.Add(CodeRouteRedirectStatusInvalid, at+".status", "status "+strconv.Itoa(status)+" is not 301, 302, 303, 307 or 308")
	}
	ra.page = NewPage(status, "", nil, nil)
	switch rd.Scheme {
	case "", "http", "https":
	default:
		errs.Add(CodeRouteRedirectSchemeInvalid, at+".scheme", strconv.Quote(rd.Scheme)+" is not http or https")
	}
	if rd.Host != "" && !validRedirectHost(rd.Host) {
		errs.Add(CodeRouteRedirectHostInvalid, at+".host", strconv.Quote(rd.Host)+": want a host name or an IP literal ([::1] for IPv6), without a port")
	}
	if rd.Port < 0 || rd.Port > 65535 {
		errs.Add(CodeRouteRedirectPortInvalid, at+".port", "port "+strconv.Itoa(rd.Port)+" is not 1-65535 (0 means the scheme's or the request's)")
	}
	if p := rd.Path; p != "" && !validRedirectPath(p) {
		errs.Add(CodeRouteRedirectPathInvalid, at+".path", strconv.Quote(p)+": want a path starting with /, of URL path characters and valid escapes, without empty, . or .. segments, at most 256 bytes")
	}
	if p := rd.Prefix; p != "" {
		switch {
		case rd.Path != "":
			errs.Add(CodeRouteRedirectPathConflict, at+".prefix", "a redirect replaces the path or its prefix, not both")
		case rt.PathType != PathPrefix:
			errs.Add(CodeRouteRedirectPrefixInvalid, at+".prefix", "only a prefix route has a prefix to replace (this one's pathType is "+rt.PathType.String()+")")
		case p != "/" && !validRedirectPath(strings.TrimSuffix(p, "/")):
			errs.Add(CodeRouteRedirectPrefixInvalid, at+".prefix", strconv.Quote(p)+": want / or a path starting with /, of URL path characters and valid escapes, without empty, . or .. segments, at most 256 bytes")
		}
		ra.prefix, ra.replace = strings.TrimSuffix(p, "/"), true
		if base := strings.TrimSuffix(rt.Prefix, "/"); base != "" {
			ra.segs = strings.Count(base, "/")
		}
	}
	port := ""
	switch {
	case rd.Port != 0 && !(rd.Scheme == "http" && rd.Port == 80) && !(rd.Scheme == "https" && rd.Port == 443):
		port = ":" + strconv.Itoa(rd.Port)
	case rd.Port == 0 && rd.Scheme == "":
		ra.keepPort = true
	}
	if rd.Host != "" {
		ra.authority = strings.ToLower(rd.Host) + port
	} else if port != "" || !ra.keepPort {
		// The request's name with a port of the redirect's own (or none).
		ra.authority, ra.keepPort = port, false
	}
	if ra.scheme != "" && rd.Host != "" && ra.path != "" {
		ra.loc = headerValue(ra.scheme + "://" + ra.authority + ra.path)
	}
	return ra
}

// validRedirectHost reports whether h is a host name or an IP literal
// without a port.
func validRedirectHost(h string) bool {
	if len(h) > 253 {
		return false
	}
	if strings.HasPrefix(h, "[") {
		ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
		return strings.HasSuffix(h, "]") && ip != nil && ip.To4() == nil
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i] | 0x20
			if !('a' <= c && c <= 'z' || '0' <= label[i] && label[i] <= '9' || label[i] == '-') {
				return false
			}
		}
	}
	return true
}

// validRedirectPath reports whether p is a path the gate reads as it is:
// URL path characters and valid escapes, no empty, . or .. segment.
func validRedirectPath(p string) bool {
	if len(p) > 256 || p == "" || p[0] != '/' || strings.Contains(p, "//") {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/%", c) >= 0:
		default:
			return false
		}
	}
	v, err := ReadPath(p)
	return err == nil && v.Needs == 0 && v.Forward == p
}

// routeRedirectLoops refuses the redirects that lead back to their own
// route: to the same host (no host, or one the gate finds this host for),
// the same listener (no port, or the scheme's well-known one, or the
// gate's HTTPS port for https) and a path the route's path matches (the
// request's own, a prefix replaced by one under the route's, a path the
// route matches). The route's other matches (methods, headers, query)
// are left out: a client sends them again. A redirect that changes only
// the scheme loops for the requests that came on that scheme: a host's
// HTTPSRedirect is the one that sends plain HTTP to HTTPS.
func (g *Gate) routeRedirectLoops(errs *problem.List, hosts []Host, httpsPort int) {
	var buf [maxHostLen]byte
	for i := range hosts {
		h := g.compiled[i]
		if h.Kind != HostProxy {
			continue
		}
		for j := range h.Routes {
			rt := &h.Routes[j]
			rd := rt.Redirect
			if rd == nil || rt.answer == nil || rt.matcher.invalid {
				continue
			}
			if rd.Host != "" {
				if next, _, _ := g.hosts.lookup(buf[:0], rd.Host); next != h {
					continue
				}
			}
			if rd.Port != 0 && !(rd.Scheme == "http" && rd.Port == 80) && !(rd.Scheme == "https" && (rd.Port == 443 || rd.Port == httpsPort)) {
				continue
			}
			var to string
			switch {
			case rd.Path != "":
				v, err := ReadPath(rd.Path)
				if err != nil || !rt.matcher.matchPath(v.Match) {
					continue
				}
				to = rd.Path
			case rd.Prefix != "":
				p := cmpOr(strings.TrimSuffix(rd.Prefix, "/"), "/")
				v, err := ReadPath(p)
				if err != nil || !rt.matcher.matchPath(v.Match) {
					continue
				}
				to = "the prefix " + rd.Prefix
			default:
				to = "the request's own path"
			}
			errs.Add(CodeRouteRedirectLoop, problem.Index(problem.Index("hosts", i)+".routes", rt.matcher.doc)+".redirect", "redirects to "+to+" on this host, which this route matches again: every request would be redirected forever")
		}
	}
}

// serveAnswer gives a route's redirect or fixed answer.
func (rt *Route) serveAnswer(w http.ResponseWriter, r *http.Request, rq *Request) {
	ra := rt.answer
	decorate(w, r, rq)
	if ra.fixed != nil {
		ra.fixed.write(w, r)
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(Step{Kind: StepAnswer, Status: ra.fixed.status, Name: rt.ID, Reason: "fixed route", Route: rt})
		}
		return
	}
	loc := ra.loc
	if loc == nil || r.URL.RawQuery != "" {
		loc = headerValue(ra.location(r, rq))
	}
	w.Header()["Location"] = loc
	ra.page.write(w, r)
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(Step{Kind: StepRedirect, Status: ra.page.status, Name: loc[0], Reason: "route redirect", Route: rt})
	}
}

// location builds the redirect's Location for r: one string.
func (ra *routeAnswer) location(r *http.Request, rq *Request) string {
	scheme := ra.scheme
	if scheme == "" {
		scheme = cmpOr(rq.Scheme, schemeHTTP)
	}
	var name, port string
	if ra.authority == "" || ra.authority[0] == ':' || ra.keepPort {
		name, port = splitHostPort(r.Host)
		if !ra.keepPort {
			port = ""
		}
	}
	auth := ra.authority
	if auth == "" || auth[0] == ':' {
		auth = name + auth
	}
	head, path := "", ra.path
	if path == "" {
		head, path = ra.redirectPath(r, rq)
	}
	var b strings.Builder
	b.Grow(len(scheme) + 3 + len(auth) + len(port) + len(head) + len(path) + 1 + len(r.URL.RawQuery))
	b.WriteString(scheme)
	b.WriteString("://")
	b.WriteString(auth)
	b.WriteString(port)
	b.WriteString(head)
	b.WriteString(path)
	if q := r.URL.RawQuery; q != "" {
		b.WriteByte('?')
		b.WriteString(q)
	}
	return b.String()
}

// redirectPath returns the request's path, as sent, with the route's
// prefix replaced when the redirect has one: the replacement, and the
// rest of the path.
func (ra *routeAnswer) redirectPath(r *http.Request, rq *Request) (string, string) {
	p := rq.ForwardPath
	if p == "" {
		p = sentPath(r)
	}
	if !ra.replace {
		return "", p
	}
	i := 0
	for n := 0; n < ra.segs; n++ {
		j := strings.IndexByte(p[i+1:], '/')
		if j < 0 {
			i = len(p)
			break
		}
		i += 1 + j
	}
	rest := p[i:]
	if ra.prefix == "" && rest == "" {
		return "", "/"
	}
	return ra.prefix, rest
}

// splitHostPort splits a Host header into its name and its ":port" ("").
func splitHostPort(host string) (string, string) {
	i := strings.LastIndexByte(host, ':')
	if i < 0 || strings.IndexByte(host[i:], ']') >= 0 {
		return host, ""
	}
	return host[:i], host[i:]
}
