package simulate

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/quic-go/quic-go/http3"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/paduraksa/paduraksa/proxyproto"
)

// parityUpstreams serves one loopback upstream per ID, each answering
// 299 with its ID, and returns their addresses.
func parityUpstreams(t *testing.T, ids ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, id := range ids {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Upstream", id)
			w.Header().Set("X-Route", r.Header.Get("X-Route")) // the route's request rule
			w.WriteHeader(299)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		out[id] = ln.Addr().String()
	}
	return out
}

// parityMirror serves the mirror's upstream u4, which counts the copies
// it receives.
func parityMirror(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n.Add(1)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), &n
}

// genDocument writes a random document: hosts exact and wildcard, of
// every kind, policies in every mode, redirects, limits, TLS policies,
// HSTS, HTTP/3, request IDs, response rules, trusted proxies and
// Cloudflare, and routes of every path type with method, header and
// query matches and orders. Each route names itself to the upstream in
// X-Route, which the upstream echoes.
func genDocument(rng *rand.Rand, ups map[string]string) string {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	modes := func() string { return pick("enforce", "enforce", "shadow", `"off"`) }
	var b strings.Builder
	b.WriteString("global:\n")
	if rng.IntN(2) == 0 {
		b.WriteString("  trustedProxies: [127.0.0.1]\n")
		if rng.IntN(3) == 0 {
			b.WriteString("  cloudflare: true\n")
		}
		if rng.IntN(2) == 0 {
			b.WriteString("  trustForwardedProto: true\n")
		}
	}
	fmt.Fprintf(&b, "  tls: {defaultCertificate: c, unknownSni: %s}\n", pick("default", "refuse"))
	b.WriteString("certificates: [{id: c}]\n")
	fmt.Fprintf(&b, "accessLists:\n  - {id: inside, mode: %s, allow: [%s]}\n", modes(), pick("10.0.0.0/8", "127.0.0.0/8", "203.0.113.0/24"))
	fmt.Fprintf(&b, "ruleSets:\n  - id: waf\n    mode: %s\n    rules:\n      - {pathPrefix: /wp-}\n      - {userAgentContains: badbot}\n      - {pathPrefix: /tea, action: respond, respond: {status: 418, body: \"pot\\n\"}}\n", modes())
	fmt.Fprintf(&b, "rateLimits:\n  - {id: tight, mode: %s, requests: 2, period: 1h, scope: %s}\n", modes(), pick("shared", "route"))
	b.WriteString("hosts:\n")
	names := [][]string{{"app.test", "*.app.test"}, {"h1.test"}, {"h3.test"}, {"old.test"}, {"fixed.test"}, {"127.0.0.1"}}
	for i, ns := range names {
		fmt.Fprintf(&b, "  - names: [%q", ns[0])
		for _, n := range ns[1:] {
			fmt.Fprintf(&b, ", %q", n)
		}
		b.WriteString("]\n")
		kind := "proxy"
		switch ns[0] {
		case "old.test":
			kind = "redirect"
		case "fixed.test":
			kind = "fixed"
		}
		if rng.IntN(2) == 0 {
			b.WriteString("    hsts: {maxAge: 1h, includeSubdomains: true}\n")
		}
		var tlsParts []string
		if rng.IntN(3) == 0 {
			tlsParts = append(tlsParts, "http1Only: true")
		}
		if rng.IntN(3) == 0 {
			tlsParts = append(tlsParts, `minVersion: "1.3"`)
		}
		if rng.IntN(2) == 0 || ns[0] == "h3.test" {
			tlsParts = append(tlsParts, "http3: true")
		}
		if len(tlsParts) > 0 {
			b.WriteString("    tls: {" + strings.Join(tlsParts, ", ") + "}\n")
		}
		if rng.IntN(3) == 0 {
			b.WriteString("    httpsRedirect: {status: 307}\n")
		}
		if rng.IntN(3) == 0 {
			b.WriteString("    limits: {maxUriBytes: 40, maxHeaderCount: 12, maxBodyBytes: 100}\n")
		}
		if rng.IntN(2) == 0 {
			b.WriteString("    policies: [waf]\n")
		}
		b.WriteString("    headers: {response: [{name: X-Host, value: h" + fmt.Sprint(i) + "}]}\n")
		switch kind {
		case "redirect":
			fmt.Fprintf(&b, "    kind: redirect\n    redirect: {to: \"https://app.test\", status: %s}\n", pick("301", "308"))
		case "fixed":
			b.WriteString("    kind: fixed\n    fixed: {status: 503, body: \"later\\n\"}\n")
		default:
			if rng.IntN(2) == 0 {
				b.WriteString("    requestId: " + pick("keep", "generate") + "\n")
			}
			b.WriteString("    routes:\n")
			route := func(id, rest string) {
				fmt.Fprintf(&b, "      - {id: %s, %s, headers: {request: [{name: X-Route, value: %s}]}}\n", id, rest, id)
			}
			// The api route: one upstream, or two backends split by
			// weight, a sticky key or a force rule; mirrored to u4 or
			// not.
			api := "path: /api, upstream: " + pick("u1", "u2")
			if rng.IntN(2) == 0 {
				api = fmt.Sprintf("path: /api, backends: [{upstream: u1, weight: %d}, {upstream: u2, weight: %d}]", rng.IntN(4), 1+rng.IntN(4)) +
					pick("", ", split: {sticky: {cookie: side}, force: [{header: X-User, value: eve, upstream: u2}]}",
						", split: {sticky: {header: X-User}, force: [{cookie: side, value: u1, upstream: u1}]}",
						", split: {sticky: {client: true}, force: [{cookie: side, value: a, upstream: u2}]}")
			}
			route("api", api+pick("", ", mirror: {upstream: u4, maxBodyBytes: 100}", ", mirror: {upstream: u4, percent: 0}"))
			route("admin", "path: /admin, upstream: u2, policies: [inside]")
			route("limited", "path: /limited, upstream: u1, policies: [tight]")
			if rng.IntN(2) == 0 {
				route("root", "path: /, upstream: u3"+pick("", ", order: 1"))
			}
			// Matches: each may be there or not, so that precedence
			// picks among the ones a document has.
			for _, m := range [...]struct{ id, rest string }{
				{"canary", "path: /api, upstream: u3, match: {headers: [{name: X-Canary, value: \"1\"}]}"},
				{"canary-get", "path: /api, upstream: u1, match: {headers: [{name: x-canary, type: " + pick("present", "regex, value: \"[0-9]\"") + "}], methods: [GET]}"},
				{"users", "path: /api/users, pathType: exact, upstream: u2, match: {methods: [" + pick("GET", "POST", "GET, HEAD") + "]}"},
				{"item", "path: \"/api/{id}/items/{**rest}\", pathType: template, upstream: u3"},
				{"numeric", "path: \"/api/[0-9]+\", pathType: regex, upstream: u1" + pick("", ", order: -1")},
				{"debug", "path: /api, upstream: u2, match: {query: [{name: debug, type: " + pick("present", "exact, value: \"1\"") + "}]}"},
				{"beta", "path: /api, upstream: u1, match: {headers: [{name: X-Beta, type: absent}, {name: X-Canary, type: prefix, value: \"1\"}]}"},
			} {
				if rng.IntN(2) == 0 {
					route(m.id, m.rest)
				}
			}
		}
	}
	b.WriteString("upstreams:\n")
	for _, id := range []string{"u1", "u2", "u3", "u4"} {
		fmt.Fprintf(&b, "  - {id: %s, destinations: [{id: d, address: \"http://%s\"}]}\n", id, ups[id])
	}
	return b.String()
}

