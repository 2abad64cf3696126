package gate

import (
	"net/http"
	"net/textproto"
	"regexp"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/pct"
	"github.com/paduraksa/paduraksa/internal/problem"
	"golang.org/x/net/http/httpguts"
)

// Route matches.
//
// A route matches a request when its path matches the path view
// ([PathView.Match]) as its [PathType] says and every part of its
// [RouteMatch] that is set matches too: one of its methods, all of its
// header matches, all of its query matches. Headers are read as the
// forwarder will send them, so that the route and the upstream never read
// two different requests: a name with an underscore never matches a match
// on its hyphen spelling (the forwarder drops it, or, on a host that keeps
// underscores, drops it when a route of the host matches on the hyphen
// spelling, see [Request.Owns]), a name the client lists in Connection is
// absent (the forwarder removes it), and a header a host policy
// established for the upstream ([Request.SetUpstreamHeader], forward
// auth's identity) is matched on the policy's value, which is the one sent.
//
// A header sent on several lines, or on one line as a comma list, is
// matched on its values joined with ", " (RFC 9110 section 5.3: the one
// combination a recipient may make), so exact "admin" does not match the
// lines "user" and "admin"; present and absent look at any line. Header
// names match in any case, values as written.
//
// Query parameters are read from the raw query the upstream receives,
// split at "&" (";" is a plain character), names and values compared
// after percent-decoding ("+" is a space). A parameter given more than
// once is ambiguous, since upstreams read the first or the last: exact and
// regex match only when every occurrence matches; present needs one. A
// name or value with a malformed escape matches nothing.
//
// Among the routes that match, precedence decides (see [Host.Routes]).

// PathType says how a route's path ([Route.Prefix]) is read.
type PathType uint8

const (
	// PathPrefix matches the path view under the path on segment
	// boundaries, ASCII letters in any case (the zero value).
	PathPrefix PathType = iota
	// PathExact matches the path view equal to the path, ASCII letters in
	// any case; a trailing "/" counts ("/a/" is not "/a").
	PathExact
	// PathTemplate matches segment by segment: a literal segment as a
	// prefix's segment matches it, "{name}" any one non-empty segment, and
	// a last "{**name}" the rest of the path, possibly empty
	// ("/api/{id}/{**rest}"). [Request.PathValue] returns what each name
	// matched.
	PathTemplate
	// PathRegex matches the whole path view with an RE2 expression
	// (package regexp), anchored at both ends whether or not it says so,
	// case-sensitive unless it says (?i). An expression that matches the
	// empty string is refused.
	PathRegex
)

// HeaderMatchType says how a [HeaderMatch] compares.
type HeaderMatchType uint8

const (
	// HeaderExact: the (joined) value equals Value (the zero value).
	HeaderExact HeaderMatchType = iota
	// HeaderPrefix: the value starts with Value.
	HeaderPrefix
	// HeaderRegex: the value matches the RE2 expression Value, anchored
	// at both ends.
	HeaderRegex
	// HeaderPresent: the header is there, with any value, even empty.
	HeaderPresent
	// HeaderAbsent: the header is not there.
	HeaderAbsent
)

// HeaderMatch is one header a route needs. Name is a header name in any
// case; Value is the value to compare, none for present and absent.
type HeaderMatch struct {
	Name  string
	Type  HeaderMatchType
	Value string
}

// QueryMatchType says how a [QueryMatch] compares.
type QueryMatchType uint8

const (
	// QueryExact: every occurrence's decoded value equals Value (the
	// zero value).
	QueryExact QueryMatchType = iota
	// QueryRegex: every occurrence's decoded value matches the RE2
	// expression Value, anchored at both ends.
	QueryRegex
	// QueryPresent: the parameter is there at least once, with any
	// value.
	QueryPresent
)

// QueryMatch is one query parameter a route needs. Name is compared after
// percent-decoding, case-sensitive.
type QueryMatch struct {
	Name  string
	Type  QueryMatchType
	Value string
}

