package simulate

import (
	"crypto/tls"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/proxyproto"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatewayDoc has a host for every outcome of the gate.
const gatewayDoc = `
global:
  trustedProxies: [10.0.0.1]
  tls: {defaultCertificate: c, unknownSni: refuse}
certificates: [{id: c}]
accessLists:
  - {id: office, allow: [10.0.0.0/8]}
ruleSets:
  - id: waf
    rules:
      - {pathPrefix: /wp-}
      - {pathPrefix: /teapot, action: respond, respond: {status: 418, body: "short and stout\n"}}
  - id: watch
    mode: shadow
    rules: [{pathPrefix: /watched}]
rateLimits:
  - {id: slow, requests: 1, period: 1h, scope: shared}
hosts:
  - names: [app.test, "*.app.test"]
    hsts: {maxAge: 1h}
    requestId: generate
    policies: [waf, watch]
    limits: {maxUriBytes: 64, maxHeaderCount: 8, maxBodyBytes: 1000}
    headers:
      response: [{name: X-Frame-Options, value: DENY}]
    routes:
      - {id: api, path: /api, upstream: api}
      - {id: admin, path: /admin, upstream: api, policies: [office]}
      - {id: limited, path: /limited, upstream: api, policies: [slow]}
  - names: [h1.test]
    tls: {http1Only: true, minVersion: "1.3"}
    routes: [{path: /, upstream: api}]
  - names: [h3.test]
    tls: {http3: true}
    httpsRedirect: {}
    routes: [{path: /, upstream: api}]
  - names: [old.test]
    kind: redirect
    redirect: {to: "https://new.test", status: 301}
  - names: [fixed.test]
    kind: fixed
    fixed: {status: 503, body: "back soon\n"}
upstreams:
  - id: api
    destinations:
      - {id: one, address: "http://127.0.0.1:9"}
      - {id: two, address: "http://127.0.0.1:10"}
`

func TestRunOutcomes(t *testing.T) {
	store := publish(t, gatewayDoc, compilerFor(t))
	target := LiveTarget(store)
	for _, tc := range []struct {
		name  string
		probe Probe
		want  Outcome // the fields compared: Kind, Stage, Status, Policy, Location, Route, Protocol
		steps []string
	}{
		{"forward", Probe{URL: "https://app.test/api/users?id=1", HTTPVersion: 2},
			Outcome{Kind: Forwarded, Stage: "hand-over", Route: "api", Protocol: "HTTP/2.0"},
			[]string{"connections", "handshake", "client", "host", "tls", "headers", "policy", "policy", "route", "hand-over", "upstream"}},
		{"wildcard host", Probe{URL: "http://x.app.test/api"},
			Outcome{Kind: Forwarded, Stage: "hand-over", Route: "api", Protocol: "HTTP/1.1"}, nil},
		{"no route", Probe{URL: "http://app.test/nothing"},
			Outcome{Kind: NotFound, Stage: "route", Status: 404, Protocol: "HTTP/1.1"}, nil},
		{"unknown host", Probe{URL: "http://nobody.test/"},
			Outcome{Kind: NotFound, Stage: "host", Status: 404, Protocol: "HTTP/1.1"},
			[]string{"connections", "client", "host", "answer"}},
		{"rule set deny", Probe{URL: "http://app.test/wp-login.php"},
			Outcome{Kind: Answered, Stage: "policy", Status: 403, Policy: "waf", Protocol: "HTTP/1.1"}, nil},
		{"rule set respond", Probe{URL: "http://app.test/teapot"},
			Outcome{Kind: Answered, Stage: "policy", Status: 418, Policy: "waf", Protocol: "HTTP/1.1"}, nil},
		{"access list from outside", Probe{URL: "http://app.test/admin"},
			Outcome{Kind: Answered, Stage: "policy", Status: 403, Policy: "office", Route: "admin", Protocol: "HTTP/1.1"}, nil},
		{"access list through a trusted proxy", Probe{URL: "http://app.test/admin", Peer: MustPeer("10.0.0.1"), Header: http.Header{"X-Forwarded-For": {"10.2.3.4"}}},
			Outcome{Kind: Forwarded, Stage: "hand-over", Route: "admin", Protocol: "HTTP/1.1"}, nil},
		{"forged X-Forwarded-For", Probe{URL: "http://app.test/admin", Header: http.Header{"X-Forwarded-For": {"10.2.3.4"}}},
			Outcome{Kind: Answered, Stage: "policy", Status: 403, Policy: "office", Route: "admin", Protocol: "HTTP/1.1"}, nil},
		{"uri too long", Probe{URL: "http://app.test/api/" + strings.Repeat("a", 80)},
			Outcome{Kind: Answered, Stage: "limits", Status: 414, Protocol: "HTTP/1.1"}, nil},
		{"too many headers", Probe{URL: "http://app.test/api", Header: http.Header{"X-A": {"1", "2", "3", "4", "5", "6", "7", "8"}}},
			Outcome{Kind: Answered, Stage: "limits", Status: 431, Protocol: "HTTP/1.1"}, nil},
		{"headers over the listener's limit", Probe{URL: "http://app.test/api", Header: http.Header{"X-Big": {strings.Repeat("b", 40<<10)}}},
			Outcome{Kind: ServerRefused, Stage: "server", Status: 431}, []string{"connections", "server"}},
		{"declared body over the limit", Probe{Method: "POST", URL: "http://app.test/api", Header: http.Header{"Content-Length": {"2000"}}},
			Outcome{Kind: Answered, Stage: "limits", Status: 413, Route: "api", Protocol: "HTTP/1.1"}, nil},
		{"declared body over the limit, HTTP/2", Probe{Method: "POST", URL: "https://app.test/api", HTTPVersion: 2, Header: http.Header{"Content-Length": {"2000"}}},
			Outcome{Kind: Answered, Stage: "limits", Status: 413, Route: "api", Protocol: "HTTP/2.0"}, nil},
		{"body within the limit", Probe{Method: "POST", URL: "http://app.test/api", Header: http.Header{"Content-Length": {"20"}}},
			Outcome{Kind: Forwarded, Stage: "hand-over", Route: "api", Protocol: "HTTP/1.1"}, nil},
		{"chunked body", Probe{Method: "POST", URL: "http://app.test/api", Header: http.Header{"Transfer-Encoding": {"chunked"}}},
			Outcome{Kind: Forwarded, Stage: "hand-over", Route: "api", Protocol: "HTTP/1.1"}, nil},
		{"both framings", Probe{Method: "POST", URL: "http://app.test/api", Header: http.Header{"Transfer-Encoding": {"chunked"}, "Content-Length": {"3"}}},
			Outcome{Kind: ServerRefused, Stage: "server", Status: 400}, nil},
		{"bad path", Probe{URL: "http://app.test/api/a%2Fb"},
			Outcome{Kind: Answered, Stage: "path", Status: 400, Route: "api", Protocol: "HTTP/1.1"}, nil},
		{"http2 to an http1-only host", Probe{URL: "https://h1.test/", HTTPVersion: 2},
			Outcome{Kind: Forwarded, Stage: "hand-over", Route: "/", Protocol: "HTTP/1.1"}, nil},
		{"http2 on a shared connection", Probe{URL: "https://h1.test/", HTTPVersion: 2, TLS: &TLS{SNI: "app.test"}},
			Outcome{Kind: Misdirected, Stage: "tls", Status: 421, Protocol: "HTTP/2.0"}, nil},
		{"tls 1.2 to a tls 1.3 host", Probe{URL: "https://h1.test/", TLS: &TLS{Version: tls.VersionTLS12}},
			Outcome{Kind: TLSRefused, Stage: "handshake"}, nil},
		{"unknown sni refused", Probe{URL: "https://nobody.test/"},
			Outcome{Kind: TLSRefused, Stage: "handshake"}, []string{"connections", "handshake"}},
		{"https redirect", Probe{URL: "http://h3.test/a?b=c"},
			Outcome{Kind: Redirected, Stage: "redirect", Status: 308, Location: "https://h3.test/a?b=c", Protocol: "HTTP/1.1"}, nil},
		{"host redirect", Probe{URL: "http://old.test/x"},
			Outcome{Kind: Redirected, Stage: "redirect", Status: 301, Location: "https://new.test/x", Protocol: "HTTP/1.1"}, nil},
		{"host redirect over HTTP/2, not followed", Probe{URL: "https://old.test/x", HTTPVersion: 2},
			Outcome{Kind: Redirected, Stage: "redirect", Status: 301, Location: "https://new.test/x", Protocol: "HTTP/2.0"}, nil},
		{"fixed host", Probe{URL: "http://fixed.test/"},
			Outcome{Kind: Answered, Stage: "answer", Status: 503, Protocol: "HTTP/1.1"}, nil},
		{"http3", Probe{URL: "https://h3.test/", HTTPVersion: 3},
			Outcome{Kind: Forwarded, Stage: "hand-over", Route: "/", Protocol: "HTTP/3.0"}, nil},
		{"http3 to a host without it", Probe{URL: "https://app.test/api", HTTPVersion: 3},
			Outcome{Kind: TLSRefused, Stage: "handshake"}, nil},
		{"rate limit peeks", Probe{URL: "http://app.test/limited"},
			Outcome{Kind: Forwarded, Stage: "hand-over", Route: "limited", Protocol: "HTTP/1.1"}, nil},
		{"PROXY header to a listener without PROXY protocol", Probe{URL: "http://app.test/api", ProxyProtocol: MustPeer("198.51.100.7:1")},
			Outcome{Kind: ServerRefused, Stage: "server", Status: 400}, []string{"proxyProtocol", "connections", "server"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(target, tc.probe)
			require.NoError(t, err)
			o := res.Outcome
			got := Outcome{Kind: o.Kind, Stage: o.Stage, Status: o.Status, Policy: o.Policy, Location: o.Location, Route: o.Route, Protocol: o.Protocol}
			assert.Equal(t, tc.want, got, res.Describe())
			if tc.steps != nil {
				var kinds []string
				for _, s := range res.Trace {
					kinds = append(kinds, s.Kind)
				}
				assert.Equal(t, tc.steps, kinds, res.Describe())
			}
		})
	}
}

// The outcome lists the response headers with the reason for each one
// absent, and they are the ones on the wire.
func TestRunHeaders(t *testing.T) {
	store := publish(t, gatewayDoc, compilerFor(t))
	facts := func(p Probe) map[string]string {
		t.Helper()
		res, err := Run(LiveTarget(store), p)
		require.NoError(t, err)
		out := map[string]string{}
		for _, h := range res.Outcome.Headers {
			out[h.Name] = h.Value + "|" + h.Absent
		}
		if id := res.Outcome.Header.Get("X-Request-Id"); id != "" {
			assert.Len(t, id, 32, "a generated request ID")
			out["X-Request-Id"] = "generated|"
		}
		return out
	}
	assert.Equal(t, map[string]string{
		"Server": "Paduraksa|", "Alt-Svc": "|no HTTP/3", "Strict-Transport-Security": "max-age=3600|", "X-Request-Id": "generated|",
	}, facts(Probe{URL: "https://app.test/wp-admin"}), "a policy's answer")
	assert.Equal(t, map[string]string{
		"Server": "Paduraksa|", "Alt-Svc": "|no HTTP/3", "Strict-Transport-Security": "|plain HTTP", "X-Request-Id": "generated|",
	}, facts(Probe{URL: "http://app.test/api"}), "a forward")
	assert.Equal(t, map[string]string{
		"Server": "Paduraksa|", "Alt-Svc": `h3=":443"; ma=86400|`, "Strict-Transport-Security": "|off", "X-Request-Id": "|the host passes the upstream's (requestId pass)",
	}, facts(Probe{URL: "https://h3.test/"}), "an HTTP/3 host over TCP")
	assert.Equal(t, map[string]string{
		"Server": "Paduraksa|", "Alt-Svc": "|HTTP/3 connection", "Strict-Transport-Security": "|off", "X-Request-Id": "|the host passes the upstream's (requestId pass)",
	}, facts(Probe{URL: "https://h3.test/", HTTPVersion: 3}), "over HTTP/3")
	assert.Equal(t, "answered before the response-headers stage", facts(Probe{URL: "https://h1.test/", HTTPVersion: 2, TLS: &TLS{SNI: "app.test"}})["Strict-Transport-Security"][1:])

	res, err := Run(LiveTarget(store), Probe{URL: "http://app.test/wp-x"})
	require.NoError(t, err)
	assert.Equal(t, "DENY", res.Outcome.Header.Get("X-Frame-Options"), "the host's response rule on the gate's answer")
	assert.Empty(t, res.Outcome.Header.Get("Date"))
}

// A simulated request through a rate limit takes no token, and a
// simulated forward-auth calls nothing: the auth server counts zero
// requests, where a real one through the same store costs one.
func TestRunStatefulPoliciesPeek(t *testing.T) {
	var calls atomic.Int64
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(auth.Close)
	store := publish(t, `
rateLimits: [{id: slow, requests: 1, period: 1h, scope: shared}]
forwardAuths: [{id: sso, url: "`+auth.URL+`/check"}]
hosts:
  - names: [app.test]
    routes:
      - {path: /limited, upstream: api, policies: [slow]}
      - {path: /sso, upstream: api, policies: [sso]}
upstreams: [{id: api, destinations: [{id: one, address: "http://127.0.0.1:9"}]}]
`, snapshot.Compiler{})
	reason := func(path string) string {
		t.Helper()
		res, err := Run(LiveTarget(store), Probe{URL: "http://app.test" + path, Peer: MustPeer("127.0.0.1")})
		require.NoError(t, err)
		for _, s := range res.Trace {
			if s.Kind == "policy" {
				return s.Facts["verdict"] + ": " + s.Facts["reason"]
			}
		}
		return ""
	}
	for range 3 {
		assert.Equal(t, "continue: would allow, 0 tokens left", reason("/limited"))
	}
	real := func(path string) int {
		t.Helper()
		w := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodGet, "http://app.test"+path, nil)
		r.RemoteAddr = "127.0.0.1:1"
		store.ServeHTTP(w, r)
		return w.Code
	}
	assert.Equal(t, http.StatusBadGateway, real("/limited"), "the token was still there: the upstream is what fails")
	assert.Equal(t, http.StatusTooManyRequests, real("/limited"))
	assert.Equal(t, "respond: rate limited", reason("/limited"), "now the bucket is empty, and the simulation says so")

	assert.Equal(t, "defer: would call "+auth.URL+"/check", reason("/sso"))
	assert.Zero(t, calls.Load(), "the auth server saw no request")
	assert.Equal(t, http.StatusUnauthorized, real("/sso"))
	assert.Equal(t, int64(1), calls.Load())

	c := store.Load().Gate().State().Counters()
	assert.Zero(t, c.Dropped.Load()+c.ShadowWouldBlock.Load()+c.HeaderFallback.Load())
}

