package main

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecurityForwardedClient: behind a trusted proxy, the client that an
// allow list and a rate limit of one route decide on is the one
// X-Forwarded-For names, the same for both, and each request on a
// keep-alive connection is judged on its own header: the request before
// it leaves no client behind.
func TestSecurityForwardedClient(t *testing.T) {
	t.Parallel()
	up := startRecorder(t, map[string]string{"/": "open"})
	d := startWithDoc(t, config.Document{
		Global:      config.Global{TrustedProxies: []string{"127.0.0.0/8"}},
		Upstreams:   []config.Upstream{upstreamOf("app", up.addr)},
		AccessLists: []config.AccessList{{ID: "docs", Allow: []string{"192.0.2.0/24", "2001:db8::/32"}}},
		RateLimits:  []config.RateLimit{{ID: "one", Requests: 1, Period: "1h", Scope: "shared"}},
		Hosts: []config.Host{{
			Names: []string{"app.test"}, AccessList: "docs", Policies: []string{"one"},
			Routes: []config.Route{{Upstream: "app"}},
		}},
	})

	w := dialWire(t, d.addr)
	steps := []struct {
		xff  []string // one header line each
		want int
	}{
		{[]string{"192.0.2.1"}, http.StatusOK},
		{[]string{"192.0.2.1"}, http.StatusTooManyRequests}, // its one token is spent
		{[]string{"192.0.2.2"}, http.StatusOK},              // another client: not the one before
		{nil, http.StatusForbidden},                         // the peer itself, not allowed
		{[]string{"198.51.100.1"}, http.StatusForbidden},
		{[]string{"192.0.2.3"}, http.StatusOK},
		// Every line is read, the rightmost untrusted address wins.
		{[]string{"192.0.2.4", "198.51.100.2"}, http.StatusForbidden},
		{[]string{"198.51.100.3", "192.0.2.5"}, http.StatusOK},
		{[]string{"198.51.100.3", "192.0.2.5"}, http.StatusTooManyRequests},
		{[]string{" 192.0.2.6 ,\t127.0.0.1 "}, http.StatusOK},
		{[]string{"192.0.2.6"}, http.StatusTooManyRequests},
		// IPv4-mapped is the IPv4 address, for both policies.
		{[]string{"::ffff:192.0.2.7"}, http.StatusOK},
		{[]string{"192.0.2.7"}, http.StatusTooManyRequests},
		// IPv6: one bucket per /64.
		{[]string{"2001:db8:0:1::1"}, http.StatusOK},
		{[]string{"2001:DB8:0:1::2"}, http.StatusTooManyRequests},
		{[]string{"2001:db8:0:2::1"}, http.StatusOK},
		// No reading of these is an address: the client is the peer.
		{[]string{"2001:db8:0:3::1%eth0"}, http.StatusForbidden},
		{[]string{"[2001:db8:0:4::1]"}, http.StatusForbidden},
		{[]string{"192.0.2.8:80"}, http.StatusForbidden},
		{[]string{"192.0.2.9 192.0.2.10"}, http.StatusForbidden},
		{nil, http.StatusForbidden},
	}
	for i, s := range steps {
		raw := "GET / HTTP/1.1\r\nHost: app.test\r\n"
		for _, v := range s.xff {
			raw += "X-Forwarded-For: " + v + "\r\n"
		}
		w.send(raw + "\r\n")
		r := w.next(http.MethodGet)
		assert.Equal(t, s.want, r.status, "step %d, X-Forwarded-For %q: %q", i, s.xff, r.body)
	}
	// The upstream is told the client each decision was about.
	var told []string
	for _, s := range up.take() {
		told = append(told, s.header.Get("X-Real-Ip"))
	}
	assert.Equal(t, []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.5", "192.0.2.6", "192.0.2.7", "2001:db8:0:1::1", "2001:db8:0:2::1"}, told)
}

// TestSecurityUserAgentRule: a rule on User-Agent decides on the header
// the upstream receives. Of two lines, the rule reads the first, the only
// one forwarded (as net/http's transports send it): never one read and
// another sent.
func TestSecurityUserAgentRule(t *testing.T) {
	t.Parallel()
	up := startRecorder(t, map[string]string{"/": "open"})
	d := startWithDoc(t, config.Document{
		Upstreams: []config.Upstream{upstreamOf("app", up.addr)},
		RuleSets: []config.RuleSet{{ID: "bots", Rules: []config.Rule{
			{PathPrefix: "/public", Action: "allow"},
			{UserAgentContains: "EvilBot"},
		}}},
		Hosts: []config.Host{{
			Names: []string{"app.test"}, Policies: []string{"bots"},
			Routes: []config.Route{{Upstream: "app"}},
		}},
	})
	for _, c := range []struct {
		ua   []string
		want int
	}{
		{nil, http.StatusOK},
		{[]string{"curl/8"}, http.StatusOK},
		{[]string{""}, http.StatusOK},
		{[]string{"Mozilla evilbot/1"}, http.StatusForbidden},
		{[]string{"curl/8", "EvilBot/1"}, http.StatusOK},
		{[]string{"EvilBot/1", "curl/8"}, http.StatusForbidden},
	} {
		raw := "GET /x HTTP/1.1\r\nHost: app.test\r\nConnection: close\r\n"
		for _, v := range c.ua {
			raw += "User-Agent: " + v + "\r\n"
		}
		r := roundTrip(t, d.addr, raw+"\r\n")
		got := up.take()
		if c.want == http.StatusOK {
			assert.Equal(t, "open", r.body, "User-Agent %q", c.ua)
			if assert.Len(t, got, 1) && len(c.ua) > 0 && c.ua[0] != "" {
				assert.Equal(t, c.ua[:1], got[0].header["User-Agent"], "forwarded for %q", c.ua)
			}
			continue
		}
		assert.Contains(t, []int{http.StatusBadRequest, http.StatusForbidden}, r.status, "User-Agent %q: %q", c.ua, r.body)
		assert.Empty(t, got, "User-Agent %q reached the upstream", c.ua)
	}
	// A rule before the user-agent rule decides without it.
	r := roundTrip(t, d.addr, "GET /public HTTP/1.1\r\nHost: app.test\r\nUser-Agent: EvilBot\r\nConnection: close\r\n\r\n")
	assert.Equal(t, "open", r.body)
	up.take()
}

// TestSecurityPathTrie: TestSecurityPath's spellings against a host with
// more routes than it scans in order, whose guarded route ends the trie
// (a leaf): the walk that stops there decides on the path forwarded.
func TestSecurityPathTrie(t *testing.T) {
	t.Parallel()
	up := startRecorder(t, map[string]string{"/secret/": "secret", "/admin/": "admin", "/": "open"})
	routes := []config.Route{
		{Path: "/", Upstream: "app"},
		{Path: "/secret", Upstream: "app", Policies: []string{"no-loopback"}},
		{Path: "/admin", Upstream: "app", Policies: []string{"no-loopback"}},
	}
	for i := range 12 {
		routes = append(routes, config.Route{Path: fmt.Sprintf("/r%02d/x", i), Upstream: "app"})
	}
	d := startWithDoc(t, config.Document{
		Upstreams:   []config.Upstream{upstreamOf("app", up.addr)},
		AccessLists: []config.AccessList{noLoopback},
		Hosts:       []config.Host{{Names: []string{"app.test"}, Routes: routes}},
	})
	for _, p := range []string{"/secret", "/secret/", "/secret/x/y", "/admin/x"} {
		require.Equal(t, http.StatusForbidden, roundTrip(t, d.addr, get("app.test", p)).status, p)
	}
	require.Equal(t, "open", roundTrip(t, d.addr, get("app.test", "/r03/x")).body)
	up.take()
	for _, name := range []string{"secret", "admin"} {
		for _, s := range append(pathSpellings, "/{n}//x", "//{n}//", "/{n}/./x", "/{n}%2F/x", "/{N}/x") {
			target := spell(s, name)
			t.Run(target, func(t *testing.T) { checkPathAttack(t, d, up, "app.test", target) })
		}
	}
}
