package proxy_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// problemsOf returns "code path" for each problem err holds, and nil for
// nil; an error that holds no problem is reported as itself.
func problemsOf(err error) []string {
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	var out []string
	for _, e := range errs {
		var p *proxy.ValidationError
		if errors.As(e, &p) {
			out = append(out, p.Code+" "+p.Path)
		} else {
			out = append(out, "not a problem: "+e.Error())
		}
	}
	return out
}

// TestNewRouteNamesWhatIsMissing: the error of a route without its
// cluster, runtime state or transport says which, and a hand-built Route
// reports the same through CheckTarget.
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
		assert.Equal(t, tc.want, problemsOf((&proxy.Route{Cluster: tc.cluster}).CheckTarget()))
		if err == nil {
			assert.NoError(t, rt.CheckTarget())
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
	for _, tc := range []struct {
		cfg  proxy.ClientConfig
		want []string
	}{
		{proxy.ClientConfig{}, nil},
		{proxy.ClientConfig{Version: proxy.HTTP2, VersionPolicy: proxy.VersionExact, ConnectTimeout: proxy.MinConnectTimeout,
			Trust: proxy.TrustPinned, Pins: pin + pin, ServerName: "api.internal"}, nil},
		{proxy.ClientConfig{ConnectTimeout: proxy.MaxConnectTimeout, ServerName: "2001:db8::1"}, nil},
		{proxy.ClientConfig{Version: 2, VersionPolicy: 2, ConnectTimeout: 99 * time.Millisecond, ResponseHeaderTimeout: -1, Trust: 3, ServerName: "a b"}, []string{
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
