package proxy_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// TestRewriteTemplateThroughTheProxy: a rewrite template fills the
// forwarded path from a template route's values, in the client's spelling
// (escapes and segment parameters as sent, case kept), over a real
// gateway and upstream; no Location is mapped back.
func TestRewriteTemplateThroughTheProxy(t *testing.T) {
	got := make(chan string, 1)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.RequestURI
		w.Header().Set("Location", "/api/login")
		w.WriteHeader(302)
	}))
	addr, _ := setup{prefix: "/v1/{tenant}/{**rest}", pathType: gate.PathTemplate, allow: gate.AllowEncodedSlash,
		route: proxy.RouteConfig{Rewrite: proxy.Rewrite{Template: "/api/{rest}/t/{tenant}"}}}.start(t, up)
	for _, tc := range []struct{ target, sent string }{
		{"/v1/acme/users/7?x=1", "/api/users/7/t/acme?x=1"},
		{"/V1/ACME/Users", "/api/Users/t/ACME"},
		{"/v1/acme", "/api/t/acme"},
		{"/v1/acme/", "/api/t/acme"},
		{"/v1/a%63me;v=2/x;y/%7Ez/a%2Fb", "/api/x;y/~z/a%2Fb/t/acme;v=2"},
	} {
		res, _ := do(t, addr, rawReq(t, tc.target))
		assert.Equal(t, 302, res.StatusCode, tc.target)
		assert.Equal(t, tc.sent, recv(t, got), tc.target)
		assert.Equal(t, "/api/login", res.Header.Get("Location"), "a template maps no Location back")
	}
	res, _ := do(t, addr, rawReq(t, "/v2/acme/x"))
	assert.Equal(t, http.StatusNotFound, res.StatusCode)
}

// TestGateRefusesATemplateValueTheRouteDoesNotCapture: a rewrite template
// that names a value the route's path does not have is refused by
// gate.New at the template's path, on a template route and on a prefix.
func TestGateRefusesATemplateValueTheRouteDoesNotCapture(t *testing.T) {
	var reg upstream.Registry
	reg.Plan([]upstream.ClusterConfig{{ID: "c", Destinations: []upstream.DestinationConfig{{ID: "d", Scheme: "http", Host: "127.0.0.1:9"}}}}).Commit()
	route, err := proxy.NewRoute(proxy.RouteConfig{
		Cluster: &proxy.Cluster{Upstream: reg.Cluster("c"), Transport: proxy.NewTransport(proxy.ClientConfig{})},
		Rewrite: proxy.Rewrite{Template: "/api/{id}/{rest}/{id}"},
	})
	require.NoError(t, err)
	_, err = gate.New(gate.Config{Hosts: []gate.Host{{Names: []string{"a.test"}, Routes: []gate.Route{
		{Prefix: "/a/{id}/{**rest}", PathType: gate.PathTemplate, Target: route},
		{Prefix: "/b/{id}", PathType: gate.PathTemplate, Target: route},
		{Prefix: "/c", Target: route},
	}}}})
	assert.Equal(t, []string{
		gate.CodeRouteTargetPathValueUnknown + " hosts[0].routes[1].target.rewrite.template",
		gate.CodeRouteTargetPathValueUnknown + " hosts[0].routes[2].target.rewrite.template",
		gate.CodeRouteTargetPathValueUnknown + " hosts[0].routes[2].target.rewrite.template",
	}, problemsOf(err))
}
