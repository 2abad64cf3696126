package gate

import (
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// A template route's values: kept by the gate as segment ranges of the
// path view, read by a target in the forwarded spelling.

// PathValue returns what a template route's "{name}" or "{**name}"
// matched, in the forwarded spelling ([Request.ForwardPath]): the client's
// bytes, escapes and segment parameters included, so a rewrite that
// fills a path from it sends what the client sent. A "{**name}" that
// matched nothing is "". It returns "" for a name the route does not
// have, and for a route that is no template. It allocates nothing; it
// scans the forwarded path once.
func (rq *Request) PathValue(name string) string {
	rt := rq.Route
	if rt == nil {
		return ""
	}
	for k, n := range rt.matcher.names {
		if n == name && rq.kept != nil {
			v := rq.kept.pathValues[k]
			return segments(rq.ForwardPath, int(v.from), int(v.to))
		}
	}
	return ""
}

// segments returns the segments [from, to) of path p, counted from 0
// after the leading "/", with the "/" between them.
func segments(p string, from, to int) string {
	if from >= to {
		return ""
	}
	start, n := -1, -1
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		n++
		switch n {
		case from:
			start = i + 1
		case to:
			if start < 0 {
				return ""
			}
			return p[start:i]
		}
	}
	if start < 0 {
		return ""
	}
	return p[start:]
}

// checkPathValues refuses a route whose target reads a path value its
// path does not have; at is the route's path.
func checkPathValues(errs *problem.List, at string, rt *Route) {
	pr, ok := rt.Target.(PathValueReader)
	if !ok {
		return
	}
	for _, u := range pr.PathValues() {
		if !contains(rt.matcher.names, u.Name) {
			have := "the route's path is no template"
			if rt.PathType == PathTemplate {
				have = "the template has " + strconv.Quote(strings.Join(rt.matcher.names, ", "))
				if len(rt.matcher.names) == 0 {
					have = "the template has no values"
				}
			}
			errs.Add(CodeRouteTargetPathValueUnknown, problem.Join(at+".target", u.Path), "the target reads {"+u.Name+"}, which the route's path does not capture: "+have)
		}
	}
}
