package proxy_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

var problemsOf = problem.CodePaths

// TestNewRouteNamesWhatIsMissing: the error of a route without its
// cluster, runtime state or transport says which, and the zero Route
// reports its missing cluster through CheckTarget.
func TestNewRouteNamesWhatIsMissing(t *testing.T) {
	var reg upstream.Registry
	reg.Plan([]upstream.ClusterConfig{{ID: "c"}}).Commit()
	tr := proxy.NewTransport(proxy.ClientConfig{})
	for _, tc := range []struct {
		cluster *proxy.Cluster
		want    []string
	}{
		{nil, []string{proxy.CodeRouteClusterMissing + " cluster"}},
		{&proxy.Cluster{Transport: tr}, []string{proxy.CodeRouteClusterMissing + " cluster.upstream"}},
		{&proxy.Cluster{Upstream: reg.Cluster("c")}, []string{proxy.CodeRouteClusterMissing + " cluster.transport"}},
		{&proxy.Cluster{Upstream: reg.Cluster("c"), Transport: tr}, nil},
	} {
		rt, err := proxy.NewRoute(proxy.RouteConfig{Cluster: tc.cluster})
		assert.Equal(t, tc.want, problemsOf(err))
		if err == nil {
			assert.NoError(t, rt.CheckTarget())
			assert.Same(t, tc.cluster, rt.Cluster())
		}
	}
	assert.Equal(t, []string{proxy.CodeRouteClusterMissing + " cluster"}, problemsOf(new(proxy.Route).CheckTarget()))
}

func TestRouteEveryProblemAtOnce(t *testing.T) {
	_, err := proxy.NewRoute(proxy.RouteConfig{
		HostHeader: 7,
		HostName:   "x",
		Rewrite:    proxy.Rewrite{StripPrefix: "/", AddPrefix: "/a/"},
		RequestHeaders: []proxy.HeaderRule{
			{Name: "Host", Value: "x"}, {Name: "X-A", Value: "1"}, {Name: "x-a", Op: proxy.HeaderRemove},
		},
		ResponseHeaders: []proxy.HeaderRule{{Name: "X-B", Op: 5}},
		Retry:           proxy.Retry{Attempts: -1, BodyLimit: 2 << 20, Budget: -0.5},
	})
	assert.Equal(t, []string{
		proxy.CodeRouteClusterMissing + " cluster",
		proxy.CodeRouteHostHeaderUnknown + " hostHeader",
		proxy.CodeRewriteStripPrefixRoot + " rewrite.stripPrefix",
		proxy.CodeRewriteAddPrefixInvalid + " rewrite.addPrefix",
		proxy.CodeHeaderNameReserved + " requestHeaders[0].name",
		proxy.CodeHeaderNameDuplicate + " requestHeaders[2].name",
		proxy.CodeHeaderOpInvalid + " responseHeaders[0].op",
		proxy.CodeRetryAttemptsInvalid + " retry.attempts",
		proxy.CodeRetryBodyLimitInvalid + " retry.bodyLimit",
		proxy.CodeRetryBudgetInvalid + " retry.budget",
	}, problemsOf(err))
	_, err = proxy.NewSite(proxy.SiteConfig{RequestID: 3})
	assert.Equal(t, []string{proxy.CodeSiteRequestIDUnknown + " requestID"}, problemsOf(err))
}

