package gate

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/redact"
)

// The route step's reasons, for the trace: which match decided, or which
// failed. They run only with a tracer, over every route of the host.

// explainRoute says why rt won: the route it won over (the next one in
// precedence that matches too) and the precedence key that decided, and
// the first route of higher precedence whose path matched, with the match
// it failed.
func explainRoute(h *Host, rt *Route, view string, r *http.Request, rq *Request) string {
	v := reqView{r: r, rq: rq, method: methodBit(r.Method)}
	var b strings.Builder
	var over *Route
	for i := rt.matcher.rank + 1; i < len(h.Routes); i++ {
		if o := &h.Routes[i]; o.matcher.matchPath(view) && o.matcher.matchRest(&v) < 0 {
			over = o
			break
		}
	}
	if over == nil {
		b.WriteString("no other route matches")
	} else {
		b.WriteString("won over " + RouteLabel(over) + " by " + decidingKey(rt, over, r))
	}
	for i := range rt.matcher.rank {
		if o := &h.Routes[i]; o.matcher.matchPath(view) {
			b.WriteString("; " + RouteLabel(o) + " comes first but " + failedMatch(o, o.matcher.matchRest(&v), &v))
			break
		}
	}
	return b.String()
}

// explainMiss returns the route of highest precedence whose path matches
// and the match it failed, or nil and why none did.
func explainMiss(h *Host, view string, r *http.Request, rq *Request) (*Route, string) {
	v := reqView{r: r, rq: rq, method: methodBit(r.Method)}
	for i := range h.Routes {
		if o := &h.Routes[i]; o.matcher.matchPath(view) {
			return o, "no route: route " + RouteLabel(o) + ": " + failedMatch(o, o.matcher.matchRest(&v), &v)
		}
	}
	return nil, "no route: no route's path matches"
}

// decidingKey names the first key of comparePrecedence on which a comes
// before b.
func decidingKey(a, b *Route, r *http.Request) string {
	x, y := &a.matcher, &b.matcher
	switch {
	case a.Order != b.Order:
		return "order " + strconv.Itoa(a.Order) + " (before " + strconv.Itoa(b.Order) + ")"
	case x.class != y.class:
		return "its " + a.PathType.String() + " path (before " + b.PathType.String() + ")"
	case x.literal != y.literal:
		return "a longer path (" + strconv.Quote(a.Prefix) + " over " + strconv.Quote(b.Prefix) + ")"
	case x.hasMethods() != y.hasMethods():
		return "method " + r.Method
	case len(x.headers) != len(y.headers):
		return headerWord(len(x.headers)) + " " + headerNames(x) + " (" + strconv.Itoa(len(x.headers)) + " over " + strconv.Itoa(len(y.headers)) + ")"
	case len(x.query) != len(y.query):
		names := make([]string, len(x.query))
		for i, q := range x.query {
			names[i] = q.name
		}
		return "query " + strings.Join(names, ", ") + " (" + strconv.Itoa(len(x.query)) + " over " + strconv.Itoa(len(y.query)) + ")"
	}
	return "the config's order"
}

func headerWord(n int) string {
	if n == 1 {
		return "header"
	}
	return "headers"
}

func headerNames(m *matcher) string {
	names := make([]string, len(m.headers))
	for i, h := range m.headers {
		names[i] = h.name
	}
	return strings.Join(names, ", ")
}

// failedMatch says what part idx (matchRest's result) of rt's matches
// the request failed. It names the route's own values, never the
// request's, which may be credentials.
func failedMatch(rt *Route, idx int, v *reqView) string {
	m, r := &rt.matcher, v.r
	switch {
	case idx < 0:
		return "it matches"
	case idx == 0:
		ms := make([]string, 0, len(rt.Match.Methods))
		for _, meth := range methodBits {
			if m.methods&methodBit(meth) != 0 {
				ms = append(ms, meth)
			}
		}
		ms = append(ms, m.others...)
		return "method " + r.Method + " is not " + strings.Join(ms, ", ")
	case idx <= len(m.headers):
		h := &m.headers[idx-1]
		switch {
		case h.typ == HeaderAbsent:
			return "header " + h.name + " present"
		case len(v.values(h.name)) > 0:
		case len(r.Header[h.name]) > 0:
			return "header " + h.name + " absent as forwarded (the request lists it in Connection)"
		default:
			return "header " + h.name + " absent"
		}
		if redact.Name(h.name) {
			return "header " + h.name + " does not match " + h.typ.String() + " " + redact.Shown
		}
		return "header " + h.name + " does not match " + h.typ.String() + " " + strconv.Quote(h.value)
	}
	q := &m.query[idx-1-len(m.headers)]
	if q.typ == QueryPresent {
		return "query " + q.name + " absent"
	}
	present := queryMatcher{name: q.name, typ: QueryPresent}
	if !present.match(v) {
		return "query " + q.name + " absent"
	}
	return "query " + q.name + " does not match " + q.typ.String() + " " + strconv.Quote(q.value) + " (every occurrence must)"
}
