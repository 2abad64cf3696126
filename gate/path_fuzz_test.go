package gate

import (
	"bufio"
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
)

// FuzzPathConfusion is the differential test of the path view. A host has
// a protected route /secret and an open route /. For every path the gate
// forwards to the open route, no upstream that resolves paths the way
// net/http's ServeMux, Tomcat (segment parameters stripped before
// decoding), nginx (decoded, slashes merged) or a server that decodes twice
// and takes "\" for "/", or Windows (which also drops trailing dots and
// spaces and the "::$DATA" stream from names) does may resolve it under
// /secret, in any case.
// The resolvers are written from each server's documented behaviour, not
// from the gate's code.
func FuzzPathConfusion(f *testing.F) {
	// Seeds are token indexes: /secret/..;/, /secret/%2e%2e/, /%73ecret,
	// /secret%2F, //secret, /Secret;x, /secret\.., /a/%252e%252e/secret,
	// /s%20ecret, /x;/../secret.
	for _, seed := range [][]byte{
		{0, 1, 0, 11, 15, 0}, {0, 1, 0, 13, 13, 0}, {0, 3}, {0, 1, 7}, {28, 1}, {0, 2, 16},
		{0, 1, 10, 11}, {0, 27, 0, 20, 20, 0, 1}, {0, 5, 26, 6}, {0, 33, 15, 0, 11, 0, 1},
	} {
		f.Add(seed)
	}
	var got struct {
		route string
		rq    Request
	}
	record := func(name string) Target {
		return TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {
			got.route, got.rq = name, *rq
		})
	}
	g, err := New(Config{Hosts: []Host{{
		Names: []string{"app.test"},
		Routes: []Route{
			{Prefix: "/secret", Target: record("secret")},
			{Prefix: "/", Target: record("open")},
		},
	}}})
	if err != nil {
		f.Fatal(err)
	}
	w := newNopWriter()
	f.Fuzz(func(t *testing.T, data []byte) {
		var b strings.Builder
		for _, c := range data {
			b.WriteString(pathTokens[int(c)%len(pathTokens)])
		}
		raw := b.String()
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + raw + " HTTP/1.1\r\nHost: app.test\r\n\r\n")))
		if err != nil {
			return // net/http refuses it before any handler
		}
		r.RemoteAddr = "192.0.2.1:1000"
		got.route = ""
		w.reset()
		g.ServeHTTP(w, r)
		switch got.route {
		case "":
			if w.status != http.StatusBadRequest && w.status != http.StatusNotFound {
				t.Fatalf("%q: not forwarded, status %d", raw, w.status)
			}
			return
		case "secret":
			return
		}
		fwd := got.rq.ForwardPath
		if fwd != RequestPath(r) && !sameBytes(fwd, RequestPath(r)) {
			t.Fatalf("%q: forwarded %q is not a normalised spelling of the request's path", raw, fwd)
		}
		for _, res := range resolvers {
			if p, ok := res.resolve(fwd); ok && underSecret(p) {
				t.Fatalf("%q reached the open route as %q, which %s resolves to %q", raw, fwd, res.name, p)
			}
		}
	})
}

var pathTokens = [...]string{
	"/", "secret", "Secret", "%73ecret", "%53ECRET", "s", "ecret", "%2F", "%2f", "%5C", "\\",
	"..", ".", "%2e", "%2E", ";", ";x", "%3B", "%25", "%252F", "%252e", "%00", "#", "?",
	"%3F", "%23", "%20", "a", "//", "%c0%ae", "%u002e", "~", "%7E", "x", "%", "%2",
	"::$DATA", "::$data", ".", " ", "%e0%80%ae",
}

// sameBytes reports whether a and b decode to the same bytes once.
func sameBytes(a, b string) bool {
	da, err1 := url.PathUnescape(a)
	db, err2 := url.PathUnescape(b)
	return err1 == nil && err2 == nil && da == db
}

func underSecret(p string) bool {
	p = strings.ToLower(p)
	return p == "/secret" || strings.HasPrefix(p, "/secret/")
}

var resolvers = []struct {
	name    string
	resolve func(string) (string, bool)
}{
	{"ServeMux", func(p string) (string, bool) {
		d, err := url.PathUnescape(p)
		if err != nil {
			return "", false
		}
		return cleanLikeServeMux(d), true
	}},
	{"Tomcat", func(p string) (string, bool) {
		segs := strings.Split(p, "/")
		for i, s := range segs {
			segs[i], _, _ = strings.Cut(s, ";")
		}
		d, err := url.PathUnescape(strings.Join(segs, "/"))
		if err != nil {
			return "", false
		}
		return mergeAndResolve(strings.ReplaceAll(d, "\\", "/")), true
	}},
	{"nginx", func(p string) (string, bool) {
		d, err := url.PathUnescape(p)
		if err != nil {
			return "", false
		}
		return mergeAndResolve(d), true
	}},
	{"Windows", func(p string) (string, bool) {
		d, err := url.PathUnescape(p)
		if err != nil {
			return "", false
		}
		segs := strings.Split(strings.ReplaceAll(d, "\\", "/"), "/")
		for i, s := range segs {
			for {
				t := strings.TrimRight(s, ". ")
				if u, ok := strings.CutSuffix(strings.ToLower(t), "::$data"); ok {
					t = t[:len(u)]
				}
				if t == s {
					break
				}
				s = t
			}
			segs[i] = s
		}
		return mergeAndResolve(strings.Join(segs, "/")), true
	}},
	{"double-decoding", func(p string) (string, bool) {
		d, err := url.PathUnescape(p)
		if err != nil {
			return "", false
		}
		if dd, err := url.PathUnescape(d); err == nil {
			d = dd
		}
		return mergeAndResolve(strings.ReplaceAll(d, "\\", "/")), true
	}},
}

