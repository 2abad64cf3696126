package proxy_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// recorder is an Observer that keeps every observation.
type recorder struct {
	mu  sync.Mutex
	obs []upstream.Observation
}

func (r *recorder) Observe(o upstream.Observation) {
	r.mu.Lock()
	r.obs = append(r.obs, o)
	r.mu.Unlock()
}

func (r *recorder) outcomes() []upstream.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	var k []upstream.Outcome
	for _, o := range r.obs {
		k = append(k, o.Outcome)
	}
	return k
}

func TestHostHeaderModes(t *testing.T) {
	got := make(chan string, 1)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Host }))
	for _, tc := range []struct {
		name string
		mode proxy.HostHeader
		host string
		want string
	}{
		{"client", proxy.HostClient, "", "app.test"},
		{"destination", proxy.HostDestination, "", up},
		{"custom", proxy.HostCustom, "internal.example:8080", "internal.example:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := setup{route: proxy.RouteConfig{HostHeader: tc.mode, HostName: tc.host}}.start(t, up)
			res, _ := do(t, addr, mustReq("GET", "/"))
			require.Equal(t, 200, res.StatusCode)
			assert.Equal(t, tc.want, recv(t, got))
		})
	}
	_, err := proxy.NewRoute(proxy.RouteConfig{Cluster: &proxy.Cluster{}, HostHeader: proxy.HostCustom, HostName: "bad host"})
	assert.Equal(t, []string{proxy.CodeRouteClusterMissing + " cluster.upstream", proxy.CodeRouteHostNameInvalid + " hostName"}, problemsOf(err))
}

func TestForwardingHeadersOnStripAndCustomRules(t *testing.T) {
	got := make(chan *http.Request, 1)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
		w.Header().Set("X-Upstream", "1")
		w.Header().Set("X-Powered-By", "php")
	}))
	s := setup{
		prefix: "/app",
		route: proxy.RouteConfig{
			Rewrite:         proxy.Rewrite{StripPrefix: "/app"},
			RequestHeaders:  []proxy.HeaderRule{{Name: "x-env", Value: "prod"}, {Name: "X-Remove-Me", Op: proxy.HeaderRemove}, {Name: "X-Multi", Op: proxy.HeaderAdd, Value: "b"}},
			ResponseHeaders: []proxy.HeaderRule{{Name: "X-Powered-By", Op: proxy.HeaderRemove}, {Name: "X-Frame-Options", Value: "DENY"}},
		},
		site: &proxy.SiteConfig{
			RequestHeaders:  []proxy.HeaderRule{{Name: "X-Env", Value: "host"}, {Name: "X-Site", Value: "s"}},
			ResponseHeaders: []proxy.HeaderRule{{Name: "Set-Cookie", Op: proxy.HeaderAdd, Value: "site=1"}},
		},
	}
	addr, _ := s.start(t, up)
	req := mustReq("GET", "/app/x")
	req.Header.Set("X-Forwarded-Prefix", "/evil")
	req.Header.Set("X-Remove-Me", "1")
	req.Header.Set("X-Multi", "a")
	res, _ := do(t, addr, req)
	require.Equal(t, 200, res.StatusCode)
	r := recv(t, got)
	assert.Equal(t, "/x", r.RequestURI)
	assert.Equal(t, []string{"/app"}, r.Header["X-Forwarded-Prefix"], "a stripping route sends its own prefix")
	assert.Equal(t, []string{"prod"}, r.Header["X-Env"], "the route's rule replaces the host's for the same name")
	assert.Equal(t, []string{"s"}, r.Header["X-Site"])
	assert.Empty(t, r.Header["X-Remove-Me"])
	assert.Equal(t, []string{"a", "b"}, r.Header["X-Multi"])
	assert.Equal(t, "1", res.Header.Get("X-Upstream"))
	assert.Empty(t, res.Header.Get("X-Powered-By"))
	assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
	assert.Equal(t, []string{"site=1"}, res.Header["Set-Cookie"])

	// The proxy's own answers carry the response rules too.
	s.route.Rewrite = proxy.Rewrite{}
	s.prefix = ""
	addr, _ = s.start(t, refusedAddr(t))
	res, _ = do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 502, res.StatusCode)
	assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
}

