package gate

import (
	"net/http"
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