// The connection stage: PROXY protocol from trusted load balancers, the
// deny list.
func TestRunConnectionStage(t *testing.T) {
	store := publish(t, gatewayDoc, compilerFor(t))
	target := LiveTarget(store)
	target.Listener = Listener{
		ProxyProtocol: proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}},
		Connections:   connlimit.Config{Deny: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}},
	}
	for _, tc := range []struct {
		name   string
		probe  Probe
		kind   Kind
		stage  string
		client string
	}{
		{"header from a trusted balancer", Probe{URL: "http://app.test/api", Peer: MustPeer("10.0.0.5"), ProxyProtocol: MustPeer("203.0.113.9:4000")}, Forwarded, "hand-over", "203.0.113.9"},
		{"over TLS", Probe{URL: "https://app.test/api", Peer: MustPeer("10.0.0.5"), ProxyProtocol: MustPeer("203.0.113.9:4000")}, Forwarded, "hand-over", "203.0.113.9"},
		{"IPv6 source", Probe{URL: "http://app.test/api", Peer: MustPeer("10.0.0.5"), ProxyProtocol: MustPeer("[2001:db8::9]:4000")}, Forwarded, "hand-over", "2001:db8::9"},
		{"untrusted peer", Probe{URL: "http://app.test/api", ProxyProtocol: MustPeer("203.0.113.9:4000")}, ConnectionRefused, "proxyProtocol", ""},
		{"trusted peer without a header", Probe{URL: "http://app.test/api", Peer: MustPeer("10.0.0.5")}, ConnectionRefused, "proxyProtocol", ""},
		{"denied source", Probe{URL: "http://app.test/api", Peer: MustPeer("10.0.0.5"), ProxyProtocol: MustPeer("198.51.100.7:4000")}, ConnectionRefused, "connections", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(target, tc.probe)
			require.NoError(t, err)
			assert.Equal(t, tc.kind, res.Outcome.Kind, res.Describe())
			assert.Equal(t, tc.stage, res.Outcome.Stage, res.Describe())
			if tc.kind == ConnectionRefused {
				assert.NotEmpty(t, res.Outcome.Reason)
			}
			for _, s := range res.Trace {
				if s.Kind == "client" {
					assert.Equal(t, tc.client, s.Facts["client"])
				}
			}
		})
	}
	// The deny list without PROXY protocol, and over HTTP/3.
	target.Listener.ProxyProtocol = proxyproto.Config{}
	for _, v := range []int{1, 3} {
		res, err := Run(target, Probe{URL: "https://h3.test/", HTTPVersion: v, Peer: MustPeer("198.51.100.7")})
		require.NoError(t, err)
		assert.Equal(t, ConnectionRefused, res.Outcome.Kind)
		assert.Equal(t, "connections", res.Outcome.Stage)
		assert.Equal(t, connlimit.ErrDenied.Error(), res.Outcome.Reason)
	}
}