func TestHeaderRulesRefused(t *testing.T) {
	for _, tc := range []struct {
		dir  proxy.Direction
		rule proxy.HeaderRule
		want string
	}{
		{proxy.Request, proxy.HeaderRule{Name: "Host", Value: "x"}, proxy.CodeHeaderNameReserved + " name"},
		{proxy.Request, proxy.HeaderRule{Name: "x-forwarded-for", Value: "x"}, proxy.CodeHeaderNameReserved + " name"},
		{proxy.Request, proxy.HeaderRule{Name: "CF-Connecting-IP", Value: "x"}, proxy.CodeHeaderNameReserved + " name"},
		{proxy.Request, proxy.HeaderRule{Name: "Connection", Value: "x"}, proxy.CodeHeaderNameReserved + " name"},
		{proxy.Response, proxy.HeaderRule{Name: "Strict-Transport-Security", Value: "x"}, proxy.CodeHeaderNameReserved + " name"},
		{proxy.Response, proxy.HeaderRule{Name: "Location", Value: "/x"}, proxy.CodeHeaderNameReserved + " name"},
		{proxy.Response, proxy.HeaderRule{Name: "Set-Cookie", Value: "a=b"}, proxy.CodeHeaderOpInvalid + " op"},
		{proxy.Response, proxy.HeaderRule{Name: "Set-Cookie", Op: proxy.HeaderRemove}, proxy.CodeHeaderOpInvalid + " op"},
		{proxy.Response, proxy.HeaderRule{Name: "X-A", Value: "a\r\nb"}, proxy.CodeHeaderValueInvalid + " value"},
		{proxy.Response, proxy.HeaderRule{Name: "X-A", Value: " a"}, proxy.CodeHeaderValueInvalid + " value"},
		{proxy.Response, proxy.HeaderRule{Name: "X-A", Op: proxy.HeaderRemove, Value: "a"}, proxy.CodeHeaderValueUnexpected + " value"},
		{proxy.Response, proxy.HeaderRule{Name: "X A", Value: "a"}, proxy.CodeHeaderNameInvalid + " name"},
		{proxy.Response, proxy.HeaderRule{Name: "X-A", Op: 9, Value: "a"}, proxy.CodeHeaderOpInvalid + " op"},
	} {
		assert.Equal(t, []string{tc.want}, problemsOf(proxy.CheckHeaderRule(tc.dir, tc.rule)), "%+v", tc.rule)
	}
	assert.NoError(t, proxy.CheckHeaderRule(proxy.Response, proxy.HeaderRule{Name: "Set-Cookie", Op: proxy.HeaderAdd, Value: "a=b"}))

	var many []proxy.HeaderRule
	for i := range proxy.MaxHeaderRules + 1 {
		many = append(many, proxy.HeaderRule{Name: "X-R" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Value: "v"})
	}
	_, err := proxy.NewRoute(proxy.RouteConfig{Cluster: &proxy.Cluster{}, RequestHeaders: many})
	assert.Equal(t, []string{proxy.CodeRouteClusterMissing + " cluster.upstream", proxy.CodeHeadersTooMany + " requestHeaders"}, problemsOf(err))
	_, err = proxy.NewSite(proxy.SiteConfig{ResponseHeaders: []proxy.HeaderRule{{Name: "X-A", Value: "1"}, {Name: "x-a", Value: "2"}, {Name: "X-B", Op: proxy.HeaderRemove, Value: "v"}}})
	assert.Equal(t, []string{proxy.CodeHeaderNameDuplicate + " responseHeaders[1].name", proxy.CodeHeaderValueUnexpected + " responseHeaders[2].value"}, problemsOf(err))
}