// genProbe returns a random request for the generated documents.
func genProbe(rng *rand.Rand, proxyFrom bool) Probe {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	host := pick("app.test", "x.app.test", "a.b.app.test", "h1.test", "h3.test", "old.test", "fixed.test", "127.0.0.1", "nobody.test", "APP.test")
	scheme := pick("http", "https")
	path := pick("/", "/api/users?id=1", "/admin", "/limited", "/wp-login.php", "/tea", "/api/"+strings.Repeat("x", 50), "/api/a%2Fb", "/robots.txt", "/nothing",
		"/api/users", "/API/Users;v=2", "/api/7/items/a/b", "/api/7/ITEMS", "/api/42", "/api?debug", "/api?debug=1&debug=2", "/api/x?debug=1")
	p := Probe{Method: pick("GET", "GET", "HEAD", "POST"), URL: scheme + "://" + host + path, Peer: MustPeer("127.0.0.1")}
	p.Header = http.Header{"User-Agent": {pick("parity/1", "badbot/2")}}
	switch rng.IntN(4) {
	case 0:
		p.Header["X-Canary"] = []string{pick("1", "2", "10")}
	case 1:
		p.Header["X-Canary"] = []string{"1", "2"} // two lines: "1, 2"
		if rng.IntN(2) == 0 {
			p.Header["X-Beta"] = []string{"y"}
		}
	}
	switch rng.IntN(5) {
	case 0:
		p.Header["X-Forwarded-For"] = []string{pick("10.1.2.3", "203.0.113.9", "garbage")}
	case 1:
		p.Header["Cf-Connecting-Ip"] = []string{pick("10.1.2.3", "203.0.113.9")}
		p.Header["Cf-Visitor"] = []string{pick(`{"scheme":"https"}`, `{"scheme":"http"}`)}
	case 2:
		p.Header["X-Forwarded-Proto"] = []string{"https"}
	}
	if rng.IntN(4) == 0 {
		p.Header["X-Request-Id"] = []string{"client-id-1"}
	}
	if rng.IntN(2) == 0 {
		p.Header["Cookie"] = []string{"side=" + pick("u1", "a", "b", "c")}
	}
	if rng.IntN(2) == 0 {
		p.Header["X-User"] = []string{pick("ann", "bob", "eve")}
	}
	if rng.IntN(12) == 0 {
		// Over parityLimits' header limit; the smaller one is within
		// listenlimits' default.
		p.Header["X-Big"] = []string{strings.Repeat("b", []int{24 << 10, 40 << 10}[rng.IntN(2)])}
	}
	if p.Method == "POST" && rng.IntN(2) == 0 {
		p.Header["Content-Length"] = []string{pick("50", "500")}
	}
	if scheme == "https" {
		p.HTTPVersion = 1 + rng.IntN(2)
		if rng.IntN(4) == 0 {
			p.TLS = &TLS{SNI: pick("app.test", "h1.test", "nobody.test")}
		}
		if rng.IntN(5) == 0 {
			if p.TLS == nil {
				p.TLS = &TLS{}
			}
			p.TLS.Version = tls.VersionTLS12
		}
	}
	if proxyFrom {
		p.ProxyProtocol = netip.AddrPortFrom(netip.MustParseAddr(pick("10.1.2.3", "203.0.113.9", "198.51.100.1")), 4000)
	}
	return p
}

