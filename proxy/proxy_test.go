package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// listen serves h on a loopback port and returns its address.
func listen(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// gateway builds a gate with one host "app.test" whose "/" route forwards to
// a cluster of the given destination addresses, serves it on loopback and
// returns its address.
func gateway(t testing.TB, cfg gate.Config, addrs ...string) string {
	t.Helper()
	addr, _ := setup{cfg: cfg}.start(t, addrs...)
	return addr
}

// setup describes a gateway for a test: one host "app.test" with one
// route.
type setup struct {
	cfg      gate.Config
	prefix   string
	pathType gate.PathType     // of the route
	allow    gate.PathAllow    // of the route
	maxBody  int64             // of the route
	policies []gate.PolicyUse  // of the host
	route    proxy.RouteConfig // Cluster is filled in
	site     *proxy.SiteConfig
	client   proxy.ClientConfig
	scheme   string // of the destinations; default http
	idle     time.Duration
	observer upstream.Observer
	affinity *balance.Affinity
	stats    *proxy.Stats
	h2c      bool           // the gateway also serves h2c
	policy   balance.Policy // default FirstAlphabetical
	bare     bool           // serve the route itself, with no gate before it
	limits   proxy.Limits   // of the cluster
}

func (s setup) start(t testing.TB, addrs ...string) (string, *proxy.Cluster) {
	t.Helper()
	var reg upstream.Registry
	cc := upstream.ClusterConfig{ID: "c"}
	scheme := s.scheme
	if scheme == "" {
		scheme = "http"
	}
	for i, a := range addrs {
		cc.Destinations = append(cc.Destinations, upstream.DestinationConfig{ID: string(rune('a' + i)), Scheme: scheme, Host: a})
	}
	reg.Plan([]upstream.ClusterConfig{cc}).Commit()
	if s.policy == nil {
		s.policy = balance.FirstAlphabetical{}
	}
	if s.client.ConnectTimeout == 0 {
		s.client.ConnectTimeout = 2 * time.Second
	}
	cl := &proxy.Cluster{
		Upstream:    reg.Cluster("c"),
		Transport:   proxy.NewTransport(s.client),
		IdleTimeout: s.idle,
		Observer:    s.observer,
		Affinity:    s.affinity,
		Stats:       s.stats,
		Policy:      s.policy,
		Limits:      s.limits,
	}
	rc := s.route
	rc.Cluster = cl
	if s.site != nil {
		site, err := proxy.NewSite(*s.site)
		require.NoError(t, err)
		rc.Site = site
	}
	route, err := proxy.NewRoute(rc)
	require.NoError(t, err)
	prefix := s.prefix
	if prefix == "" {
		prefix = "/"
	}
	cfg := s.cfg
	cfg.Hosts = append(cfg.Hosts, gate.Host{Names: []string{"app.test"}, Policies: s.policies, Routes: []gate.Route{{Prefix: prefix, PathType: s.pathType, Target: route, PathAllow: s.allow, MaxBodyBytes: s.maxBody}}})
	g, err := gate.New(cfg)
	require.NoError(t, err)
	var h http.Handler = g
	if s.bare {
		// A hand-built gateway: what the gate would refuse reaches the
		// forwarder.
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { route.Forward(w, r, new(gate.Request)) })
	}
	if s.h2c {
		return listenH2C(t, h), cl
	}
	return listen(t, h), cl
}

