package gate

import (
	"math/rand/v2"
	"net/http"
	"net/textproto"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzRouteMatcher checks the compiled route table, scanned and as a
// trie, against a reference written from the docs: every route tested in
// precedence order, sorted by its own keys, each match read its own way
// (headers joined, the query split and unescaped by package url, template
// segments compared one by one, regular expressions compiled anew). Route
// sets and requests are drawn from small alphabets so that they overlap:
// paths in both cases, segment parameters and escapes, headers on one
// line or two or listed in Connection, parameters given twice.
func FuzzRouteMatcher(f *testing.F) {
	for _, s := range []uint64{0, 1, 2, 3, 42, 1 << 40} {
		f.Add(s, uint8(5), uint8(30))  // scanned
		f.Add(s, uint8(20), uint8(60)) // a trie
	}
	f.Fuzz(func(t *testing.T, seed uint64, nRoutes, nRequests uint8) {
		rng := rand.New(rand.NewPCG(seed, uint64(nRoutes)))
		routes := genRoutes(rng, 1+int(nRoutes)%24)
		var got struct {
			id   string
			vals map[string]string
		}
		target := TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {
			got.id = rq.Route.ID
			got.vals = map[string]string{}
			for _, n := range rq.Route.matcher.names {
				got.vals[n] = rq.PathValue(n)
			}
			w.WriteHeader(http.StatusNoContent)
		})
		for i := range routes {
			routes[i].Target = target
		}
		var g *Gate
		for range 4 {
			var err error
			if g, err = New(Config{Hosts: []Host{{Names: []string{"f.test"}, Routes: routes}}}); err == nil {
				break
			}
			// Leave out the routes New refuses (duplicates, mostly).
			bad := map[int]bool{}
			for _, p := range codePaths(err) {
				if _, rest, ok := strings.Cut(p, "routes["); ok {
					n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ']')])
					bad[n] = true
				}
			}
			kept := routes[:0]
			for i, rt := range routes {
				if !bad[i] {
					kept = append(kept, rt)
				}
			}
			routes = kept
		}
		if g == nil {
			t.Fatalf("New refuses the routes: %+v", routes)
		}
		for range 1 + int(nRequests)%64 {
			r := genRequest(rng)
			view, err := ReadPath(RequestPath(r))
			if err != nil {
				t.Fatalf("%s: generated a path the view refuses: %v", r.RequestURI, err)
			}
			want, wantVals := refRoute(routes, view, r)
			got.id = ""
			w := newNopWriter()
			g.ServeHTTP(w, r)
			switch {
			case want == nil && w.status != http.StatusNotFound:
				t.Fatalf("%s %s %v: status %d (route %q), want 404\nroutes: %s", r.Method, r.RequestURI, r.Header, w.status, got.id, describeRoutes(routes))
			case want != nil && got.id != want.ID:
				t.Fatalf("%s %s %v: route %q, want %q\nroutes: %s", r.Method, r.RequestURI, r.Header, got.id, want.ID, describeRoutes(routes))
			case want != nil && want.PathType == PathTemplate:
				for n, v := range wantVals {
					if got.vals[n] != v {
						t.Fatalf("%s (forwarded %q): {%s} is %q, want %q", r.RequestURI, view.Forward, n, got.vals[n], v)
					}
				}
			}
		}
	})
}