func TestCloudflareHeadersRemoved(t *testing.T) {
	got := make(chan http.Header, 1)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header }))
	addr := gateway(t, gate.Config{}, up)
	req := mustReq("GET", "/")
	for _, k := range []string{"CF-Connecting-IP", "Cf-Access-Jwt-Assertion", "cf-ipcity", "CF-Visitor", "True-Client-IP"} {
		req.Header[k] = []string{"forged"}
	}
	do(t, addr, req)
	for k := range recv(t, got) {
		assert.False(t, strings.HasPrefix(strings.ToLower(k), "cf-") || k == "True-Client-Ip", k)
	}

	// Through a trusted Cloudflare peer they are Cloudflare's and stay.
	addr = gateway(t, gate.Config{Cloudflare: true, TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, up)
	req = mustReq("GET", "/")
	req.Header.Set("CF-Connecting-IP", "203.0.113.5")
	req.Header.Set("CF-Ray", "r")
	req.Header.Set("True-Client-IP", "203.0.113.5")
	do(t, addr, req)
	h := recv(t, got)
	assert.Equal(t, []string{"r"}, h["Cf-Ray"])
	assert.Equal(t, []string{"203.0.113.5"}, h["True-Client-Ip"])
	assert.Equal(t, []string{"203.0.113.5"}, h["X-Forwarded-For"], "the client Cloudflare vouched for")
}

func TestRequestID(t *testing.T) {
	got := make(chan string, 4)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Get("X-Request-Id")
		w.Header().Set("X-Request-Id", "upstream")
	}))
	addr, _ := setup{site: &proxy.SiteConfig{RequestID: proxy.RequestIDKeep}}.start(t, up)
	req := mustReq("GET", "/")
	req.Header.Set("X-Request-Id", "client-1")
	res, _ := do(t, addr, req)
	assert.Equal(t, "client-1", recv(t, got))
	assert.Equal(t, "client-1", res.Header.Get("X-Request-Id"), "ours replaces the upstream's")

	res, _ = do(t, addr, mustReq("GET", "/"))
	id := recv(t, got)
	assert.Len(t, id, 32)
	assert.Equal(t, id, res.Header.Get("X-Request-Id"))

	addr, _ = setup{site: &proxy.SiteConfig{RequestID: proxy.RequestIDGenerate}}.start(t, refusedAddr(t))
	req = mustReq("GET", "/")
	req.Header.Set("X-Request-Id", "client-1")
	res, _ = do(t, addr, req)
	assert.Equal(t, 502, res.StatusCode)
	assert.Len(t, res.Header.Get("X-Request-Id"), 32, "the proxy's own answer carries the request ID")
}

func TestUpgradeH2CIsNeverForwarded(t *testing.T) {
	got := make(chan http.Header, 1)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header }))
	addr := gateway(t, gate.Config{}, up)
	conn := dialConn(t, addr)
	_, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: app.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n")
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 200, res.StatusCode)
	h := recv(t, got)
	assert.Empty(t, h["Upgrade"])
	assert.Empty(t, h["Http2-Settings"])
	assert.Empty(t, h["Connection"])
}

// wsUpstream accepts an Upgrade: websocket and echoes lines; it closes
// closed (when not nil) once the tunnel's far end has gone.
func wsUpstream(t *testing.T, closed chan<- struct{}) string {
	t.Helper()
	return listen(t, wsHandler(closed))
}

// wsHandler is wsUpstream's handler.
func wsHandler(closed chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "no upgrade", 400)
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(patience))
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nX-Up: 1\r\n\r\n")
		brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				if closed != nil {
					close(closed)
				}
				return
			}
			brw.WriteString("echo " + line)
			brw.Flush()
		}
	})
}

// dialUpgrade opens a websocket tunnel through the proxy at addr and checks
// that the bytes sent with the upgrade request cross it.
func dialUpgrade(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn := dialConn(t, addr)
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: app.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nfirst\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 101, res.StatusCode)
	assert.Equal(t, "1", res.Header.Get("X-Up"))
	assert.Equal(t, "Paduraksa", res.Header.Get("Server"))
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "echo first\n", line, "bytes the client sent with the upgrade reach the upstream")
	return conn, br
}

