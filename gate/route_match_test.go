package gate

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRouteMatchThroughTheGate matches routes as a request meets them: a
// real client on a loopback listener, the gate's decision on the path
// view it reads, and the route whose target answers. (TestHasPathPrefix
// checks the exported helper of the same rule, which the gate's own
// matcher does not call.)
func TestRouteMatchThroughTheGate(t *testing.T) {
	tests := []struct {
		prefixes []string
		target   string
		want     string // the route's prefix; "-" is 404
	}{
		// One route: under its prefix on segment boundaries, ASCII letters
		// in any case.
		{[]string{"/api"}, "/api", "/api"},
		{[]string{"/api"}, "/api/x", "/api"},
		{[]string{"/api"}, "/API/x", "/api"},
		{[]string{"/API/"}, "/api/x", "/API/"},
		{[]string{"/api"}, "/apix", "-"},
		{[]string{"/api"}, "/ap", "-"},
		{[]string{""}, "/anything", ""},
		{[]string{"/"}, "/anything", "/"},
		{[]string{"/café"}, "/CAFé/x", "/café"}, // sent as /CAF%C3%A9/x
		{[]string{"/café"}, "/cafÉ/x", "-"},     // ASCII letters only
		{[]string{"/k"}, "/\u212a", "-"},        // the Kelvin sign is not k
		// On the view, not the spelling sent: segment parameters dropped,
		// unreserved escapes decoded, trailing dots dropped.
		{[]string{"/api"}, "/api;v=1/x", "/api"},
		{[]string{"/api"}, "/%61pi/x?q=1", "/api"},
		{[]string{"/secret", "/"}, "/secret./x", "/secret"},
		// The most specific prefix wins, whatever the order.
		{[]string{"/", "/api", "/api/v1", "/apple"}, "/api/v1/x", "/api/v1"},
		{[]string{"/api/v1", "/api", "/"}, "/api/v2", "/api"},
		{[]string{"/api", "/apple", "/"}, "/apple/pie", "/apple"},
		{[]string{"/apple", "/"}, "/app", "/"},
		{[]string{"/", "/api/v1", "/api"}, "/API/V1", "/api/v1"},
	}
	var hosts []Host
	for i, tc := range tests {
		h := Host{Names: []string{"c" + strconv.Itoa(i) + ".test"}}
		for _, p := range tc.prefixes {
			h.Routes = append(h.Routes, Route{ID: "route:" + p, Prefix: p, Target: echoTarget})
		}
		hosts = append(hosts, h)
	}
	g, err := New(Config{Hosts: hosts})
	require.NoError(t, err)
	addr := serve(t, g)
	for i, tc := range tests {
		resp := do(t, addr, call{host: "c" + strconv.Itoa(i) + ".test", target: tc.target})
		if tc.want == "-" {
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%q on %q", tc.target, tc.prefixes)
			continue
		}
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%q on %q", tc.target, tc.prefixes)
		assert.Equal(t, "route:"+tc.want, resp.Header.Get("X-Route"), "%q on %q", tc.target, tc.prefixes)
	}
}

// padding are routes no test request reaches: a host with them has more
// than linearRoutes routes, so its table is the trie rather than the
// scan. Every route test runs on both.
func padding() []Route {
	var out []Route
	for i := range linearRoutes + 1 {
		out = append(out, Route{ID: "pad" + strconv.Itoa(i), Prefix: "/zz" + strconv.Itoa(i) + "/pad", Target: echoTarget})
	}
	return out
}

// routeCase is a request and the route that must take it ("-": 404).
type routeCase struct {
	name   string
	method string
	target string
	header http.Header
	want   string
}

// checkRoutes serves routes on one host, scanned and as a trie, and sends
// each case over a real connection.
func checkRoutes(t *testing.T, routes []Route, cases []routeCase) {
	t.Helper()
	for _, trie := range []bool{false, true} {
		if !trie && len(routes) > linearRoutes {
			continue // only a trie holds them
		}
		rs := slices.Clone(routes)
		if trie {
			rs = append(rs, padding()...)
		}
		g, err := New(Config{Hosts: []Host{{Names: []string{"m.test"}, Routes: rs}}})
		require.NoError(t, err)
		addr := serve(t, g)
		for _, tc := range cases {
			t.Run(fmt.Sprintf("trie=%v/%s", trie, tc.name), func(t *testing.T) {
				resp := do(t, addr, call{method: tc.method, host: "m.test", target: tc.target, header: tc.header})
				if tc.want == "-" {
					assert.Equal(t, http.StatusNotFound, resp.StatusCode, "%s %s", tc.method, tc.target)
					return
				}
				assert.Equal(t, http.StatusOK, resp.StatusCode, "%s %s", tc.method, tc.target)
				assert.Equal(t, tc.want, resp.Header.Get("X-Route"), "%s %s %v", tc.method, tc.target, tc.header)
			})
		}
	}
}