// Cloudflare mode: the client from CF-Connecting-IP and the scheme from
// CF-Visitor, only from a trusted peer.
func TestRunCloudflare(t *testing.T) {
	store := publish(t, `
global: {trustedProxies: [173.245.48.0/20], cloudflare: true}
hosts: [{names: [cf.test], hsts: {maxAge: 1h}, routes: [{path: /, upstream: api}]}]
upstreams: [{id: api, destinations: [{id: one, address: "http://127.0.0.1:9"}]}]
`, snapshot.Compiler{})
	h := http.Header{"Cf-Connecting-Ip": {"203.0.113.50"}, "Cf-Visitor": {`{"scheme":"https"}`}}
	res, err := Run(LiveTarget(store), Probe{URL: "http://cf.test/", Peer: MustPeer("173.245.48.1"), Header: h})
	require.NoError(t, err)
	client := res.Trace[1]
	require.Equal(t, "client", client.Kind)
	assert.Equal(t, map[string]string{"client": "203.0.113.50", "peer": "173.245.48.1:50000", "source": "cf-connecting-ip", "scheme": "https"}, client.Facts)
	assert.Contains(t, client.Summary, "CF-Connecting-IP, trusted from Cloudflare peer 173.245.48.1")
	assert.Equal(t, "max-age=3600", res.Outcome.Header.Get("Strict-Transport-Security"), "the visitor's scheme is https")

	res, err = Run(LiveTarget(store), Probe{URL: "http://cf.test/", Header: h})
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.10", res.Trace[1].Facts["client"], "from anyone else the header is ignored")
}