// TestUpgradeIdleTimeout: a tunnel quiet for the idle timeout is cut on
// both sides, and one whose ends keep talking outlives it. The talking
// tunnel exchanges a line every twentieth of its timeout (room for a loaded
// machine) for one and a half timeouts, so it fails if traffic does not
// reset the timer; the timer itself is tested under synctest in
// idle_test.go.
func TestUpgradeIdleTimeout(t *testing.T) {
	t.Run("idle tunnel is cut", func(t *testing.T) {
		const idle = 300 * time.Millisecond
		closed := make(chan struct{})
		addr, _ := setup{idle: idle}.start(t, wsUpstream(t, closed))
		_, br := dialUpgrade(t, addr)
		start := time.Now()
		_, err := br.ReadString('\n')
		require.Error(t, err, "the proxy closes the idle tunnel")
		var ne net.Error
		assert.False(t, errors.As(err, &ne) && ne.Timeout(), "cut by the proxy, not by the test's deadline: %v", err)
		assert.GreaterOrEqual(t, time.Since(start), idle/2)
		recv(t, closed)
	})
	t.Run("talking tunnel lives", func(t *testing.T) {
		const idle = 2 * time.Second
		addr, _ := setup{idle: idle}.start(t, wsUpstream(t, nil))
		conn, br := dialUpgrade(t, addr)
		deadline := time.Now().Add(idle * 3 / 2)
		for i := 0; time.Now().Before(deadline); i++ {
			time.Sleep(idle / 20) // the pace of the conversation, not synchronisation
			_, err := io.WriteString(conn, "ping\n")
			require.NoError(t, err)
			line, err := br.ReadString('\n')
			require.NoError(t, err, "exchange %d", i)
			require.Equal(t, "echo ping\n", line)
		}
	})
}

// TestStreamIdleTimeout: a response stream whose gaps stay under the idle
// timeout (a twentieth of it, for a loaded machine) lasts longer than the
// timeout, and one quiet for longer is cut, visibly to the client, and
// counted as a timeout.
func TestStreamIdleTimeout(t *testing.T) {
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		gap, _ := time.ParseDuration(r.URL.Query().Get("gap"))
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		for i := range n {
			if i > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
			}
			io.WriteString(w, "data: x\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	long := new(proxy.Stats)
	addr, _ := setup{idle: 5 * time.Second, stats: long}.start(t, up)
	res, body := do(t, addr, mustReq("GET", "/?gap=100ms&n=60"))
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, strings.Repeat("data: x\n\n", 60), body, "gaps under the idle timeout are kept, past the timeout")
	assert.Zero(t, long.Count(upstream.Timeout))

	stats := new(proxy.Stats)
	obs := new(recorder)
	addr, _ = setup{idle: 300 * time.Millisecond, stats: stats, observer: obs}.start(t, up)
	req := mustReq("GET", "/?gap=1h&n=2")
	req.URL.Host, req.URL.Scheme, req.Host = addr, "http", "app.test"
	res, err := roundTrip(t, clientTransport(t), req)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.Error(t, err, "a stream quiet for longer than the idle timeout is cut, visibly")
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "cut by the proxy, not by the test's deadline")
	assert.Equal(t, "data: x\n\n", string(b))
	assert.Eventually(t, func() bool { return stats.Count(upstream.Timeout) == 1 }, patience, 10*time.Millisecond)
	assert.Equal(t, []upstream.Outcome{upstream.Timeout}, obs.outcomes())
}

// unanswering starts an upstream that holds every request without an
// answer until the request or the test ends.
func unanswering(t *testing.T) string {
	t.Helper()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	return listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
}

func TestResponseHeaderTimeoutIs504(t *testing.T) {
	up := unanswering(t)
	addr, _ := setup{client: proxy.ClientConfig{ResponseHeaderTimeout: 200 * time.Millisecond}}.start(t, up)
	res, body := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 504, res.StatusCode)
	assert.Contains(t, body, "504")
}