func route(id, path string, typ PathType, m RouteMatch) Route {
	return Route{ID: id, Prefix: path, PathType: typ, Match: m, Target: echoTarget}
}

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h[kv[i]] = append(h[kv[i]], kv[i+1])
	}
	return h
}

// TestRouteMatchTypes sends requests for every path type and every kind of
// match over a real connection.
func TestRouteMatchTypes(t *testing.T) {
	routes := []Route{
		route("exact", "/exact/A", PathExact, RouteMatch{}),
		route("exact-slash", "/exact/b/", PathExact, RouteMatch{}),
		route("tmpl", "/t/{id}/items/{**rest}", PathTemplate, RouteMatch{}),
		route("tmpl-one", "/one/{id}", PathTemplate, RouteMatch{}),
		route("regex", `/r/[0-9]+`, PathRegex, RouteMatch{}),
		route("regex-fold", `(?i)/R2/x`, PathRegex, RouteMatch{}),
		route("get", "/m", PathPrefix, RouteMatch{Methods: []string{"GET", "PURGE"}}),
		route("h-exact", "/h", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "x-env", Value: "prod"}}}),
		route("h-prefix", "/h", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-Env", Type: HeaderPrefix, Value: "stag"}}}),
		route("h-regex", "/h", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-Env", Type: HeaderRegex, Value: `dev-[0-9]+`}}}),
		route("h-present", "/hp", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-Debug", Type: HeaderPresent}}}),
		route("h-absent", "/ha", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-Debug", Type: HeaderAbsent}}}),
		route("q-exact", "/q", PathPrefix, RouteMatch{Query: []QueryMatch{{Name: "v", Value: "2 b"}}}),
		route("q-regex", "/q", PathPrefix, RouteMatch{Query: []QueryMatch{{Name: "id", Type: QueryRegex, Value: `[0-9]+`}}}),
		route("q-present", "/q", PathPrefix, RouteMatch{Query: []QueryMatch{{Name: "debug", Type: QueryPresent}}}),
		// Regex routes come after every prefix: the root goes last by
		// its order.
		{ID: "root", Prefix: "/", Order: 1, Target: echoTarget},
	}
	checkRoutes(t, routes, []routeCase{
		{name: "exact", target: "/exact/a", want: "exact"},
		{name: "exact case", target: "/EXACT/a", want: "exact"},
		{name: "exact not under", target: "/exact/a/x", want: "root"},
		{name: "exact trailing slash counts", target: "/exact/a/", want: "root"},
		{name: "exact with slash", target: "/exact/b/", want: "exact-slash"},
		{name: "exact with slash, without", target: "/exact/b", want: "root"},
		{name: "exact on the view", target: "/exact;v=1/%41", want: "exact"},
		{name: "template", target: "/t/7/items/a/b", want: "tmpl"},
		{name: "template empty rest", target: "/t/7/items", want: "tmpl"},
		{name: "template literal case", target: "/T/7/ITEMS/x", want: "tmpl"},
		{name: "template value needs a segment", target: "/one/", want: "root"},
		{name: "template one", target: "/one/x", want: "tmpl-one"},
		{name: "template one too long", target: "/one/x/y", want: "root"},
		{name: "regex", target: "/r/123", want: "regex"},
		{name: "regex anchored", target: "/r/123/x", want: "root"},
		{name: "regex case-sensitive", target: "/R/123", want: "root"},
		{name: "regex (?i)", target: "/r2/X", want: "regex-fold"},
		{name: "regex on the view", target: "/r/%31%32", want: "regex"},
		{name: "method", target: "/m", want: "get"},
		{name: "method other", method: "PURGE", target: "/m", want: "get"},
		{name: "method not HEAD", method: "HEAD", target: "/m", want: "root"},
		{name: "method not POST", method: "POST", target: "/m", want: "root"},
		{name: "header exact", target: "/h", header: hdr("X-Env", "prod"), want: "h-exact"},
		{name: "header exact is case-sensitive", target: "/h", header: hdr("X-Env", "PROD"), want: "root"},
		{name: "header exact whole", target: "/h", header: hdr("X-Env", "prod2"), want: "root"},
		{name: "header prefix", target: "/h", header: hdr("X-Env", "staging"), want: "h-prefix"},
		{name: "header regex", target: "/h", header: hdr("X-Env", "dev-42"), want: "h-regex"},
		{name: "header regex anchored", target: "/h", header: hdr("X-Env", "dev-42x"), want: "root"},
		{name: "header absent", target: "/h", want: "root"},
		{name: "header present", target: "/hp", header: hdr("X-Debug", ""), want: "h-present"},
		{name: "header present missing", target: "/hp", want: "root"},
		{name: "header absent matches", target: "/ha", want: "h-absent"},
		{name: "header absent fails", target: "/ha", header: hdr("X-Debug", "1"), want: "root"},
		{name: "query exact decoded", target: "/q?a=1&v=2+b", want: "q-exact"},
		{name: "query exact escaped", target: "/q?v=2%20b", want: "q-exact"},
		{name: "query exact name escaped", target: "/q?%76=2+b", want: "q-exact"},
		{name: "query exact differs", target: "/q?v=2", want: "root"},
		{name: "query regex", target: "/q?id=42", want: "q-regex"},
		{name: "query regex escaped", target: "/q?id=%34%32", want: "q-regex"},
		{name: "query regex anchored", target: "/q?id=42x", want: "root"},
		{name: "query present", target: "/q?debug", want: "q-present"},
		{name: "query present empty", target: "/q?debug=&x=1", want: "q-present"},
		{name: "query name case-sensitive", target: "/q?DEBUG", want: "root"},
		{name: "query malformed escape", target: "/q?v=2%2", want: "root"},
		{name: "query semicolon is a character", target: "/q?x=1;debug", want: "root"},
	})
}

// TestRouteMatchRepeatedFields: a header sent twice is matched on its
// values joined with ", "; a query parameter given twice must match on
// every occurrence.
func TestRouteMatchRepeatedFields(t *testing.T) {
	routes := []Route{
		route("admin", "/", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-Role", Value: "admin"}}}),
		route("pair", "/", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-Role", Value: "user, admin"}}}),
		route("re", "/re", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-Role", Type: HeaderRegex, Value: `.*, admin`}}}),
		route("v2", "/q", PathPrefix, RouteMatch{Query: []QueryMatch{{Name: "v", Value: "2"}}}),
		{ID: "fallback", Prefix: "/", Order: 1, Target: echoTarget},
	}
	checkRoutes(t, routes, []routeCase{
		{name: "one line", target: "/", header: hdr("X-Role", "admin"), want: "admin"},
		{name: "two lines do not match one value", target: "/x", header: hdr("X-Role", "user", "X-Role", "admin"), want: "pair"},
		{name: "a comma list is the same", target: "/x", header: hdr("X-Role", "user, admin"), want: "pair"},
		{name: "regex on the joined lines", target: "/re", header: hdr("X-Role", "user", "X-Role", "admin"), want: "re"},
		{name: "query once", target: "/q?v=2", want: "v2"},
		{name: "query twice alike", target: "/q?v=2&v=2", want: "v2"},
		{name: "query twice differently", target: "/q?v=2&v=3", want: "fallback"},
		{name: "query twice differently, reversed", target: "/q?v=3&v=2", want: "fallback"},
	})
}

// TestRoutePrecedence checks the precedence rules one by one, each on a
// host of its own, scanned and as a trie, over real connections.
func TestRoutePrecedence(t *testing.T) {
	get := RouteMatch{Methods: []string{"GET"}}
	canary := HeaderMatch{Name: "X-Canary", Value: "1"}
	beta := HeaderMatch{Name: "X-Beta", Type: HeaderPresent}
	debug := QueryMatch{Name: "debug", Type: QueryPresent}
	tests := []struct {
		name   string
		routes []Route
		cases  []routeCase
	}{
		{"exact before prefix", []Route{
			route("prefix", "/api", PathPrefix, RouteMatch{}),
			route("exact", "/api", PathExact, RouteMatch{}),
		}, []routeCase{
			{name: "the exact path", target: "/API", want: "exact"},
			{name: "under it", target: "/api/x", want: "prefix"},
		}},
		{"exact before template before prefix, whatever their length", []Route{
			route("prefix", "/a/b/c", PathPrefix, RouteMatch{}),
			route("template", "/{x}/b/{**rest}", PathTemplate, RouteMatch{}),
			route("exact", "/a/b/c/d", PathExact, RouteMatch{}),
		}, []routeCase{
			{name: "exact", target: "/a/b/c/d", want: "exact"},
			{name: "template over a longer prefix", target: "/a/b/c/e", want: "template"},
			{name: "prefix alone", target: "/z/y/x", want: "-"},
		}},
		{"the longer prefix", []Route{
			route("api", "/api", PathPrefix, RouteMatch{}),
			route("v1", "/api/v1", PathPrefix, RouteMatch{}),
			route("root", "", PathPrefix, RouteMatch{}),
		}, []routeCase{
			{name: "deepest", target: "/api/v1/x", want: "v1"},
			{name: "shorter", target: "/api/v2", want: "api"},
			{name: "root", target: "/other", want: "root"},
		}},
		{"templates by their literal part", []Route{
			route("short", "/api/{id}", PathTemplate, RouteMatch{}),
			route("long", "/api/v1/{id}", PathTemplate, RouteMatch{}),
		}, []routeCase{
			{name: "longer literal part", target: "/api/v1/7", want: "long"},
			{name: "only the short one", target: "/api/v2", want: "short"},
		}},
		{"a method match", []Route{
			route("any", "/api", PathPrefix, RouteMatch{}),
			route("get", "/api", PathPrefix, get),
		}, []routeCase{
			{name: "GET", target: "/api", want: "get"},
			{name: "POST", method: "POST", target: "/api", want: "any"},
		}},
		{"more header matches", []Route{
			route("none", "/api", PathPrefix, RouteMatch{}),
			route("two", "/api", PathPrefix, RouteMatch{Headers: []HeaderMatch{canary, beta}}),
			route("one", "/api", PathPrefix, RouteMatch{Headers: []HeaderMatch{canary}}),
		}, []routeCase{
			{name: "both", target: "/api", header: hdr("X-Canary", "1", "X-Beta", "y"), want: "two"},
			{name: "one", target: "/api", header: hdr("X-Canary", "1"), want: "one"},
			{name: "none", target: "/api", header: hdr("X-Beta", "y"), want: "none"},
		}},
		{"more query matches", []Route{
			route("none", "/api", PathPrefix, RouteMatch{}),
			route("one", "/api", PathPrefix, RouteMatch{Query: []QueryMatch{debug}}),
		}, []routeCase{
			{name: "with", target: "/api?debug", want: "one"},
			{name: "without", target: "/api?x", want: "none"},
		}},
		{"method before headers before query", []Route{
			route("query", "/api", PathPrefix, RouteMatch{Query: []QueryMatch{debug, {Name: "v", Value: "2"}}}),
			route("headers", "/api", PathPrefix, RouteMatch{Headers: []HeaderMatch{canary}}),
			route("method", "/api", PathPrefix, get),
		}, []routeCase{
			{name: "all match: the method", target: "/api?debug&v=2", header: hdr("X-Canary", "1"), want: "method"},
			{name: "headers over query", method: "POST", target: "/api?debug&v=2", header: hdr("X-Canary", "1"), want: "headers"},
			{name: "query alone", method: "POST", target: "/api?debug&v=2", want: "query"},
		}},
		{"the config's order breaks a tie", []Route{
			route("first", "/api", PathPrefix, RouteMatch{Headers: []HeaderMatch{beta}}),
			route("second", "/api", PathPrefix, RouteMatch{Headers: []HeaderMatch{canary}}),
		}, []routeCase{
			{name: "both match", target: "/api", header: hdr("X-Canary", "1", "X-Beta", "y"), want: "first"},
			{name: "the second alone", target: "/api", header: hdr("X-Canary", "1"), want: "second"},
		}},
		{"the config's order, reversed", []Route{
			route("second", "/api", PathPrefix, RouteMatch{Headers: []HeaderMatch{canary}}),
			route("first", "/api", PathPrefix, RouteMatch{Headers: []HeaderMatch{beta}}),
		}, []routeCase{
			{name: "both match", target: "/api", header: hdr("X-Canary", "1", "X-Beta", "y"), want: "second"},
		}},
		{"an explicit order overrides precedence", []Route{
			{ID: "root-first", Prefix: "/", Order: -1, Match: RouteMatch{Headers: []HeaderMatch{{Name: "X-Maintenance", Type: HeaderPresent}}}, Target: echoTarget},
			{ID: "exact-last", Prefix: "/api", PathType: PathExact, Order: 5, Target: echoTarget},
			route("api", "/api", PathPrefix, RouteMatch{}),
			{ID: "same-as-api", Prefix: "/API/", Order: 1, Target: echoTarget},
		}, []routeCase{
			{name: "lower order first", target: "/api/x", header: hdr("X-Maintenance", "1"), want: "root-first"},
			{name: "a higher order goes after", target: "/api", want: "api"},
			{name: "same matches, other order", target: "/api/y", want: "api"},
		}},
		{"regex routes last", []Route{
			route("regex", `/a/.*`, PathRegex, RouteMatch{}),
			route("prefix", "/a", PathPrefix, RouteMatch{}),
			{ID: "regex-first", Prefix: `/b/.*`, PathType: PathRegex, Order: -1, Target: echoTarget},
			route("b", "/b", PathPrefix, RouteMatch{}),
		}, []routeCase{
			{name: "a prefix before a regex", target: "/a/x", want: "prefix"},
			{name: "unless ordered", target: "/b/x", want: "regex-first"},
			{name: "the regex does not match", target: "/b", want: "b"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { checkRoutes(t, tt.routes, tt.cases) })
	}
}

// TestRoutePathValues: a template's values are the client's spelling of
// the segments the view matched: case, escapes and segment parameters as
// sent.
func TestRoutePathValues(t *testing.T) {
	values := TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {
		for _, n := range []string{"tenant", "id", "rest", "missing"} {
			w.Header().Set("X-V-"+n, "["+rq.PathValue(n)+"]")
		}
		w.Header().Set("X-Route", rq.Route.ID)
	})
	rs := []Route{
		{ID: "t", Prefix: "/{tenant}/items/{id}/{**rest}", PathType: PathTemplate, Target: values},
		{ID: "one", Prefix: "/one/{id}", PathType: PathTemplate, Target: values},
		{ID: "p", Prefix: "/", Target: values},
	}
	for _, trie := range []bool{false, true} {
		g, err := New(Config{Hosts: []Host{{Names: []string{"v.test"}, Routes: append(slices.Clone(rs), padding()[:cmpTrie(trie)]...)}}})
		require.NoError(t, err)
		addr := serve(t, g)
		for _, tc := range []struct {
			target, route, tenant, id, rest string
		}{
			{"/acme/items/7/a/b", "t", "acme", "7", "a/b"},
			{"/ACME/ITEMS/7", "t", "ACME", "7", ""},
			{"/acme/items/7/", "t", "acme", "7", ""},
			{"/ac%6De/items/7;v=2/x;y/z", "t", "acme", "7;v=2", "x;y/z"},
			{"/a%2Fb/items/%E2%82%AC/x%3F", "-", "", "", ""}, // %2F and %3F need allowances: 400
			{"/a;p/items;q/7", "t", "a;p", "7", ""},
			{"/one/x%41", "one", "", "xA", ""},
			{"/one/caf%c3%a9", "one", "", "caf%C3%A9", ""},
			{"/plain", "p", "", "", ""},
		} {
			resp := do(t, addr, call{host: "v.test", target: tc.target})
			if tc.route == "-" {
				assert.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.target)
				continue
			}
			require.Equal(t, http.StatusOK, resp.StatusCode, tc.target)
			assert.Equal(t, tc.route, resp.Header.Get("X-Route"), tc.target)
			assert.Equal(t, "["+tc.tenant+"]", resp.Header.Get("X-V-Tenant"), tc.target)
			assert.Equal(t, "["+tc.id+"]", resp.Header.Get("X-V-Id"), tc.target)
			assert.Equal(t, "["+tc.rest+"]", resp.Header.Get("X-V-Rest"), tc.target)
			assert.Equal(t, "[]", resp.Header.Get("X-V-Missing"), tc.target)
		}
	}
}

func cmpTrie(trie bool) int {
	if trie {
		return linearRoutes
	}
	return 0
}

// TestRouteTrace: the route step says which match decided, naming the
// route won over and the key of precedence, and on a 404 the nearest route
// and which of its matches failed.
func TestRouteTrace(t *testing.T) {
	routes := []Route{
		route("stable", "/api", PathPrefix, RouteMatch{}),
		route("canary", "/api", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-Canary", Value: "1"}}}),
		route("v1", "/api/v1", PathPrefix, RouteMatch{Methods: []string{"GET", "HEAD"}}),
		route("item", "/api/v1/items/{id}", PathTemplate, RouteMatch{Query: []QueryMatch{{Name: "debug", Type: QueryPresent}}}),
		route("health", "/healthz", PathExact, RouteMatch{Headers: []HeaderMatch{{Name: "X-Probe", Type: HeaderAbsent}}}),
		{ID: "first", Prefix: "/first", Order: -1, Target: echoTarget},
		route("later", "/first/x", PathPrefix, RouteMatch{}),
		route("doc-a", "/doc", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-A", Type: HeaderPresent}}}),
		route("doc-b", "/doc", PathPrefix, RouteMatch{Headers: []HeaderMatch{{Name: "X-B", Type: HeaderPresent}}}),
	}
	for _, trie := range []bool{false, true} {
		g, err := New(Config{Hosts: []Host{{Names: []string{"tr.test"}, Routes: append(slices.Clone(routes), padding()[:cmpTrie(trie)]...)}}})
		require.NoError(t, err)
		for _, tc := range []struct {
			method, target string
			header         http.Header
			route, reason  string
		}{
			{"GET", "/api/x", hdr("X-Canary", "1"), "canary", "won over stable by header X-Canary (1 over 0)"},
			{"GET", "/api/x", hdr("X-Canary", "2"), "stable", "no other route matches; canary comes first but header X-Canary does not match exact \"1\""},
			{"GET", "/api/v1/x", nil, "v1", "won over stable by a longer path (\"/api/v1\" over \"/api\")"},
			{"POST", "/api/v1/x", hdr("X-Canary", "1"), "canary", "won over stable by header X-Canary (1 over 0); v1 comes first but method POST is not GET, HEAD"},
			{"GET", "/api/v1/items/7?debug", nil, "item", "won over v1 by its template path (before prefix)"},
			{"GET", "/api/v1/items/7?x", nil, "v1", "won over stable by a longer path (\"/api/v1\" over \"/api\"); item comes first but query debug absent"},
			{"GET", "/first/x", nil, "first", "won over later by order -1 (before 0)"},
			{"GET", "/doc", hdr("X-A", "", "X-B", ""), "doc-a", "won over doc-b by the config's order"},
			{"GET", "/healthz", hdr("X-Probe", "1"), "", "no route: route health: header X-Probe present"},
			{"GET", "/doc", nil, "", "no route: route doc-a: header X-A absent"},
			{"GET", "/doc", hdr("X-A", "1", "Connection", "X-A"), "", "no route: route doc-a: header X-A absent as forwarded (the request lists it in Connection)"},
			{"GET", "/nothing", nil, "", "no route: no route's path matches"},
		} {
			raw := tc.method + " " + tc.target + " HTTP/1.1\r\nHost: tr.test\r\n"
			for k, vv := range tc.header {
				for _, v := range vv {
					raw += k + ": " + v + "\r\n"
				}
			}
			tr, steps := record()
			g.Simulate(newNopWriter(), readRequest(t, raw+"\r\n", "192.0.2.1:1"), tr)
			var step *Step
			for i := range *steps {
				if (*steps)[i].Kind == StepRoute {
					step = &(*steps)[i]
				}
			}
			require.NotNil(t, step, "%s %s", tc.method, tc.target)
			assert.Equal(t, tc.reason, step.Reason, "%s %s", tc.method, tc.target)
			if tc.route == "" {
				assert.Nil(t, step.Route)
				assert.Equal(t, http.StatusNotFound, step.Status)
				continue
			}
			if assert.NotNil(t, step.Route, "%s %s", tc.method, tc.target) {
				assert.Equal(t, tc.route, step.Route.ID)
			}
		}
	}
}