// listenH2C serves h on loopback with HTTP/1.1 and h2c.
func listenH2C(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, Protocols: &p}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// h2cClient speaks h2c with prior knowledge; its idle connections close
// when the test ends.
func h2cClient(t testing.TB) *http.Transport {
	t.Helper()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &p, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// clientTransport is a test's own HTTP/1.1 client: it neither asks for nor
// undoes a content encoding, and its idle connections close when the test
// ends.
func clientTransport(t testing.TB) *http.Transport {
	t.Helper()
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

// patience bounds every wait of a test, so that a regression fails that
// test in seconds rather than hanging the package.
const patience = 10 * time.Second

// roundTrip sends req with rt, within the test's patience; the caller reads
// and closes the body.
func roundTrip(t testing.TB, rt http.RoundTripper, req *http.Request) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(req.Context(), patience)
	t.Cleanup(cancel)
	return rt.RoundTrip(req.WithContext(ctx))
}

// do sends req to the proxy at addr (Host app.test unless set) on a
// transport of its own and returns the response with its body read.
func do(t testing.TB, addr string, req *http.Request) (*http.Response, string) {
	t.Helper()
	req.URL.Host = addr
	req.URL.Scheme = "http"
	if req.Host == "" {
		req.Host = "app.test"
	}
	res, err := roundTrip(t, clientTransport(t), req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

// recv returns the next value from ch, failing the test when none comes
// within its patience.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(patience):
		t.Fatal("nothing arrived")
	}
	var zero T
	return zero
}

// dialConn connects to addr; every read and write on the connection has
// the test's patience as its deadline, and it closes when the test ends.
func dialConn(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, patience)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(patience)))
	t.Cleanup(func() { c.Close() })
	return c
}

// cancelOn cancels when arrived is closed, or after the test's patience.
func cancelOn(arrived <-chan struct{}, cancel context.CancelFunc) {
	select {
	case <-arrived:
	case <-time.After(patience):
	}
	cancel()
}

func TestForwardingHeaders(t *testing.T) {
	got := make(chan http.Header, 1)
	var gotHost string
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHost = r.Host
		got <- r.Header.Clone()
		w.Header().Set("Server", "upstream/1.0")
		w.Header().Set("Connection", "X-Hop")
		w.Header().Set("X-Hop", "secret")
		w.Header().Set("Alt-Svc", `h3=":443"`)
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("Proxy-Authenticate", `Basic realm="upstream"`)
		io.WriteString(w, "ok")
	}))
	addr := gateway(t, gate.Config{}, up)

	req, _ := http.NewRequest("GET", "/p?q=1", nil)
	req.Header.Set("X-Forwarded-For", "203.0.113.9, 10.0.0.1")
	req.Header.Set("X-Real-IP", "203.0.113.9")
	req.Header.Set("Forwarded", "for=203.0.113.9")
	req.Header.Set("X-Forwarded-Prefix", "/evil")
	req.Header.Set("X-Forwarded-Port", "1")
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("CF-Connecting-IP", "203.0.113.9")
	req.Header.Set("Cf-Ray", "x")
	req.Header.Set("True-Client-IP", "203.0.113.9")
	req.Header.Set("Connection", "X-Client-Hop, keep-alive")
	req.Header.Set("X-Client-Hop", "1")
	req.Header.Set("Keep-Alive", "timeout=5")
	req.Header.Set("Proxy-Authorization", "Basic x")
	req.Header.Set("Te", "trailers")
	req.Header.Set("X-Keep", "yes")
	req.Header["User-Agent"] = []string{""} // the client sends none
	req.Host = "App.Test:8080"
	res, body := do(t, addr, req)
	require.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "ok", body)
	assert.Equal(t, "Paduraksa", res.Header.Get("Server"), "the upstream's Server is replaced")
	assert.Empty(t, res.Header.Get("X-Hop"), "fields named in the response's Connection are hop-by-hop")
	assert.Empty(t, res.Header.Get("Alt-Svc"))
	assert.Empty(t, res.Header.Get("Keep-Alive"), "hop-by-hop fields of the response are not forwarded")
	assert.Empty(t, res.Header.Get("Proxy-Authenticate"))

	h := recv(t, got)
	assert.Equal(t, []string{"127.0.0.1"}, h["X-Forwarded-For"], "exactly one address, the resolved client")
	assert.Equal(t, []string{"127.0.0.1"}, h["X-Real-Ip"])
	assert.Equal(t, []string{"http"}, h["X-Forwarded-Proto"], "an untrusted client's proto is overwritten")
	assert.Equal(t, []string{"App.Test:8080"}, h["X-Forwarded-Host"])
	assert.Equal(t, "App.Test:8080", gotHost, "the client's Host by default")
	for _, k := range []string{"Forwarded", "X-Forwarded-Prefix", "X-Forwarded-Port", "Cf-Connecting-Ip", "Cf-Ray", "True-Client-Ip", "X-Client-Hop", "Keep-Alive", "Proxy-Authorization"} {
		assert.Empty(t, h[k], k)
	}
	assert.Equal(t, []string{"trailers"}, h["Te"], "TE: trailers is kept")
	assert.Equal(t, []string{"yes"}, h["X-Keep"])
	assert.Empty(t, h["User-Agent"], "no Go User-Agent is added")
}