// TestConnectTimeout: ConnectTimeout covers the TLS handshake as well as
// the TCP connect (the transport's TLSHandshakeTimeout is set from it). An
// https destination that accepts the connection and never speaks hangs the
// handshake, so the timer under test is that one: the answer is a 504 and
// the failure a timeout, well before the client's patience.
func TestConnectTimeout(t *testing.T) {
	obs := new(recorder)
	addr, _ := setup{scheme: "https", observer: obs, client: proxy.ClientConfig{ConnectTimeout: 200 * time.Millisecond, Trust: proxy.TrustAny}}.start(t, silentListener(t))
	start := time.Now()
	res, _ := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 504, res.StatusCode)
	assert.Equal(t, []upstream.Outcome{upstream.Timeout}, obs.outcomes())
	assert.Less(t, time.Since(start), patience/2)
}

// silentListener returns the address of a listener that accepts
// connections and never reads from or writes to them.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	return ln.Addr().String()
}

func TestErrorClassificationAndPassiveHealth(t *testing.T) {
	obs := new(recorder)
	stats := new(proxy.Stats)
	addr, _ := setup{observer: obs, stats: stats}.start(t, refusedAddr(t))
	res, _ := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 502, res.StatusCode)
	assert.Equal(t, []upstream.Outcome{upstream.ConnectError}, obs.outcomes())
	assert.Equal(t, uint64(1), stats.Count(upstream.ConnectError))

	// Garbage instead of a response header.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(patience))
				bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, "NOT HTTP\r\n\r\n")
			}()
		}
	}()
	obs2 := new(recorder)
	addr, _ = setup{observer: obs2}.start(t, ln.Addr().String())
	res, _ = do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 502, res.StatusCode)
	assert.Equal(t, []upstream.Outcome{upstream.ResponseHeaderError}, obs2.outcomes())
}

func TestClientAbortIsNotBlamed(t *testing.T) {
	arrived := make(chan struct{})
	upDone := make(chan struct{})
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
		close(upDone)
	}))
	obs := new(recorder)
	stats := new(proxy.Stats)
	addr, _ := setup{observer: obs, stats: stats}.start(t, up)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/", nil)
	req.Host = "app.test"
	go cancelOn(arrived, cancel)
	_, err := clientTransport(t).RoundTrip(req)
	require.ErrorIs(t, err, context.Canceled)
	recv(t, upDone)
	assert.Eventually(t, func() bool { return stats.Count(upstream.ClientAbort) == 1 }, patience, 10*time.Millisecond)
	assert.Empty(t, obs.outcomes(), "a client abort is never fed to passive health")
}

// TestRequestDeadlineIsATimeout: a deadline on the request's context (a
// handler in front of the forwarder gave it a time budget) that passes
// while the destination is silent is the destination's timeout, answered
// 504, not a client abort: the client is still there.
func TestRequestDeadlineIsATimeout(t *testing.T) {
	up := unanswering(t)
	obs := new(recorder)
	stats := new(proxy.Stats)
	_, cl := setup{observer: obs, stats: stats}.start(t, up)
	route, err := proxy.NewRoute(proxy.RouteConfig{Cluster: cl})
	require.NoError(t, err)
	addr := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 200*time.Millisecond)
		defer cancel()
		route.Forward(w, r.WithContext(ctx), &gate.Request{Client: netip.MustParseAddr("127.0.0.1"), Scheme: "http"})
	}))
	res, _ := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, http.StatusGatewayTimeout, res.StatusCode)
	assert.Equal(t, []upstream.Outcome{upstream.Timeout}, obs.outcomes())
	assert.Equal(t, uint64(1), stats.Count(upstream.Timeout))
	assert.Zero(t, stats.Count(upstream.ClientAbort))
}

func TestClientDisconnectMidBodyReleasesUpstream(t *testing.T) {
	upErr := make(chan error, 1)
	started := make(chan struct{})
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := make([]byte, 5)
		io.ReadFull(r.Body, buf)
		close(started)
		_, err := io.ReadAll(r.Body)
		upErr <- err
	}))
	addr := gateway(t, gate.Config{}, up)
	conn := dialConn(t, addr)
	_, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 100\r\n\r\nhello")
	require.NoError(t, err)
	recv(t, started)
	conn.Close()
	assert.Error(t, recv(t, upErr), "the upstream sees the body cut, not a hang")
}

