package main

// Route matching through the daemon: a config document with routes of
// every path type and match, real upstreams that record what reached
// them, and a client that writes raw requests, so that what the route
// decided on and what the upstream reads can be compared byte for byte.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routingDoc routes app.test by every kind of match to upstreams named
// after the route, and keep.test the same way on a host that keeps
// header names with underscores.
func routingDoc(stable, canary, items, admin string) config.Document {
	routes := []config.Route{
		{ID: "stable", Path: "/api", Upstream: "stable"},
		{ID: "canary", Path: "/api", Upstream: "canary", Match: config.RouteMatch{Headers: []config.HeaderMatch{{Name: "X-Canary", Value: "always"}}}},
		{ID: "role", Path: "/api", Upstream: "admin", Match: config.RouteMatch{Headers: []config.HeaderMatch{{Name: "X-Role", Value: "admin"}}}},
		{ID: "writes", Path: "/api", Upstream: "admin", Match: config.RouteMatch{Methods: []string{"POST", "PUT", "DELETE"}}},
		{ID: "debug", Path: "/api", Upstream: "admin", Match: config.RouteMatch{Query: []config.QueryMatch{{Name: "debug", Type: "present"}}}},
		{ID: "item", Path: "/api/v1/items/{id}/{**rest}", PathType: "template", Upstream: "items", Rewrite: config.Rewrite{Template: "/items/{id}/{rest}"}},
		{ID: "exact", Path: "/api/status", PathType: "exact", Upstream: "admin"},
		{ID: "numeric", Path: `/api/[0-9]+`, PathType: "regex", Upstream: "items", Order: -1},
		{ID: "fallback", Path: "/", Upstream: "stable", Order: 1},
	}
	ups := []config.Upstream{upstreamOf("stable", stable), upstreamOf("canary", canary), upstreamOf("items", items), upstreamOf("admin", admin)}
	return config.Document{
		Hosts: []config.Host{
			{Names: []string{"app.test"}, Routes: routes},
			{Names: []string{"keep.test"}, KeepUnderscoreHeaders: true, Routes: routes},
		},
		Upstreams: ups,
	}
}

func TestRoutingThroughTheDaemon(t *testing.T) {
	ups := map[string]*recorder{}
	for _, n := range []string{"stable", "canary", "items", "admin"} {
		ups[n] = startRecorder(t, map[string]string{"/": n})
	}
	d := startWithDoc(t, routingDoc(ups["stable"].addr, ups["canary"].addr, ups["items"].addr, ups["admin"].addr))

	for _, tc := range []struct {
		name     string
		raw      string
		upstream string // who answers; "" for none
		status   int
		sent     string // the request target the upstream read, when not ""
	}{
		{"no match: the prefix", get("app.test", "/api/x"), "stable", 200, "/api/x"},
		{"header exact", "GET /api/x HTTP/1.1\r\nHost: app.test\r\nX-Canary: always\r\nConnection: close\r\n\r\n", "canary", 200, ""},
		{"header name in any case", "GET /api/x HTTP/1.1\r\nHost: app.test\r\nx-canary: always\r\nConnection: close\r\n\r\n", "canary", 200, ""},
		{"header value as written", "GET /api/x HTTP/1.1\r\nHost: app.test\r\nX-Canary: Always\r\nConnection: close\r\n\r\n", "stable", 200, ""},
		{"header sent twice is joined", "GET /api/x HTTP/1.1\r\nHost: app.test\r\nX-Role: user\r\nX-Role: admin\r\nConnection: close\r\n\r\n", "stable", 200, ""},
		{"header once", "GET /api/x HTTP/1.1\r\nHost: app.test\r\nX-Role: admin\r\nConnection: close\r\n\r\n", "admin", 200, ""},
		{"a header the client lists in Connection is not forwarded, so not matched", "GET /api/x HTTP/1.1\r\nHost: app.test\r\nX-Canary: always\r\nConnection: close, X-Canary\r\n\r\n", "stable", 200, ""},
		{"underscore spelling is dropped, not matched", "GET /api/x HTTP/1.1\r\nHost: app.test\r\nX_Canary: always\r\nConnection: close\r\n\r\n", "stable", 200, ""},
		{"method", "POST /api/x HTTP/1.1\r\nHost: app.test\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", "admin", 200, ""},
		{"method GET is not a write", get("app.test", "/api/x"), "stable", 200, ""},
		{"a method match wins over a header match", "POST /api/x HTTP/1.1\r\nHost: app.test\r\nX-Canary: always\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", "admin", 200, ""},
		{"query present", get("app.test", "/api/x?debug"), "admin", 200, "/api/x?debug"},
		{"query escaped name", get("app.test", "/api/x?%64ebug=1"), "admin", 200, "/api/x?%64ebug=1"},
		{"exact", get("app.test", "/api/status"), "admin", 200, "/api/status"},
		{"exact in another case", get("app.test", "/API/Status"), "admin", 200, "/API/Status"},
		{"exact is not a prefix", get("app.test", "/api/status/x"), "stable", 200, ""},
		{"regex with an order", get("app.test", "/api/42"), "items", 200, "/api/42"},
		{"regex on the view: an escaped digit", get("app.test", "/api/%34%32"), "items", 200, "/api/42"},
		{"regex on the view: segment parameters dropped", get("app.test", "/api/42;v=1"), "items", 200, "/api/42;v=1"},
		{"template rewrite", get("app.test", "/api/v1/items/7/parts/a"), "items", 200, "/items/7/parts/a"},
		{"template rewrite keeps the client's spelling", get("app.test", "/API/V1/Items/Ab%7E;x=1/c%2Cd"), "items", 200, "/items/Ab~;x=1/c%2Cd"},
		{"template with an empty rest", get("app.test", "/api/v1/items/7"), "items", 200, "/items/7/"},
		{"prefix on the view: case", get("app.test", "/API/x"), "stable", 200, "/API/x"},
		{"fallback", get("app.test", "/other"), "stable", 200, "/other"},
		{"a dot segment is refused before any route", get("app.test", "/api/v1/items/../x"), "", 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := roundTrip(t, d.addr, tc.raw)
			require.Equal(t, tc.status, r.status, r.body)
			var got []string
			var last seen
			for n, up := range ups {
				for _, s := range up.take() {
					got, last = append(got, n), s
				}
			}
			if tc.upstream == "" {
				assert.Empty(t, got)
				return
			}
			require.Equal(t, []string{tc.upstream}, got)
			assert.Equal(t, tc.upstream, r.body)
			if tc.sent != "" {
				assert.Equal(t, tc.sent, last.requestURI)
			}
			assert.Empty(t, last.header["X_canary"], "no underscore spelling reaches an upstream on a host that drops them")
		})
	}
}