// RouteMatch is what a route needs of a request besides its path. Every
// part that is set must match; the zero value matches any request.
type RouteMatch struct {
	// Methods matches any of these methods, case-sensitive ("GET" does
	// not take HEAD); empty means any method.
	Methods []string
	// Headers must all match.
	Headers []HeaderMatch
	// Query must all match.
	Query []QueryMatch
}

var (
	pathTypeNames        = enum.Names[PathType]{"prefix", "exact", "template", "regex"}
	headerMatchTypeNames = enum.Names[HeaderMatchType]{"exact", "prefix", "regex", "present", "absent"}
	queryMatchTypeNames  = enum.Names[QueryMatchType]{"exact", "regex", "present"}
)

// String returns the type's name: "prefix", "exact", "template" or "regex".
func (t PathType) String() string { return pathTypeNames.Name(t) }

// ParsePathType returns the path type a name stands for.
func ParsePathType(name string) (PathType, bool) { return pathTypeNames.Parse(name) }

// PathTypeNames returns the names of the path types, the default first:
// the names a config document uses.
func PathTypeNames() []string { return pathTypeNames }

// String returns the type's name: "exact", "prefix", "regex", "present"
// or "absent".
func (t HeaderMatchType) String() string { return headerMatchTypeNames.Name(t) }

// ParseHeaderMatchType returns the header match type a name stands for.
func ParseHeaderMatchType(name string) (HeaderMatchType, bool) {
	return headerMatchTypeNames.Parse(name)
}

// HeaderMatchTypeNames returns the names of the header match types, the
// default first: the names a config document uses.
func HeaderMatchTypeNames() []string { return headerMatchTypeNames }

// String returns the type's name: "exact", "regex" or "present".
func (t QueryMatchType) String() string { return queryMatchTypeNames.Name(t) }

// ParseQueryMatchType returns the query match type a name stands for.
func ParseQueryMatchType(name string) (QueryMatchType, bool) {
	return queryMatchTypeNames.Parse(name)
}

// QueryMatchTypeNames returns the names of the query match types, the
// default first: the names a config document uses.
func QueryMatchTypeNames() []string { return queryMatchTypeNames }

// MaxPathValues is the most "{name}" and "{**name}" a template has.
const MaxPathValues = 8

// Path classes, in precedence order.
const (
	classExact uint8 = iota
	classTemplate
	classPrefix
	classRegex
)

// The methods a route's bitmask holds; others are listed.
var methodBits = [...]string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
	http.MethodConnect, http.MethodOptions, http.MethodTrace, http.MethodPatch,
}

// methodBit returns the bit of a common method, or 0.
func methodBit(m string) uint16 {
	switch m {
	case http.MethodGet:
		return 1 << 0
	case http.MethodHead:
		return 1 << 1
	case http.MethodPost:
		return 1 << 2
	case http.MethodPut:
		return 1 << 3
	case http.MethodDelete:
		return 1 << 4
	case http.MethodConnect:
		return 1 << 5
	case http.MethodOptions:
		return 1 << 6
	case http.MethodTrace:
		return 1 << 7
	case http.MethodPatch:
		return 1 << 8
	}
	return 0
}

// matcher is a route's compiled path and matches.
type matcher struct {
	typ     PathType
	class   uint8
	lower   string // prefix (without a trailing "/") or exact path, ASCII lower case
	literal int    // length of the literal part, for precedence
	segs    []tmplSeg
	names   []string // a template's value names, in order
	re      *regexp.Regexp

	methods uint16   // common methods
	others  []string // other methods
	headers []headerMatcher
	query   []queryMatcher
	extra   bool // any of methods, headers, query

	doc     int  // index in the host's config
	rank    int  // index in precedence order
	invalid bool // New reported a problem of the route
}

// tmplSeg is one segment of a template.
type tmplSeg struct {
	lit      string // lower case; for a literal segment
	param    bool   // {name}
	catchAll bool   // {**name}
}

type headerMatcher struct {
	name  string // canonical
	typ   HeaderMatchType
	value string
	re    *regexp.Regexp
}

type queryMatcher struct {
	name  string
	typ   QueryMatchType
	value string
	re    *regexp.Regexp
}

// segRange is the segments [from, to) of the path a template value
// matched, counted from 0 after the leading "/".
type segRange struct{ from, to int32 }