// realResult is what a real client got from the real edge.
type realResult struct {
	err    error
	status int
	header http.Header
}

// doReal sends p to the edge over a real socket: a connection of its
// own, the PROXY header when p has one, the handshake p describes.
func doReal(t *testing.T, addrs map[string]string, p Probe) realResult {
	t.Helper()
	rq, err := p.check()
	require.NoError(t, err)
	addr := addrs["http"]
	if rq.https {
		addr = addrs["https"]
	}
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil || !p.ProxyProtocol.IsValid() {
			return c, err
		}
		dst := netip.MustParseAddrPort(addr)
		h := proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Protocol: proxyproto.TCP4, Source: p.ProxyProtocol, Destination: dst}
		b, err := h.AppendTo(nil)
		if err == nil {
			_, err = c.Write(b)
		}
		if err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
	tr := &http.Transport{
		DialContext:        dial,
		DisableKeepAlives:  true,
		DisableCompression: true,
		Protocols:          new(http.Protocols),
		TLSClientConfig: &tls.Config{
			ServerName: rq.sni, NextProtos: rq.alpn, InsecureSkipVerify: true,
			MinVersion: tls.VersionTLS10, MaxVersion: rq.tlsMax,
		},
	}
	defer tr.CloseIdleConnections()
	// An HTTP/2 client offers h2 and http/1.1, as the probe does.
	tr.Protocols.SetHTTP1(true)
	tr.Protocols.SetHTTP2(rq.version == 2)
	ctx, cancel := context.WithTimeout(context.Background(), patienceTest)
	defer cancel()
	u := *rq.url
	u.Host = addr
	req, err := http.NewRequestWithContext(ctx, rq.method, u.String(), nil)
	require.NoError(t, err)
	req.Host = rq.host
	req.Header = rq.header.Clone()
	if rq.body > 0 {
		delete(req.Header, "Content-Length")
		req.ContentLength, req.Body = rq.body, io.NopCloser(strings.NewReader(strings.Repeat("x", int(rq.body))))
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return realResult{err: err}
	}
	resp.Body.Close()
	return realResult{status: resp.StatusCode, header: resp.Header}
}