// cleanLikeServeMux is what ServeMux redirects to: path.Clean with the
// trailing slash kept.
func cleanLikeServeMux(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// mergeAndResolve merges runs of "/" and resolves "." and ".." segments.
func mergeAndResolve(p string) string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

// FuzzRouteMatch checks route matching against a reference written from
// the Route docs: the longest prefix whose segments equal the first
// segments of the path view, ASCII letters in any case; "/" matches
// everything. It goes through the gate's decision (ServeHTTP, with its
// tracer): the path view the gate reads from the request target, the
// route it matches and the target it hands over to.
func FuzzRouteMatch(f *testing.F) {
	f.Add("/api /API/v1 /a", "/api/V1/x")
	f.Add("/ /app /apple", "/apple")
	f.Add("/api", "/apix")
	f.Add("/café /b", "/CAFé/x")
	f.Add("/api /", "/api;v=1/x")   // the view drops segment parameters
	f.Add("/api /", "/%61pi/x?q=1") // and decodes unreserved escapes
	f.Add("/secret /", "/secret./x")
	f.Add("/a /", "/a%2Fb") // refused on the route: 400 after the match
	f.Fuzz(func(t *testing.T, prefixes, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || !strings.HasPrefix(target, "/") {
			return // net/http answers 400 before the gate
		}
		var routes []Route
		ran := ""
		seen := map[string]bool{}
		for _, p := range strings.Fields(prefixes) {
			if CheckPrefix(p) != nil || seen[strings.ToLower(strings.TrimSuffix(p, "/"))] {
				continue
			}
			seen[strings.ToLower(strings.TrimSuffix(p, "/"))] = true
			routes = append(routes, Route{ID: p, Prefix: p, Target: TargetFunc(func(w http.ResponseWriter, _ *http.Request, rq *Request) {
				ran = rq.Route.ID
				w.WriteHeader(http.StatusNoContent)
			})})
		}
		var steps []Step
		g, err := New(Config{Tracer: &Tracer{OnStep: func(s Step) { steps = append(steps, s) }}, Hosts: []Host{{Names: []string{"a.test"}, Routes: routes}}})
		if err != nil {
			t.Fatalf("%q: %v", prefixes, err)
		}
		r := &http.Request{Method: http.MethodGet, URL: u, RequestURI: target, Host: "a.test", Header: http.Header{},
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, RemoteAddr: "192.0.2.1:1"}
		w := newNopWriter()
		g.ServeHTTP(w, r)
		got, matched := "", false
		for _, s := range steps {
			if s.Kind == StepRoute {
				got, matched = s.Name, s.Route != nil
			}
		}
		view, err := ReadPath(RequestPath(r))
		if err != nil {
			if matched || ran != "" || w.status != http.StatusBadRequest {
				t.Fatalf("%q on %q: the view refuses it (%v), yet route %q, target %q, status %d", target, prefixes, err, got, ran, w.status)
			}
			return
		}
		if strings.ContainsFunc(u.RawQuery, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
			// No HTTP/1.1 request line could carry it (unsendable.go).
			if matched || ran != "" || w.status != http.StatusBadRequest {
				t.Fatalf("%q on %q: the query is unsendable, yet route %q, target %q, status %d", target, prefixes, got, ran, w.status)
			}
			return
		}
		want, wantLen := "", -1
		for _, rt := range routes {
			pre := strings.Split(strings.TrimSuffix(rt.Prefix, "/"), "/")
			segs := strings.Split(view.Match, "/")
			ok := len(segs) >= len(pre)
			for i := 0; ok && i < len(pre); i++ {
				ok = asciiFold.Replace(segs[i]) == asciiFold.Replace(pre[i])
			}
			if ok && len(pre) > wantLen {
				want, wantLen = rt.ID, len(pre)
			}
		}
		switch {
		case !matched && want != "":
			t.Fatalf("%q (view %q) on %q: no route, want %q", target, view.Match, prefixes, want)
		case matched && got != want:
			t.Fatalf("%q (view %q) on %q: route %q, want %q", target, view.Match, prefixes, got, want)
		case want == "" && w.status != http.StatusNotFound:
			t.Fatalf("%q (view %q) on %q: status %d, want 404", target, view.Match, prefixes, w.status)
		case want != "" && view.Needs == 0 && ran != want:
			t.Fatalf("%q (view %q) on %q: handed over to %q, want %q", target, view.Match, prefixes, ran, want)
		case want != "" && view.Needs != 0 && (ran != "" || w.status != http.StatusBadRequest):
			t.Fatalf("%q (view %q) on %q: needs %v the route does not allow, yet target %q, status %d", target, view.Match, prefixes, view.Needs, ran, w.status)
		}
	})
}

// FuzzPlainPrefix checks the one-pass reading of common request targets
// against ReadPath: what it takes as its own view, ReadPath reads so too.
func FuzzPlainPrefix(f *testing.F) {
	for _, s := range []string{"/a/b?x", "/a./b", "/a?b/..", "/.x", "/a//b", "/x.?y", "/a%2e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		if !strings.HasPrefix(target, "/") {
			return
		}
		n, ok := plainPrefix(target)
		if !ok {
			return
		}
		p, _, _ := strings.Cut(target, "?")
		if target[:n] != p {
			t.Fatalf("%q: path %q, want %q", target, target[:n], p)
		}
		if v, err := ReadPath(p); err != nil || v != (PathView{Match: p, Forward: p}) {
			t.Fatalf("%q: taken as its own view, ReadPath says %+v, %v", target, v, err)
		}
	})
}