func TestRunProbeRefused(t *testing.T) {
	store := publish(t, gatewayDoc, compilerFor(t))
	for _, tc := range []struct {
		probe Probe
		codes []string
	}{
		{Probe{}, []string{CodeProbeURLInvalid + " url"}},
		{Probe{URL: "ftp://app.test/"}, []string{CodeProbeURLInvalid + " url"}},
		{Probe{URL: "/relative"}, []string{CodeProbeURLInvalid + " url"}},
		{Probe{URL: "http://app.test/", Method: "GE T"}, []string{CodeProbeMethodInvalid + " method"}},
		{Probe{URL: "http://app.test/", Header: http.Header{"Host": {"x"}}}, []string{CodeProbeHeaderHost + " header[Host]"}},
		{Probe{URL: "http://app.test/", Header: http.Header{"X-A": {"a\nb"}}}, []string{CodeProbeHeaderInvalid + " header[X-A]"}},
		{Probe{URL: "http://app.test/", TLS: &TLS{SNI: "app.test"}}, []string{CodeProbeTLSPlain + " tls"}},
		{Probe{URL: "http://app.test/", HTTPVersion: 2}, []string{CodeProbeHTTPVersionPlain + " httpVersion"}},
		{Probe{URL: "https://app.test/", HTTPVersion: 4}, []string{CodeProbeHTTPVersionInvalid + " httpVersion"}},
		{Probe{URL: "https://app.test/", HTTPVersion: 3, ProxyProtocol: MustPeer("192.0.2.1:1")}, []string{CodeProbeProxyHTTP3 + " proxyProtocol"}},
		{Probe{URL: "https://app.test/", TLS: &TLS{SNI: "a", NoSNI: true, Version: 7}}, []string{CodeProbeTLSSNIConflict + " tls.sni", CodeProbeTLSVersionInvalid + " tls.version"}},
		{Probe{URL: "http://app.test/", Method: "GE T", HTTPVersion: 9}, []string{CodeProbeMethodInvalid + " method", CodeProbeHTTPVersionInvalid + " httpVersion"}},
		{Probe{URL: "http://app.test/", Header: http.Header{"Content-Length": {"-1"}}}, []string{CodeProbeBodyInvalid + " header[Content-Length]"}},
		{Probe{URL: "http://app.test/", Header: http.Header{"Content-Length": {"1099511627777"}}}, []string{CodeProbeBodyInvalid + " header[Content-Length]"}},
		{Probe{URL: "https://app.test/", HTTPVersion: 2, Header: http.Header{"Transfer-Encoding": {"chunked"}}}, []string{CodeProbeBodyInvalid + " header[Transfer-Encoding]"}},
		{Probe{URL: "http://app.test/", Header: http.Header{"Transfer-Encoding": {"gzip"}}}, []string{CodeProbeBodyInvalid + " header[Transfer-Encoding]"}},
		// Headers are bounded by their lines and bytes; at the bounds
		// the probe runs (and net/http or the gate answers 431).
		{Probe{URL: "http://app.test/", Header: http.Header{"X-A": make([]string, MaxProbeHeaderLines), "X-B": {""}}}, []string{CodeProbeHeaderTooLarge + " header"}},
		{Probe{URL: "http://app.test/", Header: http.Header{"X-A": make([]string, MaxProbeHeaderLines)}}, nil},
		{Probe{URL: "http://app.test/", Header: http.Header{"X-A": {strings.Repeat("a", MaxProbeHeaderBytes-len("X-A: \r\n")+1)}}}, []string{CodeProbeHeaderTooLarge + " header"}},
		{Probe{URL: "http://app.test/", Header: http.Header{"X-A": {strings.Repeat("a", MaxProbeHeaderBytes-len("X-A: \r\n"))}}}, nil},
	} {
		_, err := Run(LiveTarget(store), tc.probe)
		assert.Equal(t, tc.codes, problem.CodePaths(err), "%+v", tc.probe)
	}
}

