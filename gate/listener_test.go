package gate

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// serve serves g on a loopback listener with ConnContext and returns its
// address.
func serve(t testing.TB, g http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: g, ConnContext: ConnContext, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// echoTarget answers 200 with what the gate resolved, in headers.
var echoTarget = TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {
	h := w.Header()
	h.Set("X-Client", rq.Client.String())
	h.Set("X-Source", rq.ClientSource.String())
	h.Set("X-Scheme", rq.Scheme)
	h.Set("X-Path", rq.Path)
	if rq.CloudflareTrusted {
		h.Set("X-Cf-Trusted", "yes")
	}
	if rq.Route != nil {
		h.Set("X-Route", rq.Route.ID)
	}
	if v := r.Header.Get("X-User"); v != "" {
		h.Set("X-Client-User", v) // the client's own: must never get here
	}
	if v := rq.Upstream.Get("X-User"); v != "" {
		h.Set("X-User", v)
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	h.Set("X-Body", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
})

type call struct {
	method, host, target string
	header               http.Header
	body                 io.Reader
	length               int64 // for body: -1 chunked
}

// do sends c to the gate at addr on a transport of its own, within the
// test's patience, and does not follow redirects.
func do(t *testing.T, addr string, c call) *http.Response {
	t.Helper()
	if c.method == "" {
		c.method = http.MethodGet
	}
	req, err := http.NewRequest(c.method, "http://"+addr+c.target, c.body)
	require.NoError(t, err)
	req.Host = c.host
	for k, v := range c.header {
		req.Header[k] = v
	}
	if c.body != nil {
		req.ContentLength = c.length
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: patience, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	require.NoError(t, err)
	return string(b)
}

func TestListenerStatuses(t *testing.T) {
	deny, err := NewAccessList(AccessListConfig{ID: "deny-loopback", Deny: mustPrefix("127.0.0.0/8")})
	require.NoError(t, err)
	rl, err := NewRateLimit(RateLimitConfig{ID: "rl", Requests: 1, Period: time.Hour, Burst: 2})
	require.NoError(t, err)
	challenges := new(ChallengeStore)
	challenges.Set("tok-1", "tok-1.thumbprint")
	g, err := New(Config{
		Server:     "edge",
		Challenges: challenges,
		Hosts: []Host{
			{
				Names: []string{"app.test"},
				Routes: []Route{
					{ID: "root", Prefix: "/", Target: echoTarget},
					{ID: "upload", Prefix: "/upload", Target: echoTarget, MaxBodyBytes: 10},
					{ID: "limited", Prefix: "/limited", Target: echoTarget, Policies: []PolicyUse{{Policy: rl}}},
					{ID: "private", Prefix: "/private", Target: echoTarget, Policies: []PolicyUse{{Policy: deny}}},
					{ID: "maint", Prefix: "/maint", Target: echoTarget, Policies: []PolicyUse{{Policy: NewFixed("maintenance", Answer{Body: []byte("back soon\n")})}}},
				},
				Limits: Limits{MaxURIBytes: 64, MaxHeaderCount: 20, MaxBodyBytes: 1000},
				Robots: []byte("User-agent: *\nDisallow: /\n"),
				HSTS:   HSTS{MaxAge: time.Hour},
			},
			{Names: []string{"exact.test"}, Routes: []Route{{ID: "api", Prefix: "/api", Target: echoTarget}}},
			{Names: []string{"old.test"}, Kind: HostRedirect, Redirect: Redirect{To: "https://new.test", Status: 301}},
			{Names: []string{"status.test"}, Kind: HostFixed, Fixed: Answer{Status: 503, Body: []byte("down\n")}},
			{Names: []string{"secure.test"}, HTTPSRedirect: HTTPSRedirect{Enabled: true}, Routes: []Route{{Prefix: "/", Target: echoTarget}}},
		},
	})
	require.NoError(t, err)
	addr := serve(t, g)

	big := strings.NewReader(strings.Repeat("x", 11))
	tests := []struct {
		name     string
		c        call
		status   int
		body     string
		header   map[string]string
		noHeader []string
	}{
		{name: "forwarded", c: call{host: "app.test", target: "/x/Y;v=1/%7ez"}, status: 200,
			header:   map[string]string{"X-Path": "/x/Y/~z", "Server": "edge", "X-Client": "127.0.0.1", "X-Scheme": "http"},
			noHeader: []string{"Strict-Transport-Security"}},
		{name: "400 dot segment", c: call{host: "app.test", target: "/x//y/../z"}, status: 400, body: "400 Bad Request\n", header: map[string]string{"Server": "edge"}},
		{name: "403", c: call{host: "app.test", target: "/private/a"}, status: 403, body: "403 Forbidden\n", header: map[string]string{"Server": "edge"}},
		{name: "404 no route", c: call{host: "exact.test", target: "/web"}, status: 404},
		{name: "404 unknown host", c: call{host: "nope.test", target: "/"}, status: 404, body: "not found\n"},
		{name: "413 declared", c: call{host: "app.test", target: "/upload", method: "POST", body: big, length: 11}, status: 413},
		{name: "413 chunked", c: call{host: "app.test", target: "/upload", method: "POST", body: strings.NewReader(strings.Repeat("x", 11)), length: -1}, status: 413},
		{name: "body within limit", c: call{host: "app.test", target: "/upload", method: "POST", body: strings.NewReader("0123456789"), length: 10}, status: 200, header: map[string]string{"X-Body": "10"}},
		{name: "414", c: call{host: "app.test", target: "/" + strings.Repeat("a", 80)}, status: 414},
		{name: "431", c: call{host: "app.test", target: "/", header: manyHeaders(25)}, status: 431},
		{name: "301 redirect host", c: call{host: "old.test", target: "/a?b=c"}, status: 301, header: map[string]string{"Location": "https://new.test/a?b=c"}},
		{name: "308 https redirect", c: call{host: "secure.test", target: "/"}, status: 308, header: map[string]string{"Location": "https://secure.test/"}},
		{name: "308 https redirect path", c: call{host: "secure.test:80", target: "/p?q=1"}, status: 308, header: map[string]string{"Location": "https://secure.test/p?q=1"}},
		{name: "fixed host", c: call{host: "status.test", target: "/"}, status: 503, body: "down\n"},
		{name: "maintenance policy", c: call{host: "app.test", target: "/maint"}, status: 503, body: "back soon\n"},
		{name: "robots", c: call{host: "app.test", target: "/robots.txt"}, status: 200, body: "User-agent: *\nDisallow: /\n"},
		{name: "acme", c: call{host: "anything.test", target: "/.well-known/acme-challenge/tok-1"}, status: 200, body: "tok-1.thumbprint", header: map[string]string{"Server": "edge"}},
		{name: "acme unknown token falls through", c: call{host: "app.test", target: "/.well-known/acme-challenge/nope"}, status: 200, header: map[string]string{"X-Route": "root"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do(t, addr, tt.c)
			b := body(t, resp)
			assert.Equal(t, tt.status, resp.StatusCode, b)
			if tt.body != "" {
				assert.Equal(t, tt.body, b)
			}
			for k, v := range tt.header {
				assert.Equal(t, v, resp.Header.Get(k), k)
			}
			for _, k := range tt.noHeader {
				assert.Empty(t, resp.Header.Get(k), k)
			}
		})
	}
	// The only subtest on the rate-limited route: it spends the bucket
	// itself, so it gives the same answers run alone.
	t.Run("429 after the burst", func(t *testing.T) {
		var resp *http.Response
		for i, want := range []int{200, 200, 429} {
			resp = do(t, addr, call{host: "app.test", target: "/limited"})
			body(t, resp)
			require.Equal(t, want, resp.StatusCode, "request %d", i+1)
		}
		assert.Equal(t, "3600", resp.Header.Get("Retry-After"))
	})
}

func manyHeaders(n int) http.Header {
	h := http.Header{}
	for i := range n {
		h["X-H"+strconv.Itoa(i+1)] = []string{"v"}
	}
	return h
}

func TestListenerTrustedProxies(t *testing.T) {
	build := func(trusted []netip.Prefix, cloudflare, proto bool) string {
		g, err := New(Config{
			TrustedProxies: trusted, Cloudflare: cloudflare, TrustForwardedProto: proto,
			Hosts: []Host{{Names: []string{"app.test"}, Routes: []Route{{Prefix: "/", Target: echoTarget}}}},
		})
		require.NoError(t, err)
		return serve(t, g)
	}
	untrusted := build(mustPrefix("10.0.0.0/8"), false, true)
	trusted := build(mustPrefix("127.0.0.1/32", "198.51.100.0/24"), false, true)
	cfUntrusted := build(mustPrefix("10.0.0.0/8"), true, false)
	cf := build(mustPrefix("127.0.0.1/32"), true, false)

	forged := http.Header{
		"X-Forwarded-For":   {"203.0.113.7"},
		"X-Forwarded-Proto": {"https"},
		"Cf-Connecting-Ip":  {"203.0.113.8"},
		"Cf-Visitor":        {`{"scheme":"https"}`},
	}
	tests := []struct {
		name, addr string
		header     http.Header
		client     string
		source     string
		scheme     string
		cf         bool
	}{
		{"untrusted peer: forged headers ignored", untrusted, forged, "127.0.0.1", "peer", "http", false},
		{"LAN client forging Cloudflare headers", cfUntrusted, forged, "127.0.0.1", "peer", "http", false},
		{"trusted proxy: rightmost untrusted", trusted, http.Header{
			"X-Forwarded-For":   {"203.0.113.7, 198.51.100.4", "198.51.100.5"},
			"X-Forwarded-Proto": {"https"},
		}, "203.0.113.7", "x-forwarded-for", "https", false},
		{"trusted proxy: all hops trusted", trusted, http.Header{"X-Forwarded-For": {"198.51.100.9, 198.51.100.4"}}, "198.51.100.9", "x-forwarded-for", "http", false},
		{"trusted proxy: malformed element stops the walk", trusted, http.Header{"X-Forwarded-For": {"203.0.113.7, junk, 198.51.100.4"}}, "198.51.100.4", "x-forwarded-for", "http", false},
		{"trusted proxy: no header", trusted, nil, "127.0.0.1", "peer", "http", false},
		{"cloudflare: connecting ip and visitor", cf, forged, "203.0.113.8", "cf-connecting-ip", "https", true},
		{"cloudflare: bad visitor falls back to X-Forwarded-Proto", cf, http.Header{
			"Cf-Connecting-Ip": {"203.0.113.8"}, "Cf-Visitor": {`{"scheme": "https"}`}, "X-Forwarded-Proto": {"http"},
		}, "203.0.113.8", "cf-connecting-ip", "http", true},
		{"cloudflare: no CF-Connecting-IP falls back to X-Forwarded-For", cf, http.Header{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9", "x-forwarded-for", "http", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := do(t, tt.addr, call{host: "app.test", target: "/", header: tt.header})
			require.Equal(t, 200, resp.StatusCode)
			assert.Equal(t, tt.client, resp.Header.Get("X-Client"))
			assert.Equal(t, tt.source, resp.Header.Get("X-Source"))
			assert.Equal(t, tt.scheme, resp.Header.Get("X-Scheme"))
			assert.Equal(t, tt.cf, resp.Header.Get("X-Cf-Trusted") == "yes")
		})
	}
}

func TestListenerShadowMode(t *testing.T) {
	deny, err := NewAccessList(AccessListConfig{ID: "deny-all", Deny: mustPrefix("0.0.0.0/0")})
	require.NoError(t, err)
	state := new(State)
	g, err := New(Config{
		State: state,
		Hosts: []Host{{Names: []string{"app.test"}, Policies: []PolicyUse{{Policy: deny, Mode: Shadow}},
			Routes: []Route{{Prefix: "/", Target: echoTarget}, {Prefix: "/enforced", Target: echoTarget, Policies: []PolicyUse{{Policy: deny}}},
				{Prefix: "/off", Target: echoTarget, Policies: []PolicyUse{{Policy: deny, Mode: Off}}}}}},
	})
	require.NoError(t, err)
	addr := serve(t, g)
	assert.Equal(t, 200, do(t, addr, call{host: "app.test", target: "/"}).StatusCode)
	assert.EqualValues(t, 1, state.Counters().ShadowWouldBlock.Load())
	assert.Equal(t, 200, do(t, addr, call{host: "app.test", target: "/off"}).StatusCode)
	assert.Equal(t, 403, do(t, addr, call{host: "app.test", target: "/enforced"}).StatusCode)
	assert.EqualValues(t, 3, state.Counters().ShadowWouldBlock.Load())
}

func TestListenerBasicAuth(t *testing.T) {
	hash := bcryptHash(t, "s3cret")
	al, err := NewAccessList(AccessListConfig{ID: "users", Users: []BasicUser{{Name: "ann", Hash: hash}}, Realm: "staff"})
	require.NoError(t, err)
	g, err := New(Config{Hosts: []Host{{Names: []string{"app.test"}, Policies: []PolicyUse{{Policy: al}}, Routes: []Route{{Prefix: "/", Target: echoTarget}}}}})
	require.NoError(t, err)
	addr := serve(t, g)
	resp := do(t, addr, call{host: "app.test", target: "/"})
	assert.Equal(t, 401, resp.StatusCode)
	assert.Equal(t, `Basic realm="staff", charset="UTF-8"`, resp.Header.Get("WWW-Authenticate"))
	assert.Equal(t, 401, do(t, addr, call{host: "app.test", target: "/", header: basic("ann", "wrong")}).StatusCode)
	assert.Equal(t, 401, do(t, addr, call{host: "app.test", target: "/", header: basic("bob", "s3cret")}).StatusCode)
	assert.Equal(t, 200, do(t, addr, call{host: "app.test", target: "/", header: basic("ann", "s3cret")}).StatusCode)
	assert.Equal(t, 200, do(t, addr, call{host: "app.test", target: "/", header: basic("ann", "s3cret")}).StatusCode)
}