func TestClientConfigValidate(t *testing.T) {
	pin := string(make([]byte, 32))
	caPEM := string(newCA(t, "roots").PEM())
	for _, tc := range []struct {
		cfg  proxy.ClientConfig
		want []string
	}{
		{proxy.ClientConfig{}, nil},
		{proxy.ClientConfig{Version: proxy.HTTP2, VersionPolicy: proxy.VersionExact, ConnectTimeout: proxy.MinConnectTimeout,
			Trust: proxy.TrustPinned, Pins: pin + pin, ServerName: "api.internal"}, nil},
		{proxy.ClientConfig{ConnectTimeout: proxy.MaxConnectTimeout, ServerName: "2001:db8::1"}, nil},
		{proxy.ClientConfig{Version: 2, VersionPolicy: 2, ConnectTimeout: 99 * time.Millisecond, ResponseHeaderTimeout: -1, Trust: 4, ServerName: "a b"}, []string{
			proxy.CodeClientVersionUnknown + " version",
			proxy.CodeClientVersionPolicyUnknown + " versionPolicy",
			proxy.CodeClientConnectTimeoutInvalid + " connectTimeout",
			proxy.CodeClientResponseHeaderTimeoutInvalid + " responseHeaderTimeout",
			proxy.CodeClientTrustUnknown + " trust",
			proxy.CodeClientServerNameInvalid + " serverName",
		}},
		{proxy.ClientConfig{ConnectTimeout: time.Hour, Trust: proxy.TrustPinned}, []string{
			proxy.CodeClientConnectTimeoutInvalid + " connectTimeout", proxy.CodeClientPinsMissing + " pins"}},
		{proxy.ClientConfig{Pins: pin[:31]}, []string{proxy.CodeClientPinsUnexpected + " pins", proxy.CodeClientPinsInvalid + " pins"}},
		{proxy.ClientConfig{ServerName: "api.internal:443"}, []string{proxy.CodeClientServerNameInvalid + " serverName"}},
		{proxy.ClientConfig{Trust: proxy.TrustCAFile, CAs: caPEM, ClientCertificate: "edge", Certificates: new(certStore), ProxyProtocol: proxy.ProxyProtocolV2}, nil},
		{proxy.ClientConfig{Trust: proxy.TrustCAFile}, []string{proxy.CodeClientCAsMissing + " cas"}},
		{proxy.ClientConfig{Trust: proxy.TrustCAFile, CAs: "no PEM"}, []string{proxy.CodeClientCAsEmpty + " cas"}},
		{proxy.ClientConfig{Trust: proxy.TrustAny, CAs: caPEM}, []string{proxy.CodeClientCAsUnexpected + " cas"}},
		{proxy.ClientConfig{ClientCertificate: "edge", ProxyProtocol: 3}, []string{
			proxy.CodeClientCertificatesMissing + " certificates", proxy.CodeClientProxyProtocolUnknown + " proxyProtocol"}},
	} {
		assert.Equal(t, tc.want, problemsOf(tc.cfg.Validate()), "%+v", tc.cfg)
	}
	assert.Equal(t, proxy.HTTP11, proxy.ClientConfig{Version: proxy.HTTP2}.PlainTextVersion(), "h2c needs exact")
	assert.Equal(t, proxy.HTTP2, proxy.ClientConfig{Version: proxy.HTTP2, VersionPolicy: proxy.VersionExact}.PlainTextVersion())
}

// TestNames: every name round-trips through its Parse function, and the
// zero value of each type has the first name (the default).
func TestNames(t *testing.T) {
	check := func(names []string, parse func(string) (string, bool)) {
		t.Helper()
		for _, n := range names {
			got, ok := parse(n)
			assert.True(t, ok, n)
			assert.Equal(t, n, got)
		}
		_, ok := parse("Bogus")
		assert.False(t, ok)
	}
	check(proxy.HostHeaderNames(), func(s string) (string, bool) { v, ok := proxy.ParseHostHeader(s); return v.String(), ok })
	check(proxy.RequestIDModeNames(), func(s string) (string, bool) { v, ok := proxy.ParseRequestIDMode(s); return v.String(), ok })
	check(proxy.HeaderOpNames(), func(s string) (string, bool) { v, ok := proxy.ParseHeaderOp(s); return v.String(), ok })
	check(proxy.HTTPVersionNames(), func(s string) (string, bool) { v, ok := proxy.ParseHTTPVersion(s); return v.String(), ok })
	check(proxy.VersionPolicyNames(), func(s string) (string, bool) { v, ok := proxy.ParseVersionPolicy(s); return v.String(), ok })
	check(proxy.TrustNames(), func(s string) (string, bool) { v, ok := proxy.ParseTrust(s); return v.String(), ok })
	check(proxy.ProxyProtocolNames(), func(s string) (string, bool) { v, ok := proxy.ParseProxyProtocol(s); return v.String(), ok })
	assert.Equal(t, "off", proxy.ProxyProtocolOff.String())
	assert.Equal(t, "client", proxy.HostClient.String())
	assert.Equal(t, "pass", proxy.RequestIDPass.String())
	assert.Equal(t, "set", proxy.HeaderSet.String())
	assert.Equal(t, "1.1", proxy.HTTP11.String())
	assert.Equal(t, "orLower", proxy.VersionOrLower.String())
	assert.Equal(t, "system", proxy.TrustSystem.String())
	assert.Equal(t, "invalid(9)", proxy.HostHeader(9).String())
	for _, e := range proxy.EncodingNames() {
		_, err := proxy.NewSite(proxy.SiteConfig{Compression: proxy.Compression{Enabled: true, Encodings: []string{e}}})
		assert.NoError(t, err, e)
	}
}