func TestRunTargets(t *testing.T) {
	store := publish(t, gatewayDoc, compilerFor(t))
	probe := Probe{URL: "http://app.test/api"}
	for _, tc := range []struct {
		target Target
		code   string
	}{
		{Target{}, CodeTargetNone},
		{Target{Store: store, Draft: &config.Document{}}, CodeTargetMany},
		{Target{Store: new(snapshot.Store)}, CodeTargetEmpty},
		// The owner's code, under the target's path.
		{Target{Store: store, Listener: Listener{Connections: connlimit.Config{PerAddress: connlimit.MaxPerAddress + 1}}}, "connlimit.perAddress.invalid"},
	} {
		_, err := Run(tc.target, probe)
		var pe *ProbeError
		require.True(t, errors.As(err, &pe), "%v", err)
		assert.Equal(t, tc.code, pe.Code)
	}

	// A draft with problems: every one, as the publish refuses them.
	bad := decode(t, `
hosts:
  - names: [a.test]
    routes: [{path: /, upstream: missing}]
  - names: [a.test]
    kind: fixed
upstreams: [{id: "bad id!"}]
`)
	_, err := Run(DraftTarget(bad), probe)
	var refused *DraftRefused
	require.True(t, errors.As(err, &refused), "%v", err)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: new(snapshot.Store)})
	defer pub.Close()
	o, _ := pub.Apply(t.Context(), bad)
	assert.Equal(t, o.Errors, refused.Errors, "the refusal a publish gives")
	assert.GreaterOrEqual(t, len(refused.Errors), 3)
	var ve *snapshot.ValidationError
	assert.True(t, errors.As(err, &ve))

	// A draft as bytes that decode only in part: the refusal of
	// PublishData, decoding and compile problems together.
	data := []byte(`
hosts:
  - names: [a.test]
    bogus: 1
    routes: [{path: /, upstream: missing}]
    limits: {maxUriBytes: "many"}
upstreams: [{id: "bad id!"}]
`)
	_, err = Run(Target{DraftData: data}, probe)
	require.True(t, errors.As(err, &refused), "%v", err)
	o, err = pub.PublishData(data).Wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, o.Errors, refused.Errors)
	assert.GreaterOrEqual(t, len(refused.Errors), 4)
	_, err = Run(Target{DraftData: []byte("{")}, probe)
	require.True(t, errors.As(err, &refused), "%v", err)
	assert.Equal(t, config.CodeDocumentSyntax, refused.Errors[0].Code)

	// A stored snapshot, and a draft against the live health.
	snap := store.Load()
	res, err := Run(SnapshotTarget(snap), probe)
	require.NoError(t, err)
	assert.Equal(t, "api", res.Outcome.Upstream.ID)
	assert.True(t, res.Outcome.Upstream.Destinations[0].Live)

	draft := decode(t, strings.Replace(gatewayDoc, `{id: two, address: "http://127.0.0.1:10"}`, `{id: two, address: "http://127.0.0.1:11"}`, 1))
	c := compilerFor(t)
	res, err = Run(Target{Draft: draft, Compiler: &c, Live: store}, probe)
	require.NoError(t, err)
	u := res.Outcome.Upstream
	require.Len(t, u.Destinations, 2)
	assert.True(t, u.Destinations[0].Live, "same ID and address: live health")
	assert.True(t, u.Destinations[0].Available)
	assert.False(t, u.Destinations[1].Live, "a new address is a new destination")
	assert.Equal(t, "unknown", u.Destinations[1].Health)
	assert.Equal(t, 1, u.Available)
	assert.Equal(t, snap, store.Load(), "nothing was published")
}