func describeRoutes(routes []Route) string {
	var b strings.Builder
	for _, rt := range routes {
		b.WriteString("\n  " + rt.ID + " " + rt.PathType.String() + " " + strconv.Quote(rt.Prefix) + " order " + strconv.Itoa(rt.Order))
		b.WriteString(" methods " + strings.Join(rt.Match.Methods, ","))
		for _, h := range rt.Match.Headers {
			b.WriteString(" header " + h.Name + " " + h.Type.String() + " " + strconv.Quote(h.Value))
		}
		for _, q := range rt.Match.Query {
			b.WriteString(" query " + q.Name + " " + q.Type.String() + " " + strconv.Quote(q.Value))
		}
	}
	return b.String()
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

func genRoutes(rng *rand.Rand, n int) []Route {
	seg := func() string { return pick(rng, "a", "b", "api", "v1") }
	var out []Route
	for i := range n {
		rt := Route{ID: "r" + strconv.Itoa(i)}
		depth := rng.IntN(3)
		var p strings.Builder
		for range depth {
			p.WriteString("/" + seg())
		}
		switch rng.IntN(8) {
		case 0, 1, 2:
			rt.Prefix = p.String() + pick(rng, "", "", "/")
		case 3:
			rt.PathType, rt.Prefix = PathExact, cmpOr(p.String(), "/")+pick(rng, "", "", "/")
		case 4, 5:
			rt.PathType = PathTemplate
			rt.Prefix = p.String() + pick(rng, "/{x}", "/{x}/"+seg(), "/{x}/{**rest}", "/{**rest}", "/"+seg()+"/{y}")
		case 6:
			rt.PathType = PathRegex
			rt.Prefix = pick(rng, `/a/.*`, `/(api|b)(/.*)?`, `(?i)/API/v[0-9]`, `/[ab]`, `/.+/v1`)
		default:
			rt.Prefix = pick(rng, "", "/")
		}
		if rng.IntN(3) == 0 {
			rt.Match.Methods = pick(rng, []string{"GET"}, []string{"GET", "HEAD"}, []string{"POST", "PURGE"})
		}
		for range rng.IntN(3) {
			h := HeaderMatch{Name: pick(rng, "X-A", "x-a", "X-B"), Type: HeaderMatchType(rng.IntN(5))}
			switch h.Type {
			case HeaderExact:
				h.Value = pick(rng, "1", "2", "1, 2")
			case HeaderPrefix:
				h.Value = pick(rng, "1", "2")
			case HeaderRegex:
				h.Value = pick(rng, "[12]", "1, .*", "2")
			}
			rt.Match.Headers = append(rt.Match.Headers, h)
		}
		for range rng.IntN(3) {
			q := QueryMatch{Name: pick(rng, "q", "r", "q r"), Type: QueryMatchType(rng.IntN(3))}
			switch q.Type {
			case QueryExact:
				q.Value = pick(rng, "1", "2", "a b")
			case QueryRegex:
				q.Value = pick(rng, "[12]", "a.*")
			}
			rt.Match.Query = append(rt.Match.Query, q)
		}
		rt.Order = pick(rng, 0, 0, 0, 0, -1, 1)
		out = append(out, rt)
	}
	return out
}

func genRequest(rng *rand.Rand) *http.Request {
	var p strings.Builder
	for range rng.IntN(4) {
		p.WriteString("/" + pick(rng, "a", "A", "b", "api", "API", "v1", "V1", "x", "%61", "a;p=1", "v1;x"))
	}
	path := p.String()
	if path == "" || rng.IntN(5) == 0 {
		path += "/"
	}
	var q []string
	for range rng.IntN(4) {
		q = append(q, pick(rng, "q=1", "q=2", "q", "q=", "r=2", "r=a+b", "q=a%20b", "%71=1", "q+r=1", "q=%zz", "r=a;q=1"))
	}
	target := path
	if len(q) > 0 || rng.IntN(4) == 0 {
		target += "?" + strings.Join(q, "&")
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	for range rng.IntN(4) {
		k := pick(rng, "X-A", "X-B", "X-A")
		h[k] = append(h[k], pick(rng, "1", "2", "", "1, 2"))
	}
	if rng.IntN(6) == 0 {
		h["Connection"] = []string{pick(rng, "x-a", "keep-alive, X-B", "close")}
	}
	return &http.Request{Method: pick(rng, "GET", "GET", "HEAD", "POST", "PURGE"), URL: u, RequestURI: target, Host: "f.test",
		Header: h, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: "192.0.2.1:1"}
}

// refRoute returns the route the docs say matches, and a template's
// values in the forwarded spelling.
func refRoute(routes []Route, view PathView, r *http.Request) (*Route, map[string]string) {
	sorted := make([]int, len(routes))
	for i := range sorted {
		sorted[i] = i
	}
	class := map[PathType]int{PathExact: 0, PathTemplate: 1, PathPrefix: 2, PathRegex: 3}
	literal := func(rt *Route) int {
		switch rt.PathType {
		case PathPrefix:
			return len(strings.TrimSuffix(rt.Prefix, "/"))
		case PathExact:
			return len(cmpOr(rt.Prefix, "/"))
		case PathTemplate:
			lit, _, _ := strings.Cut(rt.Prefix, "{")
			return len(strings.TrimSuffix(lit, "/"))
		}
		return 0
	}
	b2i := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	slices.SortStableFunc(sorted, func(i, j int) int {
		a, b := &routes[i], &routes[j]
		for _, c := range [...]int{
			a.Order - b.Order,
			class[a.PathType] - class[b.PathType],
			literal(b) - literal(a),
			b2i(len(b.Match.Methods) > 0) - b2i(len(a.Match.Methods) > 0),
			len(b.Match.Headers) - len(a.Match.Headers),
			len(b.Match.Query) - len(a.Match.Query),
		} {
			if c != 0 {
				return c
			}
		}
		return i - j
	})
	for _, i := range sorted {
		rt := &routes[i]
		vals, ok := refPath(rt, view)
		if ok && refRest(rt, r) {
			return rt, vals
		}
	}
	return nil, nil
}

func refPath(rt *Route, view PathView) (map[string]string, bool) {
	switch rt.PathType {
	case PathPrefix:
		return nil, HasPathPrefix(view.Match, rt.Prefix)
	case PathExact:
		return nil, asciiFold.Replace(view.Match) == asciiFold.Replace(cmpOr(rt.Prefix, "/"))
	case PathRegex:
		return nil, regexp.MustCompile("^(?:" + rt.Prefix + ")$").MatchString(view.Match)
	}
	parts := strings.Split(view.Match[1:], "/")
	fwd := strings.Split(view.Forward[1:], "/")
	vals := map[string]string{}
	tmpl := strings.Split(rt.Prefix[1:], "/")
	for i, tp := range tmpl {
		if name, ok := strings.CutPrefix(tp, "{**"); ok {
			vals[strings.TrimSuffix(name, "}")] = strings.Join(fwd[min(i, len(fwd)):], "/")
			return vals, true
		}
		if i >= len(parts) {
			return nil, false
		}
		if strings.HasPrefix(tp, "{") {
			if parts[i] == "" {
				return nil, false
			}
			vals[strings.Trim(tp, "{}")] = fwd[i]
		} else if asciiFold.Replace(parts[i]) != asciiFold.Replace(tp) {
			return nil, false
		}
	}
	return vals, len(parts) == len(tmpl)
}

func refRest(rt *Route, r *http.Request) bool {
	if ms := rt.Match.Methods; len(ms) > 0 && !slices.Contains(ms, r.Method) {
		return false
	}
	for _, hm := range rt.Match.Headers {
		name := textproto.CanonicalMIMEHeaderKey(hm.Name)
		vv := r.Header[name]
		for _, c := range r.Header["Connection"] {
			for _, tok := range strings.Split(c, ",") {
				if textproto.CanonicalMIMEHeaderKey(strings.TrimSpace(tok)) == name {
					vv = nil
				}
			}
		}
		joined := strings.Join(vv, ", ")
		var ok bool
		switch hm.Type {
		case HeaderExact:
			ok = len(vv) > 0 && joined == hm.Value
		case HeaderPrefix:
			ok = len(vv) > 0 && strings.HasPrefix(joined, hm.Value)
		case HeaderRegex:
			ok = len(vv) > 0 && regexp.MustCompile("^(?:"+hm.Value+")$").MatchString(joined)
		case HeaderPresent:
			ok = len(vv) > 0
		case HeaderAbsent:
			ok = len(vv) == 0
		}
		if !ok {
			return false
		}
	}
	for _, qm := range rt.Match.Query {
		found, all := false, true
		for _, pair := range strings.Split(r.URL.RawQuery, "&") {
			k, v, _ := strings.Cut(pair, "=")
			if k, err := url.QueryUnescape(k); err != nil || k != qm.Name {
				continue
			}
			found = true
			v, err := url.QueryUnescape(v)
			switch qm.Type {
			case QueryExact:
				all = all && err == nil && v == qm.Value
			case QueryRegex:
				all = all && err == nil && regexp.MustCompile("^(?:"+qm.Value+")$").MatchString(v)
			}
		}
		if !found || !all {
			return false
		}
	}
	return true
}
