package gate

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// The route table.
//
// A host's routes are ordered once, at New, by precedence (see
// [Host.Routes]), and indexed by their literal part in a trie of path
// segments, ASCII lower case: a node holds the prefix and template routes
// whose literal part ends there and the exact routes whose path does, each
// list in precedence order. A request walks the trie along its path view
// as far as it goes, then tries, from the deepest node up, each node's
// routes until one matches (and no further than the best found so far),
// then the regex routes that precede the best. So a request tests the
// routes its path could match, whatever the number of routes of the host:
// the trie's depth bounds the walk, and a node's routes are those under
// one literal prefix. A host with at most linearRoutes routes is scanned
// in precedence order instead, which costs less at that size than any
// index.

// linearRoutes is the most routes a host scans in order.
const linearRoutes = 8

// maxFoldedSegment bounds the segments folded to lower case on the stack
// for a child lookup; a longer one compares child by child.
const maxFoldedSegment = 64

// routeTable finds a host's route. It is immutable once built.
type routeTable struct {
	linear []Route // every route by precedence (the host's), for a small host; else nil
	plain  int     // how many of linear come first and are plain prefixes
	only   bool    // linear is all plain prefixes
	root   *routeNode
	regex  []*Route // regex routes by precedence
	extra  bool     // some route matches methods, headers or query
}

type routeNode struct {
	seg      string // ASCII lower case
	parent   *routeNode
	children []*routeNode
	index    map[string]*routeNode // children by seg, when there are many
	routes   []*Route              // prefix and template routes, by precedence
	exact    []*Route              // exact routes, by precedence
}

// comparePrecedence orders routes: by Order, then exact before template
// before prefix before regex, then the longer literal part, then a method
// match, then more header matches, then more query matches, then the
// config's order.
func comparePrecedence(a, b *Route) int {
	if c := cmp.Compare(a.Order, b.Order); c != 0 {
		return c
	}
	x, y := &a.matcher, &b.matcher
	if c := cmp.Compare(x.class, y.class); c != 0 {
		return c
	}
	if c := cmp.Compare(y.literal, x.literal); c != 0 {
		return c
	}
	if c := cmp.Compare(y.hasMethods(), x.hasMethods()); c != 0 {
		return c
	}
	if c := cmp.Compare(len(y.headers), len(x.headers)); c != 0 {
		return c
	}
	if c := cmp.Compare(len(y.query), len(x.query)); c != 0 {
		return c
	}
	return cmp.Compare(x.doc, y.doc)
}

func (m *matcher) hasMethods() int {
	if m.methods != 0 || len(m.others) > 0 {
		return 1
	}
	return 0
}

// plain reports whether a route is a prefix without other matches or an
// order: what every route was before matches.
func (rt *Route) plain() bool {
	return rt.PathType == PathPrefix && !rt.matcher.extra && rt.Order == 0
}

