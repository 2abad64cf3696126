package snapshot

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gateDocument is a host with every gate block, in front of the backend at
// addr.
func gateDocument(addr string) *config.Document {
	return &config.Document{
		Hosts: []config.Host{{
			Names:    []string{"app.test"},
			Policies: []string{"waf"},
			Routes: []config.Route{
				{ID: "web", Path: "/", Upstream: "u", Policies: []string{"rl"}},
				{ID: "up", Path: "/upload", Upstream: "u", MaxBodyBytes: 5},
			},
			HSTS:          &config.HSTS{MaxAge: "1h"},
			HTTPSRedirect: &config.HTTPSRedirect{},
			Robots:        "User-agent: *\n",
			Limits:        &config.RequestLimits{MaxURIBytes: 100},
		}},
		Upstreams:  []config.Upstream{{ID: "u", Destinations: []config.Destination{{ID: "d", Address: "http://" + addr}}}},
		RuleSets:   []config.RuleSet{{ID: "waf", Rules: []config.Rule{{PathPrefix: "/wp-"}}}},
		RateLimits: []config.RateLimit{{ID: "rl", Requests: 1, Period: "1h", Scope: "shared"}},
		Global:     config.Global{TrustedProxies: []string{"10.0.0.0/8"}, TrustForwardedProto: true},
	}
}

func TestCompileGatePolicies(t *testing.T) {
	b := startBackend(t, "b")
	var c Compiler
	doc := gateDocument(b.addr)
	require.Empty(t, Validate(doc))
	compile := func(doc *config.Document) *Snapshot {
		t.Helper()
		s, err := c.compileDocument(doc)
		require.NoError(t, err)
		s.commit()
		return s
	}
	s := compile(doc)

	get := func(s *Snapshot, target string, hdr http.Header) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Host = "app.test"
		r.RemoteAddr = "10.0.0.1:1234"
		for k, v := range hdr {
			r.Header[k] = v
		}
		w := httptest.NewRecorder()
		s.Gate().Simulate(w, r, nil)
		if w.Code == 200 && w.Body.Len() == 0 {
			// A hand-over: serve for real to spend the rate limit's token.
			w = httptest.NewRecorder()
			s.ServeHTTP(w, r)
		}
		return w
	}
	https := http.Header{"X-Forwarded-Proto": {"https"}}
	assert.Equal(t, 308, get(s, "/", nil).Code, "plain HTTP is redirected")
	assert.Equal(t, 403, get(s, "/wp-login.php", https).Code)
	w := get(s, "/robots.txt", https)
	assert.Equal(t, "User-agent: *\n", w.Body.String())
	assert.Equal(t, "max-age=3600", w.Header().Get("Strict-Transport-Security"))
	forwarded := func(s *Snapshot) {
		t.Helper()
		w := get(s, "/a", https)
		assert.Equal(t, 200, w.Code)
		assert.Equal(t, "b /a", w.Body.String(), "the upstream answered")
	}
	forwarded(s)
	assert.Equal(t, 429, get(s, "/a", https).Code)
	assert.EqualValues(t, 1, b.hits.Load(), "a limited request never reaches the upstream")

	// An unchanged rate limit keeps its buckets in the next snapshot.
	s2 := compile(gateDocument(b.addr))
	assert.Equal(t, 429, get(s2, "/a", https).Code)

	// A changed one starts afresh.
	doc3 := gateDocument(b.addr)
	doc3.RateLimits[0].Requests = 2
	s3 := compile(doc3)
	forwarded(s3)
	forwarded(s3)
	assert.Equal(t, 429, get(s3, "/a", https).Code)
	assert.EqualValues(t, 3, b.hits.Load())
}