func TestEarlyHints(t *testing.T) {
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.Header().Set("Connection", "X-Hop")
		w.Header().Set("X-Hop", "1")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.Header().Del("Connection")
		w.Header().Del("X-Hop")
		io.WriteString(w, "ok")
	}))
	addr := gateway(t, gate.Config{}, up)
	var codes []int
	var hints textproto.MIMEHeader
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		codes = append(codes, code)
		hints = h
		return nil
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+addr+"/", nil)
	req.Host = "app.test"
	res, err := roundTrip(t, clientTransport(t), req)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, []int{103}, codes)
	assert.Equal(t, "</style.css>; rel=preload", hints.Get("Link"))
	assert.Empty(t, hints.Get("X-Hop"), "hop-by-hop fields of a 1xx are stripped too")
	assert.Equal(t, "ok", string(b))
	assert.Empty(t, res.Header.Get("Link"), "the hints' fields do not leak into the final response")
	assert.Equal(t, "Paduraksa", res.Header.Get("Server"))
}

func TestH2CEndToEndWithTrailers(t *testing.T) {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	protos := make(chan string, 1)
	srv := &http.Server{Protocols: &p, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos <- r.Proto
		w.Header().Set("Content-Length", "4")
		w.Header().Set("Trailer", "X-Checksum")
		io.WriteString(w, "body")
		w.Header().Set("X-Checksum", "abc")
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	addr, _ := setup{client: proxy.ClientConfig{Version: proxy.HTTP2, VersionPolicy: proxy.VersionExact}, h2c: true}.start(t, ln.Addr().String())
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{{"client h1", clientTransport(t)}, {"client h2c", h2cClient(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			req := mustReq("GET", "/")
			req.URL.Host, req.URL.Scheme, req.Host = addr, "http", "app.test"
			res, err := roundTrip(t, tc.rt, req)
			require.NoError(t, err)
			b, err := io.ReadAll(res.Body)
			require.NoError(t, err)
			res.Body.Close()
			assert.Equal(t, "body", string(b))
			assert.Equal(t, "abc", res.Trailer.Get("X-Checksum"), "a length from an h2 upstream does not lose the trailers")
			assert.Equal(t, "HTTP/2.0", recv(t, protos))
		})
	}
}

// selfSigned returns a certificate for names and the SHA-256 pin of its key.
func selfSigned(t *testing.T, names ...string) (tls.Certificate, []byte) {
	t.Helper()
	cert, err := testcert.New(names...)
	require.NoError(t, err)
	pin := sha256.Sum256(cert.Leaf.RawSubjectPublicKeyInfo)
	return cert, pin[:]
}

func TestTLSUpstreamSNIAndPins(t *testing.T) {
	protos := make(chan string, 8)
	up, pin, sni := tlsUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		protos <- r.Proto
		io.WriteString(w, r.Host)
	}), "backend.test")

	t.Run("pinned, custom host is the SNI", func(t *testing.T) {
		obs := new(recorder)
		addr, _ := setup{scheme: "https", observer: obs,
			client: proxy.ClientConfig{Trust: proxy.TrustPinned, Pins: string(pin), Version: proxy.HTTP2},
			route:  proxy.RouteConfig{HostHeader: proxy.HostCustom, HostName: "backend.test"}}.start(t, up)
		res, body := do(t, addr, mustReq("GET", "/"))
		require.Equal(t, 200, res.StatusCode)
		assert.Equal(t, "backend.test", body)
		assert.Equal(t, "backend.test", recv(t, sni))
		assert.Equal(t, "HTTP/2.0", recv(t, protos), "HTTP/2 over TLS through ALPN")
	})
	t.Run("client host is the SNI", func(t *testing.T) {
		addr, _ := setup{scheme: "https", client: proxy.ClientConfig{Trust: proxy.TrustAny}}.start(t, up)
		res, _ := do(t, addr, mustReq("GET", "/"))
		require.Equal(t, 200, res.StatusCode)
		assert.Equal(t, "app.test", recv(t, sni))
		assert.Equal(t, "HTTP/1.1", recv(t, protos))
	})
	t.Run("pin mismatch", func(t *testing.T) {
		obs := new(recorder)
		wrong := sha256.Sum256([]byte("other"))
		addr, _ := setup{scheme: "https", observer: obs, client: proxy.ClientConfig{Trust: proxy.TrustPinned, Pins: string(wrong[:])}}.start(t, up)
		res, _ := do(t, addr, mustReq("GET", "/"))
		assert.Equal(t, 502, res.StatusCode)
		assert.Equal(t, []upstream.Outcome{upstream.TLSError}, obs.outcomes())
		recv(t, sni)
	})
	t.Run("a name past MaxServerNames is a TLS error, without a handshake", func(t *testing.T) {
		obs := new(recorder)
		addr, cl := setup{scheme: "https", observer: obs, client: proxy.ClientConfig{Trust: proxy.TrustAny}}.start(t, up)
		tr := cl.Transport.(*proxy.Transport)
		for i := range proxy.MaxServerNames {
			_, ok := tr.ForServerName("n" + strconv.Itoa(i) + ".test")
			require.True(t, ok)
		}
		res, _ := do(t, addr, mustReq("GET", "/"))
		assert.Equal(t, 502, res.StatusCode)
		assert.Equal(t, []upstream.Outcome{upstream.TLSError}, obs.outcomes())
		assert.Empty(t, sni, "no connection was made for app.test")
	})
	t.Run("system trust refuses a self-signed certificate", func(t *testing.T) {
		obs := new(recorder)
		addr, _ := setup{scheme: "https", observer: obs}.start(t, up)
		res, _ := do(t, addr, mustReq("GET", "/"))
		assert.Equal(t, 502, res.StatusCode)
		assert.Equal(t, []upstream.Outcome{upstream.TLSError}, obs.outcomes())
		assert.Equal(t, "app.test", recv(t, sni), "the certificate is checked against the Host's name")
	})
}

