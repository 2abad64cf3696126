package snapshot

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func gateDocument() *Document {
	return &Document{
		Hosts: []Host{{
			Names:    []string{"app.test"},
			Policies: []string{"waf"},
			Routes: []Route{
				{ID: "web", Path: "/", Upstream: "u", Policies: []string{"rl"}},
				{ID: "up", Path: "/upload", Upstream: "u", MaxBodyBytes: 5},
			},
			HSTS:          &HSTS{MaxAge: "1h"},
			HTTPSRedirect: &HTTPSRedirect{},
			Robots:        "User-agent: *\n",
			Limits:        &RequestLimits{MaxURIBytes: 100},
		}},
		Upstreams:  []Upstream{{ID: "u", Destinations: []Destination{{ID: "d", Address: "http://127.0.0.1:9"}}}},
		RuleSets:   []RuleSet{{ID: "waf", Rules: []Rule{{PathPrefix: "/wp-"}}}},
		RateLimits: []RateLimit{{ID: "rl", Requests: 1, Period: "1h", Scope: "shared"}},
		Global:     Global{TrustedProxies: []string{"10.0.0.0/8"}, TrustForwardedProto: true},
	}
}

func TestCompileGatePolicies(t *testing.T) {
	var c Compiler
	doc := gateDocument()
	require.Empty(t, Validate(doc, ValidateOptions{}))
	s, err := c.Compile(doc)
	require.NoError(t, err)

	get := func(s *Snapshot, target string, hdr http.Header) *httptest.ResponseRecorder {
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
	assert.NotEqual(t, 429, get(s, "/a", https).Code)
	assert.Equal(t, 429, get(s, "/a", https).Code)

	// An unchanged rate limit keeps its buckets in the next snapshot.
	s2, err := c.Compile(gateDocument())
	require.NoError(t, err)
	assert.Equal(t, 429, get(s2, "/a", https).Code)

	// A changed one starts afresh.
	doc3 := gateDocument()
	doc3.RateLimits[0].Requests = 2
	s3, err := c.Compile(doc3)
	require.NoError(t, err)
	assert.NotEqual(t, 429, get(s3, "/a", https).Code)
}
