package gate

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// answerHeader is an AnswerHeaders that names the route.
type answerHeader string

func (a answerHeader) SetAnswerHeaders(h http.Header, _ *http.Request) {
	h["X-Answered-By"] = []string{string(a)}
}

// TestRouteRedirectAndFixedAnswers: over a loopback socket, each field of
// a route's redirect replaces its part of the Location and keeps the
// rest of the request's, a fixed route answers itself, both carry the
// route's answer headers and come after the route's policies.
func TestRouteRedirectAndFixedAnswers(t *testing.T) {
	maint := NewFixed("maint", Answer{Status: 503, Body: []byte("maintenance\n")})
	g, err := New(Config{Hosts: []Host{{Names: []string{"app.test"}, Routes: []Route{
		{Prefix: "/scheme", Redirect: &RouteRedirect{Scheme: "https", Host: "new.test"}},
		{Prefix: "/port", Redirect: &RouteRedirect{Host: "new.test", Port: 8443}},
		{Prefix: "/keep", Redirect: &RouteRedirect{Host: "New.Test"}},
		{Prefix: "/https443", Redirect: &RouteRedirect{Scheme: "https", Host: "new.test", Port: 443, Path: "/fixed"}},
		{Prefix: "/path", Redirect: &RouteRedirect{Host: "new.test", Path: "/landing", Status: 301}},
		{Prefix: "/old", Redirect: &RouteRedirect{Prefix: "/new/"}, AnswerHeaders: answerHeader("old")},
		{Prefix: "/a/b", Redirect: &RouteRedirect{Prefix: "/", Status: 308}},
		{Prefix: "/guarded", Redirect: &RouteRedirect{Path: "/elsewhere"}, Policies: []PolicyUse{{Policy: maint}}},
		{Prefix: "/gone", Fixed: &Answer{Status: 410, ContentType: "text/html", Body: []byte("<p>gone</p>")}, AnswerHeaders: answerHeader("gone")},
		{Prefix: "/ok", Fixed: &Answer{}},
	}}}})
	require.NoError(t, err)
	addr := serve(t, g)
	for _, tc := range []struct {
		target, loc string
		status      int
	}{
		{"/scheme/x?q=1", "https://new.test/scheme/x?q=1", 302},
		{"/port/x", "http://new.test:8443/port/x", 302},
		{"/keep/x", "http://new.test:8080/keep/x", 302},
		{"/https443/x", "https://new.test/fixed", 302},
		{"/https443/x?q=1", "https://new.test/fixed?q=1", 302},
		{"/path/deep/x?q=1&r", "http://new.test:8080/landing?q=1&r", 301},
		{"/old/x/y?z", "http://app.test:8080/new/x/y?z", 302},
		{"/OLD;v=1/%7ex", "http://app.test:8080/new/~x", 302},
		{"/old", "http://app.test:8080/new", 302},
		{"/a/b/c", "http://app.test:8080/c", 308},
		{"/a/B", "http://app.test:8080/", 308},
	} {
		resp := do(t, addr, call{host: "app.test:8080", target: tc.target})
		assert.Equal(t, tc.status, resp.StatusCode, tc.target)
		assert.Equal(t, tc.loc, resp.Header.Get("Location"), tc.target)
	}
	resp := do(t, addr, call{host: "app.test:8080", target: "/old/x"})
	assert.Equal(t, "old", resp.Header.Get("X-Answered-By"), "a redirect carries the route's answer headers")

	resp = do(t, addr, call{host: "app.test", target: "/guarded/x"})
	assert.Equal(t, 503, resp.StatusCode, "the route's policies come first")
	assert.Empty(t, resp.Header.Get("Location"))

	resp = do(t, addr, call{host: "app.test", target: "/gone/x"})
	assert.Equal(t, 410, resp.StatusCode)
	assert.Equal(t, "text/html", resp.Header.Get("Content-Type"))
	assert.Equal(t, "gone", resp.Header.Get("X-Answered-By"), "a fixed answer carries the route's answer headers")
	assert.Equal(t, "<p>gone</p>", readBody(t, resp))
	resp = do(t, addr, call{method: "HEAD", host: "app.test", target: "/gone"})
	assert.Equal(t, 410, resp.StatusCode)
	assert.Equal(t, "", readBody(t, resp))
	resp = do(t, addr, call{host: "app.test", target: "/ok"})
	assert.Equal(t, 200, resp.StatusCode, "a fixed answer's status defaults to 200")
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestRouteRedirectLoopsAreRefused: a redirect that leads back to its own
// route is refused at New, with the route's path; one to another host,
// listener or a path the route does not match is not.
func TestRouteRedirectLoopsAreRefused(t *testing.T) {
	build := func(rd RouteRedirect, pathType PathType, prefix string) []string {
		_, err := New(Config{Hosts: []Host{
			{Names: []string{"app.test", "www.app.test"}, Routes: []Route{{Prefix: "/other", Target: echoTarget}, {Prefix: prefix, PathType: pathType, Redirect: &rd}}},
			{Names: []string{"other.test"}, Routes: []Route{{Prefix: "/", Target: echoTarget}}},
		}})
		return problem.CodePaths(err)
	}
	loop := []string{CodeRouteRedirectLoop + " hosts[0].routes[1].redirect"}
	for _, rd := range []RouteRedirect{
		{},
		{Status: 301},
		{Scheme: "https"},
		{Scheme: "http", Port: 80},
		{Scheme: "https", Port: 443},
		{Host: "WWW.app.test"},
		{Path: "/a/x"},
		{Path: "/A"},
		{Prefix: "/a/b"},
		{Prefix: "/a/"},
	} {
		assert.Equal(t, loop, build(rd, PathPrefix, "/a"), "%+v", rd)
	}
	assert.Equal(t, loop, build(RouteRedirect{Path: "/a"}, PathExact, "/a"))
	assert.Equal(t, loop, build(RouteRedirect{}, PathExact, "/a"))
	for _, rd := range []RouteRedirect{
		{Host: "other.test"},
		{Host: "unknown.test"},
		{Port: 8443},
		{Path: "/b"},
		{Path: "/ab"},
		{Prefix: "/"},
		{Prefix: "/b"},
	} {
		assert.Empty(t, build(rd, PathPrefix, "/a"), "%+v", rd)
	}
	assert.Empty(t, build(RouteRedirect{Path: "/a/x"}, PathExact, "/a"))
}

// TestRouteAnswerProblems: each bad field of a route's redirect or fixed
// answer has its code and path.
func TestRouteAnswerProblems(t *testing.T) {
	build := func(rt Route) []string {
		rt.Prefix = cmpOr(rt.Prefix, "/r")
		_, err := New(Config{Hosts: []Host{{Names: []string{"app.test"}, Routes: []Route{rt}}}})
		return problem.CodePaths(err)
	}
	at := "hosts[0].routes[0]"
	for _, tc := range []struct {
		rt   Route
		want string
	}{
		{Route{Redirect: &RouteRedirect{Host: "x.test", Status: 200}}, CodeRouteRedirectStatusInvalid + " " + at + ".redirect.status"},
		{Route{Redirect: &RouteRedirect{Scheme: "ftp", Host: "x.test"}}, CodeRouteRedirectSchemeInvalid + " " + at + ".redirect.scheme"},
		{Route{Redirect: &RouteRedirect{Host: "x.test:80"}}, CodeRouteRedirectHostInvalid + " " + at + ".redirect.host"},
		{Route{Redirect: &RouteRedirect{Host: "a/b"}}, CodeRouteRedirectHostInvalid + " " + at + ".redirect.host"},
		{Route{Redirect: &RouteRedirect{Host: "x.test", Port: 70000}}, CodeRouteRedirectPortInvalid + " " + at + ".redirect.port"},
		{Route{Redirect: &RouteRedirect{Host: "x.test", Path: "/a/../b"}}, CodeRouteRedirectPathInvalid + " " + at + ".redirect.path"},
		{Route{Redirect: &RouteRedirect{Host: "x.test", Path: "a"}}, CodeRouteRedirectPathInvalid + " " + at + ".redirect.path"},
		{Route{Redirect: &RouteRedirect{Host: "x.test", Path: "/a", Prefix: "/b"}}, CodeRouteRedirectPathConflict + " " + at + ".redirect.prefix"},
		{Route{Redirect: &RouteRedirect{Host: "x.test", Prefix: "/b"}, Prefix: "/r", PathType: PathExact}, CodeRouteRedirectPrefixInvalid + " " + at + ".redirect.prefix"},
		{Route{Redirect: &RouteRedirect{Host: "x.test", Prefix: "b"}}, CodeRouteRedirectPrefixInvalid + " " + at + ".redirect.prefix"},
		{Route{Redirect: &RouteRedirect{Host: "x.test"}, Target: echoTarget}, CodeRouteAnswerConflict + " " + at},
		{Route{Redirect: &RouteRedirect{Host: "x.test"}, Fixed: &Answer{}}, CodeRouteAnswerConflict + " " + at},
		{Route{}, CodeRouteTargetMissing + " " + at + ".target"},
	} {
		assert.Equal(t, []string{tc.want}, build(tc.rt), "%+v", tc.rt)
	}
	assert.NotEmpty(t, build(Route{Fixed: &Answer{Status: 99}}))
}

// TestRouteRedirectAllocations: a redirect whose Location is all given
// costs nothing of its own; one that keeps a part of the request's
// costs the Location's string and its header value.
func TestRouteRedirectAllocations(t *testing.T) {
	g, err := New(Config{Hosts: []Host{{Names: []string{"app.test"}, Routes: []Route{
		{Prefix: "/fixed", Redirect: &RouteRedirect{Scheme: "https", Host: "new.test", Path: "/landing"}},
		{Prefix: "/gone", Fixed: &Answer{Status: 410}},
		{Prefix: "/old", Redirect: &RouteRedirect{Prefix: "/new"}},
	}}}})
	require.NoError(t, err)
	w := newNopWriter()
	allocsNone(t, g, w, readRequest(t, "GET /fixed/x HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.10:5000"), 302)
	allocsNone(t, g, w, readRequest(t, "GET /gone HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.10:5000"), 410)
	r := readRequest(t, "GET /old/x?y HTTP/1.1\r\nHost: app.test\r\n\r\n", "192.0.2.10:5000")
	g.ServeHTTP(w, r)
	assert.Equal(t, "http://app.test/new/x?y", w.h.Get("Location"))
	if n := testing.AllocsPerRun(100, func() { w.reset(); g.ServeHTTP(w, r) }); n > 2 {
		t.Errorf("a built Location allocates %.0f times, want at most 2", n)
	}
}