// matchKey is the same for two routes that match the same requests as the
// gate reads them: the same path type and path (ASCII case folded, a
// template's value names left out), the same methods, header and query
// matches in any order and header names in any case.
func (rt *Route) matchKey() string {
	m := &rt.matcher
	var b strings.Builder
	b.WriteString(rt.PathType.String())
	b.WriteByte(0)
	switch m.class {
	case classTemplate:
		for _, s := range m.segs {
			b.WriteByte('/')
			switch {
			case s.catchAll:
				b.WriteString("{**}")
			case s.param:
				b.WriteString("{}")
			default:
				b.WriteString(s.lit)
			}
		}
	case classRegex:
		b.WriteString(rt.Prefix)
	default:
		b.WriteString(m.lower)
	}
	var parts []string
	for _, meth := range methodBits {
		if m.methods&methodBit(meth) != 0 {
			parts = append(parts, "m"+meth)
		}
	}
	for _, meth := range m.others {
		parts = append(parts, "m"+meth)
	}
	for _, h := range m.headers {
		parts = append(parts, "h"+h.name+"\x00"+h.typ.String()+"\x00"+h.value)
	}
	for _, q := range m.query {
		parts = append(parts, "q"+q.name+"\x00"+q.typ.String()+"\x00"+q.value)
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	for _, p := range parts {
		b.WriteByte(1)
		b.WriteString(p)
	}
	return b.String()
}

// orderRoutes sorts a host's compiled routes by precedence, refuses two
// with the same matches and order, and builds the table; at is the host's
// path. routes are in config order.
func (h *Host) orderRoutes(errs *problem.List, at string) {
	if len(h.Routes) > 1 {
		seen := make(map[string]int, len(h.Routes))
		for j := range h.Routes {
			rt := &h.Routes[j]
			if rt.matcher.invalid {
				continue // its own problems say what is wrong
			}
			k := strconv.Itoa(rt.Order) + "\x00" + rt.matchKey()
			prev, dup := seen[k]
			if !dup {
				seen[k] = j
				continue
			}
			pair := "routes[" + strconv.Itoa(prev) + "] and routes[" + strconv.Itoa(j) + "]"
			if rt.plain() && h.Routes[prev].plain() {
				errs.Add(CodeRoutePrefixDuplicate, problem.Index(at+".routes", j)+".prefix", pair+" match the same paths (prefixes match ASCII letters in any case)")
			} else {
				errs.Add(CodeRouteMatchDuplicate, problem.Index(at+".routes", j), pair+" have the same matches and order: routes["+strconv.Itoa(j)+"] could never match (an order tells them apart)")
			}
		}
	}
	slices.SortStableFunc(h.Routes, func(a, b Route) int { return comparePrecedence(&a, &b) })
	for i := range h.Routes {
		rt := &h.Routes[i]
		rt.matcher.rank = i
		for _, hm := range rt.matcher.headers {
			if hm.name != "" && !contains(h.matched, hm.name) {
				h.matched = append(h.matched, hm.name)
			}
		}
	}
	h.table = newRouteTable(h.Routes)
}

// newRouteTable indexes routes, in precedence order.
func newRouteTable(routes []Route) routeTable {
	t := routeTable{root: &routeNode{}}
	for i := range routes {
		t.extra = t.extra || routes[i].matcher.extra
	}
	if len(routes) <= linearRoutes {
		t.linear = routes
		for t.plain < len(routes) && routes[t.plain].matcher.class == classPrefix && !routes[t.plain].matcher.extra {
			t.plain++
		}
		t.only = t.plain == len(routes)
		return t
	}
	for i := range routes {
		rt := &routes[i]
		m := &rt.matcher
		switch m.class {
		case classPrefix:
			n := t.root.walk(m.lower)
			n.routes = append(n.routes, rt)
		case classExact:
			n := t.root.walk(m.lower)
			n.exact = append(n.exact, rt)
		case classTemplate:
			n := t.root
			for _, s := range m.segs {
				if s.param || s.catchAll {
					break
				}
				n = n.add(s.lit)
			}
			n.routes = append(n.routes, rt)
		case classRegex:
			t.regex = append(t.regex, rt)
		}
	}
	t.root.indexChildren()
	return t
}

// walk returns the node of a lower-case path ("" is the root), adding
// the nodes on the way.
func (n *routeNode) walk(lower string) *routeNode {
	if lower == "" {
		return n
	}
	for _, seg := range strings.Split(lower[1:], "/") {
		n = n.add(seg)
	}
	return n
}

func (n *routeNode) add(seg string) *routeNode {
	for _, c := range n.children {
		if c.seg == seg {
			return c
		}
	}
	c := &routeNode{seg: seg, parent: n}
	n.children = append(n.children, c)
	return c
}

func (n *routeNode) indexChildren() {
	if len(n.children) > linearRoutes {
		n.index = make(map[string]*routeNode, len(n.children))
		for _, c := range n.children {
			n.index[c.seg] = c
		}
	}
	for _, c := range n.children {
		c.indexChildren()
	}
}

// child returns the child for a segment of the path view, ASCII letters in
// any case.
func (n *routeNode) child(seg string) *routeNode {
	if n.index != nil {
		if c := n.index[seg]; c != nil {
			return c
		}
		upper := false
		for i := 0; i < len(seg); i++ {
			if 'A' <= seg[i] && seg[i] <= 'Z' {
				upper = true
				break
			}
		}
		if !upper {
			return nil
		}
		if len(seg) <= maxFoldedSegment {
			var buf [maxFoldedSegment]byte
			b := buf[:len(seg)]
			for i := 0; i < len(seg); i++ {
				b[i] = lower(seg[i])
			}
			return n.index[string(b)]
		}
	}
	for _, c := range n.children {
		if equalLower(seg, c.seg) {
			return c
		}
	}
	return nil
}

// match returns the route of highest precedence that matches the request
// whose path view is view, or nil. A host of a few plain prefixes (only)
// is scanned by scanPlain alone, which the gate calls itself: a loop
// over them costs what it did before routes had more to match. Otherwise
// the plain prefixes that come first are scanned in a loop of their own,
// then the rest from the first route with more to match; a larger host
// walks the trie.
func (t *routeTable) match(view string, r *http.Request, rq *Request) *Route {
	if t.only {
		return scanPlain(t.linear, view)
	}
	if t.linear == nil {
		return t.walk(view, r, rq)
	}
	if rt := scanPlain(t.linear[:t.plain], view); rt != nil {
		return rt
	}
	return t.scanFrom(t.plain, view, r, rq)
}

// scanPlain returns the first of routes, plain prefixes, that the path
// view is under.
func scanPlain(routes []Route, view string) *Route {
	for i := range routes {
		if underLower(view, routes[i].matcher.lower) {
			return &routes[i]
		}
	}
	return nil
}

// scanFrom tries a small host's routes from the i-th on, of any kind.
func (t *routeTable) scanFrom(i int, view string, r *http.Request, rq *Request) *Route {
	v := reqView{r: r, rq: rq, method: methodBit(r.Method)}
	for ; i < len(t.linear); i++ {
		rt := &t.linear[i]
		if m := &rt.matcher; m.matchPath(view) && (!m.extra || m.matchRest(&v) < 0) {
			return rt
		}
	}
	return nil
}

// walk finds a large host's route through the trie.
func (t *routeTable) walk(view string, r *http.Request, rq *Request) *Route {
	v := reqView{r: r, rq: rq}
	if t.extra {
		v.method = methodBit(r.Method)
	}
	n, whole := t.root, false
	for rest := view[1:]; len(n.children) > 0; {
		seg, tail, more := cutSegment(rest)
		c := n.child(seg)
		if c == nil {
			break
		}
		if n = c; !more {
			whole = true
			break
		}
		rest = tail
	}
	var best *Route
	bestRank := int(^uint(0) >> 1)
	if whole {
		for _, rt := range n.exact {
			if m := &rt.matcher; !m.extra || m.matchRest(&v) < 0 {
				best, bestRank = rt, m.rank
				break
			}
		}
	}
	for x := n; x != nil; x = x.parent {
		for _, rt := range x.routes {
			m := &rt.matcher
			if m.rank >= bestRank {
				break
			}
			if m.class == classTemplate && !m.matchTemplate(view, nil) {
				continue
			}
			if !m.extra || m.matchRest(&v) < 0 {
				best, bestRank = rt, m.rank
				break
			}
		}
	}
	for _, rt := range t.regex {
		m := &rt.matcher
		if m.rank >= bestRank {
			break
		}
		if m.re.MatchString(view) && (!m.extra || m.matchRest(&v) < 0) {
			return rt
		}
	}
	return best
}

// cutSegment cuts a path after its leading "/" at the next "/", as
// strings.Cut(p, "/") does with less to call.
func cutSegment(p string) (seg, rest string, more bool) {
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i], p[i+1:], true
	}
	return p, "", false
}