// notForwarded are the request fields a header match may not name: the
// forwarder never sends the client's (hop-by-hop fields, the forwarding
// fields it writes itself), or net/http keeps them out of the header map
// (Host).
var notForwarded = [...]string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Http2-Settings", "Host",
	"Forwarded", "X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "X-Forwarded-Prefix",
	"X-Forwarded-Port", "X-Real-Ip",
}

// compileMatch checks and compiles a route's path and matches; at is its
// path, doc its index.
func compileMatch(errs *problem.List, at string, rt *Route, doc int) {
	m := &rt.matcher
	m.typ, m.doc = rt.PathType, doc
	switch rt.PathType {
	case PathPrefix:
		m.class = classPrefix
		if err := CheckPrefix(rt.Prefix); err != nil {
			errs.Add(CodeRoutePrefixInvalid, at+".prefix", strconv.Quote(rt.Prefix)+": "+strings.TrimPrefix(err.Error(), "gate: "))
		}
		rt.Prefix = strings.TrimSuffix(rt.Prefix, "/")
		m.lower = lowerASCII(rt.Prefix)
		m.literal = len(m.lower)
	case PathExact:
		m.class = classExact
		if err := CheckPrefix(rt.Prefix); err != nil {
			errs.Add(CodeRoutePrefixInvalid, at+".prefix", strconv.Quote(rt.Prefix)+": "+strings.TrimPrefix(err.Error(), "gate: "))
		}
		if rt.Prefix == "" {
			rt.Prefix = "/"
		}
		m.lower = lowerASCII(rt.Prefix)
		m.literal = len(m.lower)
	case PathTemplate:
		m.class = classTemplate
		compileTemplate(errs, at+".prefix", m, rt.Prefix)
	case PathRegex:
		m.class = classRegex
		re, err := regexp.Compile(`^(?:` + rt.Prefix + `)$`)
		switch {
		case err != nil:
			errs.Add(CodeRouteRegexInvalid, at+".prefix", strconv.Quote(rt.Prefix)+": "+strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		case re.MatchString(""):
			errs.Add(CodeRouteRegexEmpty, at+".prefix", strconv.Quote(rt.Prefix)+" matches the empty path; a path always has at least \"/\"")
		default:
			m.re = re
		}
	default:
		errs.Add(CodeRoutePathTypeUnknown, at+".pathType", "unknown path type "+rt.PathType.String()+" (want "+pathTypeNames.List()+")")
	}

	mm := &rt.Match
	for k, meth := range mm.Methods {
		if !isToken(meth) {
			errs.Add(CodeRouteMatchMethodInvalid, problem.Index(at+".match.methods", k), strconv.Quote(meth)+" is not a method token")
			continue
		}
		if b := methodBit(meth); b != 0 {
			m.methods |= b
		} else if !contains(m.others, meth) {
			m.others = append(m.others, meth)
		}
	}
	for k, hm := range mm.Headers {
		hat := problem.Index(at+".match.headers", k)
		c := headerMatcher{typ: hm.Type, value: hm.Value}
		switch {
		case !isToken(hm.Name):
			errs.Add(CodeRouteMatchHeaderNameInvalid, hat+".name", strconv.Quote(hm.Name)+" is not a header name")
		case strings.IndexByte(hm.Name, '_') >= 0:
			errs.Add(CodeRouteMatchHeaderNameInvalid, hat+".name", strconv.Quote(hm.Name)+" has an underscore: the forwarder drops such names, and CGI-style upstreams read them as hyphens")
		default:
			c.name = textproto.CanonicalMIMEHeaderKey(hm.Name)
			if contains(notForwarded[:], c.name) {
				errs.Add(CodeRouteMatchHeaderNameInvalid, hat+".name", c.name+" is never forwarded as the client sent it (hop-by-hop, the Host, or a forwarding field the gateway writes itself)")
			} else if contains(rt.owned, c.name) {
				errs.Add(CodeRouteMatchHeaderOwned, hat+".name", c.name+" is set by the route's own policies: the client's value is removed after the match")
			}
		}
		if !headerMatchTypeNames.Known(hm.Type) {
			errs.Add(CodeRouteMatchHeaderTypeUnknown, hat+".type", "unknown header match type "+hm.Type.String()+" (want "+headerMatchTypeNames.List()+")")
		}
		switch hm.Type {
		case HeaderPresent, HeaderAbsent:
			if hm.Value != "" {
				errs.Add(CodeRouteMatchValueUnused, hat+".value", "a "+hm.Type.String()+" match takes no value")
			}
		case HeaderExact, HeaderPrefix:
			switch {
			case hm.Value == "":
				errs.Add(CodeRouteMatchValueMissing, hat+".value", "an "+hm.Type.String()+" match needs a value (present matches any)")
			case !httpguts.ValidHeaderFieldValue(hm.Value) || trimmed(hm.Value) != hm.Value:
				errs.Add(CodeRouteMatchValueInvalid, hat+".value", strconv.Quote(hm.Value)+" is a value no request carries: a control character, or space at either end")
			}
		case HeaderRegex:
			c.re = compileValueRegex(errs, hat+".value", hm.Value)
		}
		m.headers = append(m.headers, c)
	}
	for k, qm := range mm.Query {
		qat := problem.Index(at+".match.query", k)
		if qm.Name == "" {
			errs.Add(CodeRouteMatchQueryNameInvalid, qat+".name", "a query match needs a name")
		}
		c := queryMatcher{name: qm.Name, typ: qm.Type, value: qm.Value}
		switch qm.Type {
		case QueryPresent:
			if qm.Value != "" {
				errs.Add(CodeRouteMatchValueUnused, qat+".value", "a present match takes no value")
			}
		case QueryExact:
			if qm.Value == "" {
				errs.Add(CodeRouteMatchValueMissing, qat+".value", "an exact match needs a value (present matches any)")
			}
		case QueryRegex:
			c.re = compileValueRegex(errs, qat+".value", qm.Value)
		default:
			errs.Add(CodeRouteMatchQueryTypeUnknown, qat+".type", "unknown query match type "+qm.Type.String()+" (want "+queryMatchTypeNames.List()+")")
		}
		m.query = append(m.query, c)
	}
	m.extra = m.methods != 0 || len(m.others) > 0 || len(m.headers) > 0 || len(m.query) > 0
}

// compileValueRegex compiles a header or query value's expression,
// anchored; at is the value's path.
func compileValueRegex(errs *problem.List, at, expr string) *regexp.Regexp {
	if expr == "" {
		errs.Add(CodeRouteMatchValueMissing, at, "a regex match needs an expression (present matches any)")
		return nil
	}
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil {
		errs.Add(CodeRouteMatchValueInvalid, at, strconv.Quote(expr)+": "+strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		return nil
	}
	return re
}

// compileTemplate parses a path template; at is its path.
func compileTemplate(errs *problem.List, at string, m *matcher, tmpl string) {
	if tmpl == "" || tmpl[0] != '/' {
		errs.Add(CodeRoutePrefixInvalid, at, strconv.Quote(tmpl)+": a template starts with /")
		return
	}
	// The literal part, for precedence: the template up to its first
	// value, without a trailing "/" ("/api" of "/api/{id}").
	lit, _, _ := strings.Cut(tmpl, "{")
	m.literal = len(strings.TrimSuffix(lit, "/"))
	var sample strings.Builder // the template with each value "x", for CheckPrefix
	bad := false
	for _, seg := range strings.Split(tmpl[1:], "/") {
		sample.WriteByte('/')
		if !strings.ContainsAny(seg, "{}") {
			m.segs = append(m.segs, tmplSeg{lit: lowerASCII(seg)})
			sample.WriteString(seg)
			continue
		}
		sample.WriteByte('x')
		name, closed := strings.CutSuffix(seg, "}")
		name, opened := strings.CutPrefix(name, "{")
		if !opened || !closed || strings.ContainsAny(name, "{}") {
			errs.Add(CodeRouteTemplateSegmentInvalid, at, strconv.Quote(seg)+": a segment is a literal or one {name} or {**name}, nothing around it")
			bad = true
			continue
		}
		s := tmplSeg{param: true}
		if rest, ok := strings.CutPrefix(name, "**"); ok {
			s = tmplSeg{catchAll: true}
			name = rest
		}
		switch {
		case name == "":
			errs.Add(CodeRouteTemplateNameInvalid, at, strconv.Quote(seg)+": an empty name")
			bad = true
		case !validValueName(name):
			errs.Add(CodeRouteTemplateNameInvalid, at, strconv.Quote(seg)+": a name is letters, digits, \"_\", \"-\" and \".\" (no constraints, defaults or optional values)")
			bad = true
		}
		for _, n := range m.names {
			if strings.EqualFold(n, name) {
				errs.Add(CodeRouteTemplateNameDuplicate, at, strconv.Quote(name)+" is named twice")
				bad = true
			}
		}
		m.names = append(m.names, name)
		m.segs = append(m.segs, s)
	}
	catchAlls := 0
	for _, s := range m.segs {
		if s.catchAll {
			catchAlls++
		}
	}
	switch {
	case catchAlls > 1:
		errs.Add(CodeRouteTemplateCatchAllInvalid, at, strconv.Quote(tmpl)+": "+strconv.Itoa(catchAlls)+" {**name} values; a template has at most one, last")
		bad = true
	case catchAlls == 1 && !m.segs[len(m.segs)-1].catchAll:
		errs.Add(CodeRouteTemplateCatchAllInvalid, at, strconv.Quote(tmpl)+": a {**name} takes the rest of the path, so it is the last segment")
		bad = true
	}
	if len(m.names) > MaxPathValues {
		errs.Add(CodeRouteTemplateNameInvalid, at, strconv.Itoa(len(m.names))+" values; at most "+strconv.Itoa(MaxPathValues))
		bad = true
	}
	if err := CheckPrefix(sample.String()); err != nil && !bad {
		errs.Add(CodeRoutePrefixInvalid, at, strconv.Quote(tmpl)+": "+strings.TrimPrefix(err.Error(), "gate: "))
	}
}

// validValueName reports whether a template value's name is letters,
// digits, "_", "-" and ".".
func validValueName(n string) bool {
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func trimmed(s string) string { return strings.Trim(s, " \t") }

// matchPath reports whether the path view matches the route's path.
func (m *matcher) matchPath(view string) bool {
	switch m.class {
	case classPrefix:
		return underLower(view, m.lower)
	case classExact:
		return equalLower(view, m.lower)
	case classTemplate:
		return m.matchTemplate(view, nil)
	}
	return m.re.MatchString(view)
}

// matchTemplate reports whether the path view matches the template,
// writing the segments of each value to vals when it is not nil.
func (m *matcher) matchTemplate(view string, vals *[MaxPathValues]segRange) bool {
	rest, done := view[1:], false
	idx, k := int32(0), 0
	for _, s := range m.segs {
		if s.catchAll {
			if vals != nil {
				to := idx
				if !done {
					to += int32(strings.Count(rest, "/")) + 1
				}
				vals[k] = segRange{idx, to}
			}
			return true
		}
		if done {
			return false
		}
		seg, tail, more := cutSegment(rest)
		if s.param {
			if seg == "" {
				return false
			}
			if vals != nil {
				vals[k] = segRange{idx, idx + 1}
			}
			k++
		} else if !equalLower(seg, s.lit) {
			return false
		}
		rest, done = tail, !more
		idx++
	}
	return done
}

// reqView is what a route's matches read of one request, looked up once.
type reqView struct {
	r      *http.Request
	rq     *Request
	method uint16 // methodBit of the method
	conn   []string
	read   bool // conn read
}

// matchRest reports whether the request meets the route's methods,
// headers and query: -1 when it does, else the index of the first part
// that fails (0 the methods, 1+i header i, 1+len(headers)+j query j).
func (m *matcher) matchRest(v *reqView) int {
	if m.methods != 0 || len(m.others) > 0 {
		if m.methods&v.method == 0 && (v.method != 0 || !contains(m.others, v.r.Method)) {
			return 0
		}
	}
	for i := range m.headers {
		if !m.headers[i].match(v) {
			return 1 + i
		}
	}
	for j := range m.query {
		if !m.query[j].match(v) {
			return 1 + len(m.headers) + j
		}
	}
	return -1
}

// values returns the request's lines of the header as the forwarder
// sends it: a policy's value for the upstream, else the client's, none
// when the client lists the name in Connection.
func (v *reqView) values(name string) []string {
	if up := v.rq.Upstream; up != nil {
		if vv, ok := up[name]; ok {
			return vv
		}
	}
	vv := v.r.Header[name]
	if len(vv) == 0 {
		return nil
	}
	if !v.read {
		v.conn, v.read = v.r.Header["Connection"], true
	}
	if len(v.conn) > 0 && connectionListed(v.conn, name) {
		return nil
	}
	return vv
}

// connectionListed reports whether a Connection value lists name.
func connectionListed(conn []string, name string) bool {
	for _, line := range conn {
		for line != "" {
			var tok string
			tok, line, _ = strings.Cut(line, ",")
			if strings.EqualFold(textproto.TrimString(tok), name) {
				return true
			}
		}
	}
	return false
}

func (h *headerMatcher) match(v *reqView) bool {
	vv := v.values(h.name)
	switch h.typ {
	case HeaderPresent:
		return len(vv) > 0
	case HeaderAbsent:
		return len(vv) == 0
	}
	if len(vv) == 0 {
		return false
	}
	switch h.typ {
	case HeaderExact:
		_, equal := joinedPrefix(vv, h.value)
		return equal
	case HeaderPrefix:
		prefix, _ := joinedPrefix(vv, h.value)
		return prefix
	}
	if len(vv) == 1 {
		return h.re.MatchString(vv[0])
	}
	b := v.rq.scratchBuf()
	for i, s := range vv {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, s...)
	}
	v.rq.keepScratch(b)
	return h.re.Match(b)
}

// joinedPrefix reports whether want is a prefix of the lines joined with
// ", ", and whether it is all of them.
func joinedPrefix(vv []string, want string) (prefix, equal bool) {
	for i, s := range vv {
		if i > 0 {
			if len(want) < 2 {
				return want == "" || want == ",", false
			}
			if want[0] != ',' || want[1] != ' ' {
				return false, false
			}
			want = want[2:]
		}
		if len(want) <= len(s) {
			if s[:len(want)] != want {
				return false, false
			}
			return true, len(want) == len(s) && i == len(vv)-1
		}
		if want[:len(s)] != s {
			return false, false
		}
		want = want[len(s):]
	}
	return want == "", want == ""
}

func (q *queryMatcher) match(v *reqView) bool {
	raw := v.r.URL.RawQuery
	found := false
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		k, val, _ := strings.Cut(pair, "=")
		if !pct.Equal(k, q.name) {
			continue
		}
		found = true
		switch q.typ {
		case QueryPresent:
			return true
		case QueryExact:
			if !pct.Equal(val, q.value) {
				return false
			}
		case QueryRegex:
			if !q.matchRegex(val, v.rq) {
				return false
			}
		}
	}
	return found
}

// matchRegex matches a raw query value, decoded, with q's expression.
func (q *queryMatcher) matchRegex(raw string, rq *Request) bool {
	if !strings.ContainsAny(raw, "%+") {
		return q.re.MatchString(raw)
	}
	b := rq.scratchBuf()
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '+':
			b = append(b, ' ')
		case '%':
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				rq.keepScratch(b)
				return false
			}
			b = append(b, unhex(raw[i+1])<<4|unhex(raw[i+2]))
			i += 2
		default:
			b = append(b, c)
		}
	}
	rq.keepScratch(b)
	return q.re.Match(b)
}

// scratchBuf returns the request's scratch buffer, emptied: regex matches
// on a header sent twice or an escaped query value decode into it, so a
// pooled request allocates it once.
func (rq *Request) scratchBuf() []byte { return rq.keep().scratch[:0] }

// keepScratch keeps b as the scratch buffer, unless it grew past
// maxScratch: a pooled Request does not hold on to a large header.
func (rq *Request) keepScratch(b []byte) {
	if cap(b) <= maxScratch {
		rq.keep().scratch = b
	}
}