// compareParity checks that the simulation said what the real edge did.
func compareParity(t *testing.T, sim *Result, real realResult) {
	t.Helper()
	o := &sim.Outcome
	switch {
	case o.Kind == ConnectionRefused, o.Kind == TLSRefused, o.Kind == Dropped, o.Kind == ServerRefused && o.Status == 0:
		assert.Error(t, real.err, "the simulation says %s: %s", o.Kind, o.Reason)
		return
	}
	if !assert.NoError(t, real.err) {
		return
	}
	if o.Kind == Forwarded {
		assert.Equal(t, 299, real.status)
		assert.Equal(t, o.Upstream.ID, real.header.Get("X-Upstream"))
		assert.Equal(t, o.Route, real.header.Get("X-Route"), "the route the simulation names is the one that forwarded")
		for _, h := range []string{"Alt-Svc", "Strict-Transport-Security", "X-Host"} {
			assert.Equal(t, o.Header.Get(h), real.header.Get(h), h)
		}
		assert.Equal(t, o.Header.Get("X-Request-Id") != "", real.header.Get("X-Request-Id") != "", "X-Request-Id")
		return
	}
	assert.Equal(t, o.Status, real.status)
	want, got := o.Header.Clone(), real.header.Clone()
	for _, h := range []http.Header{want, got} {
		delete(h, "Date")
		if h.Get("X-Request-Id") != "" && h.Get("X-Request-Id") != "client-id-1" {
			h.Set("X-Request-Id", "generated")
		}
	}
	assert.Equal(t, want, got)
	for _, f := range o.Headers {
		assert.Equal(t, f.Value != "", got.Get(f.Name) != "" || f.Name == "X-Request-Id" && f.Value != "", "%s: %+v", f.Name, f)
	}
}

// parityLimits are the listener limits of the parity tests: a header
// limit below listenlimits' default, so a simulation that ran with the
// defaults instead of the target's limits would differ from the edge.
var parityLimits = listenlimits.Limits{MaxHeaderBytes: 16 << 10}

// For generated documents and requests, the simulation's outcome, status
// and response headers are what a real edge answers over real sockets,
// on TCP and TLS, with and without PROXY protocol and a deny list. Both
// run edge.Start's stack, so a stage missing from it is missing from both
// (edge's own tests and TestRunConnectionStage find that); what this
// finds is a simulation that does not give the edge the target's
// listener settings, or an edge whose stack differs between a socket it
// bound and one it was given.
func TestParityOverSockets(t *testing.T) {
	ups := parityUpstreams(t, "u1", "u2", "u3")
	var copies *atomic.Int64
	ups["u4"], copies = parityMirror(t)
	seeds := 6
	requests := 50
	if testing.Short() {
		seeds, requests = 2, 20
	}
	kinds := map[string]int{}
	routes := map[string]int{}
	mirrored := int64(0)
	defer func() {
		t.Log(kinds, routes, "mirrored:", mirrored)
		if !t.Failed() && !testing.Short() {
			for _, k := range []string{"serverRefused/server", "answered/policy", "answered/limits", "answered/path", "forwarded/hand-over", "misdirected/tls",
				"notFound/host", "notFound/route", "redirected/redirect", "tlsRefused/handshake", "connectionRefused/proxyProtocol", "connectionRefused/connections"} {
				assert.Positive(t, kinds[k], "the generator reached no %s", k)
			}
			assert.GreaterOrEqual(t, len(routes), 8, "requests were forwarded by few of the generated routes")
			for _, k := range []string{"split/weight", "split/sticky", "split/forced"} {
				assert.Positive(t, routes[k], "the generator reached no %s", k)
			}
			assert.Positive(t, mirrored, "the generator sent nothing to a mirror")
		}
	}()
	for seed := range seeds {
		proxyFrom := seed%2 == 1
		t.Run(fmt.Sprintf("seed=%d/proxy=%v", seed, proxyFrom), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 13))
			doc := genDocument(rng, ups)
			store := publish(t, doc, compilerFor(t))
			ec := edge.Config{Handler: store, HTTP: "127.0.0.1:0", HTTPS: "127.0.0.1:0", TLS: store.TLS().TLSConfig(), Limits: parityLimits}
			listener := Listener{Limits: parityLimits}
			if proxyFrom {
				// One of genProbe's PROXY sources is denied.
				ec.ProxyProtocol = proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
				ec.Connections = connlimit.Config{Deny: []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24")}}
				listener.ProxyProtocol, listener.Connections = ec.ProxyProtocol, ec.Connections
			}
			srv, err := edge.Start(ec)
			require.NoError(t, err)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), patienceTest)
				defer cancel()
				srv.Shutdown(ctx)
			})
			addrs := map[string]string{"http": srv.Addr("http").String(), "https": srv.Addr("https").String()}
			target := Target{Store: store, Listener: listener}
			copies.Store(0)
			want := int64(0) // the copies the simulation says are sent
			defer func() {
				deadline := time.Now().Add(patienceTest)
				for copies.Load() != want && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
				assert.Equal(t, want, copies.Load(), "the mirror received the copies the simulation said would be sent")
				mirrored += want
			}()
			for i := range requests {
				p := genProbe(rng, proxyFrom && i%5 != 0)
				sim, err := Run(target, p)
				require.NoError(t, err)
				real := doReal(t, addrs, p)
				kinds[string(sim.Outcome.Kind)+"/"+sim.Outcome.Stage]++
				if sim.Outcome.Kind == Forwarded {
					routes[sim.Outcome.Route]++
					if sp := sim.Outcome.Split; sp != nil {
						routes["split/"+sp.Reason]++
					}
					if m := sim.Outcome.Mirror; m != nil && m.Copied && m.Percent == 100 && real.err == nil {
						want++
					}
				}
				t.Run(fmt.Sprint(i), func(t *testing.T) {
					compareParity(t, sim, real)
					if t.Failed() {
						t.Logf("%s\nreal: %+v\n%s\ndocument:\n%s", probeName(&p), real, sim.Describe(), doc)
					}
				})
			}
		})
	}
}