// TestRoutingUnderscoreSpelling: on a host that keeps header names with
// underscores, an underscore spelling of a header some route matches on
// is dropped like a header the gateway owns, so an upstream that reads
// X_Canary as X-Canary never sees a value the route did not decide on;
// other names with underscores still pass.
func TestRoutingUnderscoreSpelling(t *testing.T) {
	ups := map[string]*recorder{}
	for _, n := range []string{"stable", "canary", "items", "admin"} {
		ups[n] = startRecorder(t, map[string]string{"/": n})
	}
	d := startWithDoc(t, routingDoc(ups["stable"].addr, ups["canary"].addr, ups["items"].addr, ups["admin"].addr))
	r := roundTrip(t, d.addr, "GET /api/x HTTP/1.1\r\nHost: keep.test\r\nX_Canary: always\r\nx_role: admin\r\nX_Other: kept\r\nConnection: close\r\n\r\n")
	require.Equal(t, 200, r.status)
	assert.Equal(t, "stable", r.body, "an underscore spelling matches nothing")
	got := ups["stable"].take()
	require.Len(t, got, 1)
	h := got[0].header
	assert.Empty(t, h["X_canary"], "the underscore spelling of a matched header is dropped")
	assert.Empty(t, h["X_role"], "in any case")
	assert.Equal(t, []string{"kept"}, h["X_other"], "the host keeps other underscore names")

	// The hyphen spelling matches and is forwarded as sent.
	r = roundTrip(t, d.addr, "GET /api/x HTTP/1.1\r\nHost: keep.test\r\nX-Canary: always\r\nConnection: close\r\n\r\n")
	require.Equal(t, 200, r.status)
	assert.Equal(t, "canary", r.body)
	got = ups["canary"].take()
	require.Len(t, got, 1)
	assert.Equal(t, []string{"always"}, got[0].header["X-Canary"])
}

// TestRoutingRefusals: a document whose matches are wrong is refused at
// start with every problem at its path.
func TestRoutingRefusals(t *testing.T) {
	doc := routingDoc("127.0.0.1:9", "127.0.0.1:9", "127.0.0.1:9", "127.0.0.1:9")
	rs := doc.Hosts[0].Routes
	rs[1].Match.Headers[0].Name = "X_Canary"
	rs[5].Rewrite.Template = "/items/{item}"
	rs[7].Path = "(/api)?"
	rs = append(rs, config.Route{Path: "/API/", Upstream: "stable"})
	doc.Hosts[0].Routes = rs
	doc.Hosts = doc.Hosts[:1]
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	var out, logs syncBuffer
	err = run(context.Background(), []string{"-config", path, "-listen", "127.0.0.1:0"}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	for _, want := range []string{
		"hosts[0].routes[1].match.headers[0].name", "gate.route.match.header.name.invalid",
		"hosts[0].routes[5].rewrite.template", "gate.route.target.pathValue.unknown",
		"hosts[0].routes[7].path", "gate.route.regex.empty",
		"hosts[0].routes[9].path", "gate.route.prefix.duplicate", "routes[0] and routes[9]",
	} {
		assert.True(t, strings.Contains(err.Error(), want), "%q not in %v", want, err)
	}
}