// TestAffinity: the policy (FirstAlphabetical) would pick "a" every time,
// so requests carrying the key of "b" reach "b" only if affinity holds.
func TestAffinity(t *testing.T) {
	hits := make(chan string, 8)
	mk := func(name string) string {
		return listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits <- name
			http.SetCookie(w, &http.Cookie{Name: "app", Value: name})
		}))
	}
	a, b := mk("a"), mk("b")
	aff, err := balance.NewAffinity(balance.AffinityConfig{}, balance.NewAffinityKey())
	require.NoError(t, err)
	addr, cl := setup{affinity: aff}.start(t, a, b)
	res, _ := do(t, addr, mustReq("GET", "/"))
	require.Equal(t, "a", recv(t, hits))
	var key *http.Cookie
	for _, c := range res.Cookies() {
		if c.Name == balance.DefaultAffinityKeyName {
			key = c
		}
	}
	require.NotNil(t, key, "the affinity cookie is set")
	assert.Len(t, res.Cookies(), 2, "beside the upstream's own cookie")
	assert.Equal(t, aff.Key(cl.Upstream.Destination("a")), key.Value, "the key leads to the destination that answered")

	toB := &http.Cookie{Name: balance.DefaultAffinityKeyName, Value: aff.Key(cl.Upstream.Destination("b"))}
	for range 4 {
		req := mustReq("GET", "/")
		req.AddCookie(toB)
		res, _ := do(t, addr, req)
		assert.Equal(t, "b", recv(t, hits))
		assert.Len(t, res.Cookies(), 1, "a matched key is not set again")
	}
}