// The ACME step: a challenge the live store holds is answered on plain
// HTTP, for every target (challenges are process state, not config).
func TestRunACME(t *testing.T) {
	challenges := new(gate.ChallengeStore)
	challenges.Set("tok", "tok.key")
	c := compilerFor(t)
	c.Challenges = challenges
	store := publish(t, gatewayDoc, c)
	for _, target := range []Target{LiveTarget(store), {Draft: decode(t, gatewayDoc), Compiler: &c}} {
		res, err := Run(target, Probe{URL: "http://app.test/.well-known/acme-challenge/tok"})
		require.NoError(t, err)
		assert.Equal(t, Answered, res.Outcome.Kind)
		assert.Equal(t, "acme", res.Outcome.Stage)
		assert.Equal(t, 200, res.Outcome.Status)
		assert.Equal(t, "acme", res.Trace[len(res.Trace)-1].Kind)
		assert.Equal(t, "tok", res.Trace[len(res.Trace)-1].Facts["token"])

		res, err = Run(target, Probe{URL: "http://app.test/.well-known/acme-challenge/other"})
		require.NoError(t, err)
		assert.Equal(t, NotFound, res.Outcome.Kind, "an unknown token falls through")
	}
}

// A drop: the outcome names the policy, and nothing is answered.
func TestDecideDrop(t *testing.T) {
	steps := []gate.Step{
		{Kind: gate.StepClient},
		{Kind: gate.StepHost, Match: gate.HostExact},
		{Kind: gate.StepPolicy, Scope: gate.ScopeHost, Name: "tarpit", Verdict: gate.Drop, Reason: "bad client"},
		{Kind: gate.StepDrop, Reason: "bad client"},
	}
	var s sim
	var o Outcome
	s.decide(&o, steps)
	assert.Equal(t, Outcome{Kind: Dropped, Stage: "policy", Reason: "bad client", Policy: "tarpit"}, o)
	assert.Equal(t, Step{Kind: "drop", Summary: "bad client", Facts: map[string]string{"reason": "bad client"}}, gateStep(&steps[3]))
}