// A sample over HTTP/3: the simulation's QUIC handshake and request agree
// with quic-go's over a real UDP socket; the last seed's deny list
// refuses every client.
func TestParityHTTP3(t *testing.T) {
	ups := parityUpstreams(t, "u1", "u2", "u3")
	ups["u4"], _ = parityMirror(t)
	seen := map[Kind]int{}
	for seed := range 3 {
		rng := rand.New(rand.NewPCG(uint64(seed), 31))
		doc := genDocument(rng, ups)
		store := publish(t, doc, compilerFor(t))
		ec := edge.Config{Handler: store, HTTPS: "127.0.0.1:0", TLS: store.TLS().TLSConfig(), HTTP3: true, QUICTLS: store.TLS().QUICConfig(), Limits: parityLimits}
		requests := 12
		if seed == 2 {
			ec.Connections = connlimit.Config{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
			requests = 4
		}
		listener := Listener{Connections: ec.Connections, Limits: ec.Limits}
		srv, err := edge.Start(ec)
		require.NoError(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), patienceTest)
			defer cancel()
			srv.Shutdown(ctx)
		})
		addr := srv.Addr("https").String()
		for i := range requests {
			p := genProbe(rng, false)
			p.URL = "https://" + strings.SplitN(p.URL, "://", 2)[1]
			p.HTTPVersion, p.TLS = 3, nil
			if i%4 == 0 {
				p.URL = "https://h3.test/api/x" // a host that serves HTTP/3 in every document
			}
			sim, err := Run(Target{Store: store, Listener: listener}, p)
			require.NoError(t, err)
			seen[sim.Outcome.Kind]++
			rq, err := p.check()
			require.NoError(t, err)
			tr := &http3.Transport{TLSClientConfig: &tls.Config{ServerName: rq.sni, InsecureSkipVerify: true}}
			ctx, cancel := context.WithTimeout(context.Background(), patienceTest)
			u := *rq.url
			u.Host = addr
			req, err := http.NewRequestWithContext(ctx, rq.method, u.String(), nil)
			require.NoError(t, err)
			req.Host, req.Header = rq.host, rq.header.Clone()
			if rq.body > 0 {
				delete(req.Header, "Content-Length")
				req.ContentLength, req.Body = rq.body, io.NopCloser(strings.NewReader(strings.Repeat("x", int(rq.body))))
			}
			var real realResult
			resp, err := tr.RoundTrip(req)
			if err != nil {
				real.err = err
			} else {
				resp.Body.Close()
				real.status, real.header = resp.StatusCode, resp.Header
			}
			cancel()
			tr.Close()
			t.Run(fmt.Sprint(seed, "/", i), func(t *testing.T) {
				compareParity(t, sim, real)
				if t.Failed() {
					t.Logf("%s\nreal: %+v\n%s\ndocument:\n%s", probeName(&p), real, sim.Describe(), doc)
				}
			})
		}
	}
	assert.Positive(t, seen[Forwarded], "some requests went through over HTTP/3")
	assert.Positive(t, seen[TLSRefused], "some names do not serve HTTP/3")
	assert.Equal(t, 4, seen[ConnectionRefused], "the deny list refuses over QUIC")
}