func TestRetries(t *testing.T) {
	t.Run("POST after a refused connection arrives whole", func(t *testing.T) {
		got := make(chan string, 1)
		up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got <- string(b)
		}))
		stats := new(proxy.Stats)
		// FirstAlphabetical tries the dead destination "a" first.
		addr, _ := setup{stats: stats, route: proxy.RouteConfig{Retry: proxy.Retry{Attempts: 1}}}.start(t, refusedAddr(t), up)
		body := strings.Repeat("payload-", 1000)
		req, _ := http.NewRequest("POST", "/", strings.NewReader(body))
		res, _ := do(t, addr, req)
		assert.Equal(t, 200, res.StatusCode)
		assert.Equal(t, body, recv(t, got))
		assert.Equal(t, uint64(1), stats.Retries())
	})
	t.Run("POST failing mid-response is not retried", func(t *testing.T) {
		var calls atomic.Int32
		cut := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			io.ReadAll(r.Body)
			conn, _, _ := http.NewResponseController(w).Hijack()
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
			conn.Close()
		}))
		other := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(100) }))
		addr, _ := setup{route: proxy.RouteConfig{Retry: proxy.Retry{Attempts: 2}}}.start(t, cut, other)
		req, _ := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader("x"))
		req.Host = "app.test"
		res, err := roundTrip(t, clientTransport(t), req)
		if err == nil {
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		assert.Error(t, err, "the truncated body is visible")
		assert.Equal(t, int32(1), calls.Load())
	})
	t.Run("POST whose upstream failed before answering is not retried", func(t *testing.T) {
		var calls atomic.Int32
		reset := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			io.ReadAll(r.Body)
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}))
		other := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(100) }))
		addr, _ := setup{route: proxy.RouteConfig{Retry: proxy.Retry{Attempts: 2}}}.start(t, reset, other)
		req, _ := http.NewRequest("POST", "/", strings.NewReader("x"))
		res, _ := do(t, addr, req)
		assert.Equal(t, 502, res.StatusCode)
		assert.Equal(t, int32(1), calls.Load())
	})
	t.Run("PUT with a replayable body goes to another destination", func(t *testing.T) {
		got := make(chan string, 2)
		reset := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.ReadAll(r.Body)
			conn, _, _ := http.NewResponseController(w).Hijack()
			conn.Close()
		}))
		ok := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			got <- string(b)
		}))
		addr, _ := setup{route: proxy.RouteConfig{Retry: proxy.Retry{Attempts: 1}}}.start(t, reset, ok)
		req, _ := http.NewRequest("PUT", "/", strings.NewReader("replayed"))
		res, _ := do(t, addr, req)
		assert.Equal(t, 200, res.StatusCode)
		assert.Equal(t, "replayed", recv(t, got))
	})
	assert.Equal(t, []string{proxy.CodeRetryAttemptsInvalid + " attempts", proxy.CodeRetryBudgetInvalid + " budget"},
		problemsOf(proxy.CheckRetry(proxy.Retry{Attempts: 9, Budget: 2})))
}

func TestClientAddressIsTheResolvedOne(t *testing.T) {
	got := make(chan http.Header, 1)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header }))
	addr := gateway(t, gate.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, TrustForwardedProto: true}, up)
	req := mustReq("GET", "/")
	req.Header.Set("X-Forwarded-For", "198.51.100.7, 203.0.113.9")
	req.Header.Set("X-Forwarded-Proto", "https")
	do(t, addr, req)
	h := recv(t, got)
	assert.Equal(t, []string{"203.0.113.9"}, h["X-Forwarded-For"], "one address: the rightmost untrusted")
	assert.Equal(t, []string{"203.0.113.9"}, h["X-Real-Ip"])
	assert.Equal(t, []string{"https"}, h["X-Forwarded-Proto"], "the trusted scheme")
}

// TestUpgradePassesAHalfClose: a client that ends its side of a tunnel
// still gets the upstream's answer to what it sent: the end crosses to
// the upstream as a half-close, and the answer comes back.
func TestUpgradePassesAHalfClose(t *testing.T) {
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(patience))
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		got, _ := io.ReadAll(brw) // until the client's half-close
		fmt.Fprintf(brw, "got %q\n", got)
		brw.Flush()
	}))
	addr := gateway(t, gate.Config{}, up)
	conn := dialConn(t, addr)
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: app.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 101, res.StatusCode)
	io.WriteString(conn, "hello")
	require.NoError(t, conn.(*net.TCPConn).CloseWrite())
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "got \"hello\"\n", line)
}