// routeMatchDoc routes by header, method, query and path type.
const routeMatchDoc = `
hosts:
  - names: [app.test]
    routes:
      - {id: stable, path: /api, upstream: stable}
      - {id: canary, path: /api, upstream: canary, match: {headers: [{name: X-Canary, value: "1"}]}}
      - {id: item, path: "/api/items/{id}", pathType: template, upstream: stable, match: {methods: [GET]}, rewrite: {template: "/v2/items/{id}"}}
      - {id: health, path: /healthz, pathType: exact, upstream: stable, match: {query: [{name: deep, type: present}]}}
upstreams:
  - {id: stable, destinations: [{id: s, address: "http://127.0.0.1:9"}]}
  - {id: canary, destinations: [{id: c, address: "http://127.0.0.1:10"}]}
`

// TestRunRouteMatch: the outcome names the route, why it won, or on a
// 404 the nearest route and the match it failed; the trace's route step
// says the same, with the path type.
func TestRunRouteMatch(t *testing.T) {
	doc, err := config.Decode([]byte(routeMatchDoc))
	require.NoError(t, err)
	target := DraftTarget(doc)
	for _, tc := range []struct {
		probe                  Probe
		kind                   Kind
		route, upstream, match string
		summary                string
	}{
		{Probe{URL: "http://app.test/api/x", Header: http.Header{"X-Canary": {"1"}}}, Forwarded, "canary", "canary",
			"won over stable by header X-Canary (1 over 0)",
			`route canary (prefix /api) matches the path view "/api/x": won over stable by header X-Canary (1 over 0)`},
		{Probe{URL: "http://app.test/api/x", Header: http.Header{"X-Canary": {"0"}}}, Forwarded, "stable", "stable",
			`no other route matches; canary comes first but header X-Canary does not match exact "1"`, ""},
		{Probe{URL: "http://app.test/api/items/7"}, Forwarded, "item", "stable",
			"won over stable by its template path (before prefix)",
			`route item (template /api/items/{id}) matches the path view "/api/items/7": won over stable by its template path (before prefix)`},
		{Probe{Method: "POST", URL: "http://app.test/api/items/7"}, Forwarded, "stable", "stable",
			"no other route matches; item comes first but method POST is not GET", ""},
		{Probe{URL: "http://app.test/healthz"}, NotFound, "", "",
			"route health: query deep absent",
			`no route matches "/healthz": route health: query deep absent`},
		{Probe{URL: "http://app.test/other"}, NotFound, "", "", "no route's path matches", ""},
	} {
		res, err := Run(target, tc.probe)
		require.NoError(t, err)
		o := &res.Outcome
		assert.Equal(t, tc.kind, o.Kind, tc.probe.URL)
		assert.Equal(t, tc.route, o.Route, tc.probe.URL)
		assert.Equal(t, tc.match, o.Match, tc.probe.URL)
		if tc.upstream != "" && assert.NotNil(t, o.Upstream, tc.probe.URL) {
			assert.Equal(t, tc.upstream, o.Upstream.ID)
		}
		if tc.kind == NotFound {
			assert.Equal(t, "route", o.Stage)
			assert.Equal(t, "no route: "+tc.match, o.Reason)
		}
		for _, st := range res.Trace {
			if st.Kind == "route" && tc.summary != "" {
				assert.Equal(t, tc.summary, st.Summary)
			}
		}
		assert.Contains(t, res.Describe(), "route match: "+tc.match)
	}
}