// TestGateRefusesAHandBuiltRoute: a zero Route is refused by gate.New,
// with the path of what is missing, instead of panicking on the first
// request.
func TestGateRefusesAHandBuiltRoute(t *testing.T) {
	_, err := gate.New(gate.Config{Hosts: []gate.Host{{Names: []string{"a.test"}, Routes: []gate.Route{
		{Prefix: "/", Target: &proxy.Route{}},
	}}}})
	assert.Equal(t, []string{
		gate.CodeRouteTargetMissing + " hosts[0].routes[0].target",
		proxy.CodeRouteClusterMissing + " hosts[0].routes[0].target.cluster",
	}, problemsOf(err))
}

// TestGateAnswersCarryRequestIDAndResponseRules: the answers the gate
// gives itself (a policy's 403, 404, 413, 414, 429, 431) carry the host's
// request ID and custom response rules, and the route's once it matched,
// over a real listener, like the proxy's own 502.
func TestGateAnswersCarryRequestIDAndResponseRules(t *testing.T) {
	site, err := proxy.NewSite(proxy.SiteConfig{
		RequestID:       proxy.RequestIDGenerate,
		ResponseHeaders: []proxy.HeaderRule{{Name: "X-Frame-Options", Value: "DENY"}},
	})
	require.NoError(t, err)
	var reg upstream.Registry
	reg.Plan([]upstream.ClusterConfig{{ID: "c", Destinations: []upstream.DestinationConfig{{ID: "d", Scheme: "http", Host: refusedAddr(t)}}}}).Commit()
	route, err := proxy.NewRoute(proxy.RouteConfig{
		Cluster:         &proxy.Cluster{Upstream: reg.Cluster("c"), Transport: proxy.NewTransport(proxy.ClientConfig{})},
		Site:            site,
		ResponseHeaders: []proxy.HeaderRule{{Name: "X-Route", Value: "api"}},
	})
	require.NoError(t, err)
	waf, err := gate.NewRuleSet(gate.RuleSetConfig{ID: "waf", Rules: []gate.Rule{{PathPrefix: "/wp-"}}})
	require.NoError(t, err)
	limit, err := gate.NewRateLimit(gate.RateLimitConfig{ID: "rl", Requests: 1, Period: time.Hour, Burst: 1})
	require.NoError(t, err)
	g, err := gate.New(gate.Config{Hosts: []gate.Host{{
		Names: []string{"app.test"}, AnswerHeaders: site, Policies: []gate.PolicyUse{{Policy: waf}},
		Limits: gate.Limits{MaxURIBytes: 100, MaxHeaderCount: 30},
		Routes: []gate.Route{
			{Prefix: "/api", Target: route, MaxBodyBytes: 4},
			{Prefix: "/limited", Target: route, Policies: []gate.PolicyUse{{Policy: limit}}},
		},
	}}})
	require.NoError(t, err)
	addr := listen(t, g)

	send := func(t *testing.T, method, path string, hdr http.Header, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Host = "app.test"
		for k, v := range hdr {
			req.Header[k] = v
		}
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		res, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	many := http.Header{}
	for i := range 40 {
		many["X-H"+strconv.Itoa(i)] = []string{"v"}
	}
	send(t, "GET", "/limited", nil, "") // spends the one token: 502, the proxy's own
	for _, tc := range []struct {
		name, method, path string
		hdr                http.Header
		body               string
		status             int
		route              bool
	}{
		{"policy refusal", "GET", "/wp-login.php", nil, "", 403, false},
		{"no route", "GET", "/other", nil, "", 404, false},
		{"uri too long", "GET", "/" + strings.Repeat("a", 120), nil, "", 414, false},
		{"too many headers", "GET", "/api", many, "", 431, false},
		{"body too large", "POST", "/api", nil, "too long", 413, true},
		{"rate limited", "GET", "/limited", nil, "", 429, true},
		{"the proxy's own 502", "GET", "/api", nil, "", 502, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := send(t, tc.method, tc.path, tc.hdr, tc.body)
			assert.Equal(t, tc.status, res.StatusCode)
			assert.Len(t, res.Header.Get("X-Request-Id"), 32, "a generated request ID")
			assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"), "the host's response rule")
			if tc.route {
				assert.Equal(t, "api", res.Header.Get("X-Route"), "the route's response rule")
			} else {
				assert.Empty(t, res.Header.Get("X-Route"))
			}
		})
	}
}