func TestForwardedPathIsTheGatesSpelling(t *testing.T) {
	got := make(chan string, 1)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.RequestURI }))
	send := func(addr, target string) int {
		t.Helper()
		conn, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(conn, "GET "+target+" HTTP/1.1\r\nHost: app.test\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	strict, _ := setup{}.start(t, up)
	assert.Equal(t, 400, send(strict, "/a%2Fb/%7Ec?x=%20y"), "%2F needs the route's allowance")
	allowing, _ := setup{allow: gate.AllowEncodedSlash}.start(t, up)
	assert.Equal(t, 200, send(allowing, "/a%2fb;p=%41/%7Ec?x=%20y"))
	select {
	case uri := <-got:
		assert.Equal(t, "/a%2Fb;p=A/~c?x=%20y", uri, "unreserved escapes decoded, hex upper-cased, the rest and the query as sent")
	case <-time.After(10 * time.Second):
		t.Fatal("nothing forwarded")
	}
}

func TestUnreachableIs502AndEmptyClusterIs503(t *testing.T) {
	addr := gateway(t, gate.Config{Server: "Edge"}, refusedAddr(t))
	res, body := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 502, res.StatusCode)
	assert.Equal(t, "Edge", res.Header.Get("Server"), "the proxy's own answers carry the host's headers")
	assert.Contains(t, body, "502")

	empty := gateway(t, gate.Config{})
	res, _ = do(t, empty, mustReq("GET", "/"))
	assert.Equal(t, 503, res.StatusCode)
}

func mustReq(method, target string) *http.Request {
	r, err := http.NewRequest(method, target, nil)
	if err != nil {
		panic(err)
	}
	return r
}

func TestStreamsAreFlushedAsDataArrives(t *testing.T) {
	second := make(chan struct{})
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-second:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "data: two\n\n")
	}))
	addr := gateway(t, gate.Config{}, up)
	req := mustReq("GET", "/events")
	req.URL.Host, req.URL.Scheme, req.Host = addr, "http", "app.test"
	res, err := roundTrip(t, clientTransport(t), req)
	require.NoError(t, err)
	defer res.Body.Close()
	br := bufio.NewReader(res.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "data: one\n", line, "the first event arrives while the upstream still holds the stream")
	close(second)
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Equal(t, "\ndata: two\n\n", string(rest))
}

func TestTrailersPassThrough(t *testing.T) {
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Trailer", "X-Sum")
		io.WriteString(w, "body")
		w.Header().Set("X-Sum", string(body)+"|"+r.Trailer.Get("X-Req-Sum"))
	}))
	addr := gateway(t, gate.Config{}, up)
	req, _ := http.NewRequest("POST", "/", io.NopCloser(strings.NewReader("payload")))
	req.ContentLength = -1
	req.Trailer = http.Header{"X-Req-Sum": {"42"}}
	req.Host = "app.test"
	res, body := do(t, addr, req)
	assert.Equal(t, "body", body)
	assert.Equal(t, "payload|42", res.Trailer.Get("X-Sum"), "request and response trailers both cross")
}

func TestClientAbortReleasesTheUpstream(t *testing.T) {
	upstreamDone := make(chan error, 1)
	arrived := make(chan struct{})
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done() // the proxy cancels the upstream request
		upstreamDone <- r.Context().Err()
	}))
	addr := gateway(t, gate.Config{}, up)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/", nil)
	req.Host = "app.test"
	go cancelOn(arrived, cancel)
	_, err := clientTransport(t).RoundTrip(req)
	require.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, recv(t, upstreamDone), context.Canceled, "the upstream request is released")
}
