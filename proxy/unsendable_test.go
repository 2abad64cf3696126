package proxy_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/rawhttp"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// upstreamPath is one of the forwarder's ways to an upstream.
type upstreamPath struct {
	name   string
	scheme string
	client proxy.ClientConfig
	serve  func(testing.TB, http.Handler) string
	h2     bool // it speaks HTTP/2
}

var upstreamPaths = []upstreamPath{
	{name: "direct HTTP/1.1", client: proxy.ClientConfig{HTTP1: proxy.HTTP1Direct}, serve: listen},
	{name: "net/http HTTP/1.1", client: proxy.ClientConfig{HTTP1: proxy.HTTP1NetHTTP}, serve: listen},
	{name: "h2c", client: proxy.ClientConfig{Version: proxy.HTTP2, VersionPolicy: proxy.VersionExact}, serve: listenH2C, h2: true},
	{name: "HTTP/2 over TLS", scheme: "https", client: proxy.ClientConfig{Version: proxy.HTTP2, VersionPolicy: proxy.VersionExact, Trust: proxy.TrustAny},
		serve: func(t testing.TB, h http.Handler) string {
			addr, _, _ := tlsUpstream(t.(*testing.T), h, "app.test")
			return addr
		}, h2: true},
}

// arrivals counts the requests an upstream received and answers each
// "ok" after reading its body.
type arrivals struct{ n atomic.Int32 }

func (a *arrivals) handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.n.Add(1)
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok")
	})
}

// h2Fields are the fields of an HTTP/2 request as given, pseudo-fields
// first.
func h2Fields(method, authority, path string, extra ...rawhttp.Field) []rawhttp.Field {
	return append([]rawhttp.Field{{Name: ":method", Value: method}, {Name: ":scheme", Value: "http"},
		{Name: ":authority", Value: authority}, {Name: ":path", Value: path}}, extra...)
}

// h2Send sends req frame by frame on a new h2c connection to addr.
func h2Send(t *testing.T, addr string, req rawhttp.Request) rawhttp.Answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c := dialConn(t, addr)
	defer c.Close()
	a, err := rawhttp.H2(ctx, c, req)
	require.NoError(t, err)
	return a
}

// TestClientRefusalsAreNeverTheDestinations: a request the outgoing
// client refuses for what it holds is answered 400 and never observed,
// however often it comes, on every path toward upstreams; the
// destination saw none of them and still serves. The forwarder runs with
// no gate before it, as a hand-built gateway may: net/http's HTTP/2
// server lets each of these through, and the gate refuses most of them
// itself.
func TestClientRefusalsAreNeverTheDestinations(t *testing.T) {
	const rounds = 12 // more than any passive minimum
	for _, p := range upstreamPaths {
		t.Run(p.name, func(t *testing.T) {
			var up arrivals
			obs, stats := new(recorder), new(proxy.Stats)
			addr, _ := setup{bare: true, h2c: true, scheme: p.scheme, client: p.client, observer: obs, stats: stats}.start(t, p.serve(t, up.handler()))
			rows := []struct {
				name string
				req  rawhttp.Request
			}{
				{"method with a space", rawhttp.Request{Fields: h2Fields("GET /x", "app.test", "/")}},
				{"method with a parenthesis", rawhttp.Request{Fields: h2Fields("GE(T", "app.test", "/")}},
				{"method with a tab", rawhttp.Request{Fields: h2Fields("GET\t", "app.test", "/")}},
				{"trailer name that is no token", rawhttp.Request{Fields: h2Fields("POST", "app.test", "/", rawhttp.Field{Name: "trailer", Value: "x(y)"}), Body: []byte("abc")}},
				{"host that is no IDNA name", rawhttp.Request{Fields: h2Fields("GET", "xn--ü.app.test", "/")}},
			}
			if p.h2 {
				// HTTP/1.1 sends an empty Host instead.
				rows = append(rows, struct {
					name string
					req  rawhttp.Request
				}{"host with a space", rawhttp.Request{Fields: h2Fields("GET", "a b.app.test", "/")}})
			}
			for _, row := range rows {
				for range rounds {
					a := h2Send(t, addr, row.req)
					require.Equal(t, http.StatusBadRequest, a.Status, "%s: %+v", row.name, a)
				}
			}
			assert.Zero(t, up.n.Load(), "the upstream saw none of them")
			assert.Empty(t, obs.outcomes(), "none is an observation")
			assert.Equal(t, uint64(rounds*len(rows)), stats.Count(upstream.RequestInvalid))
			assert.Equal(t, http.StatusOK, h2Send(t, addr, rawhttp.Request{Fields: h2Fields("GET", "app.test", "/")}).Status)
			assert.Equal(t, int32(1), up.n.Load())
		})
	}
}

// TestUpgradesAnHTTP2ClusterCannotCarry: HTTP/2 has no Upgrade, so an
// upgrade to an h2c cluster, or one other than websocket to an HTTP/2
// cluster over TLS (net/http sends websocket over HTTP/1.1 there), is
// answered 400 and never observed. A websocket upgrade to that TLS
// cluster still goes through, and an upgrade whose destination fails
// stays the destination's.
func TestUpgradesAnHTTP2ClusterCannotCarry(t *testing.T) {
	const rounds = 12
	ws := "GET /ws HTTP/1.1\r\nHost: app.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
	other := "GET /ws HTTP/1.1\r\nHost: app.test\r\nConnection: Upgrade\r\nUpgrade: foo/1\r\n\r\n"
	for _, tc := range []struct {
		name string
		path upstreamPath
		raw  string
	}{
		{"websocket to h2c", upstreamPaths[2], ws},
		{"other to h2c", upstreamPaths[2], other},
		{"other to HTTP/2 over TLS", upstreamPaths[3], other},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var up arrivals
			obs, stats := new(recorder), new(proxy.Stats)
			addr, _ := setup{scheme: tc.path.scheme, client: tc.path.client, observer: obs, stats: stats}.start(t, tc.path.serve(t, up.handler()))
			for range rounds {
				res, _, _ := exchange(t, addr, tc.raw, false)
				require.Equal(t, http.StatusBadRequest, res.StatusCode)
			}
			assert.Zero(t, up.n.Load(), "the upstream saw none of them")
			assert.Empty(t, obs.outcomes(), "none is an observation")
			assert.Equal(t, uint64(rounds), stats.Count(upstream.RequestInvalid))
			res, _ := do(t, addr, mustReq("GET", "/"))
			assert.Equal(t, http.StatusOK, res.StatusCode)
		})
	}
	t.Run("websocket to HTTP/2 over TLS", func(t *testing.T) {
		obs := new(recorder)
		p := upstreamPaths[3]
		addr, _ := setup{scheme: p.scheme, client: p.client, observer: obs}.start(t, p.serve(t, wsHandler(nil)))
		c := dialConn(t, addr)
		io.WriteString(c, ws+"hello\n")
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		require.Equal(t, http.StatusSwitchingProtocols, res.StatusCode)
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "echo hello\n", line)
	})
	t.Run("a destination that drops an upgrade is blamed", func(t *testing.T) {
		obs := new(recorder)
		addr, _ := setup{observer: obs}.start(t, closingUpstream(t))
		res, _, _ := exchange(t, addr, ws, false)
		assert.Equal(t, http.StatusBadGateway, res.StatusCode)
		assert.Equal(t, []upstream.Outcome{upstream.ResponseHeaderError}, obs.outcomes())
	})
	t.Run("a TLS destination that drops a websocket upgrade is blamed", func(t *testing.T) {
		// net/http speaks HTTP/1.1 for it, which can carry it.
		obs := new(recorder)
		p := upstreamPaths[3]
		addr, _ := setup{scheme: p.scheme, client: p.client, observer: obs}.start(t, closingTLSUpstream(t))
		res, _, _ := exchange(t, addr, ws, false)
		assert.Equal(t, http.StatusBadGateway, res.StatusCode)
		assert.Equal(t, []upstream.Outcome{upstream.ResponseHeaderError}, obs.outcomes())
	})
	t.Run("an h2c destination that refuses the connection is blamed", func(t *testing.T) {
		obs := new(recorder)
		addr, _ := setup{observer: obs, client: upstreamPaths[2].client}.start(t, refusedAddr(t))
		res, _, _ := exchange(t, addr, ws, false)
		assert.Equal(t, http.StatusBadGateway, res.StatusCode)
		assert.Equal(t, []upstream.Outcome{upstream.ConnectError}, obs.outcomes(), "the dial failed before any refusal of the client's")
	})
}

// closingUpstream reads each request head and closes the connection
// without an answer.
func closingUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(patience))
				http.ReadRequest(bufio.NewReader(c))
			}()
		}
	}()
	return ln.Addr().String()
}

// closingTLSUpstream is closingUpstream over TLS, offering h2 and
// http/1.1.
func closingTLSUpstream(t *testing.T) string {
	t.Helper()
	cert, _ := selfSigned(t, "app.test")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(patience))
				http.ReadRequest(bufio.NewReader(c))
			}()
		}
	}()
	return ln.Addr().String()
}

// TestHeaderListOverAnHTTP2UpstreamsLimit: a request whose header list is
// over what an HTTP/2 upstream's SETTINGS take is answered 431, the
// upstream's own answer over HTTP/1.1, and never observed as a failure:
// refused by the client once the SETTINGS are in, and on a new connection
// before they are, when Go's upstream closes the connection with
// COMPRESSION_ERROR for a field longer than its limit. An upstream that
// cannot decode a short field is blamed.
func TestHeaderListOverAnHTTP2UpstreamsLimit(t *testing.T) {
	start := func(t *testing.T, limit int) (*arrivals, string, *recorder, *proxy.Stats) {
		up := new(arrivals)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		var protos http.Protocols
		protos.SetUnencryptedHTTP2(true)
		srv := &http.Server{Handler: up.handler(), Protocols: &protos, MaxHeaderBytes: limit, ReadHeaderTimeout: patience, ErrorLog: log.New(io.Discard, "", 0)}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		obs, stats := new(recorder), new(proxy.Stats)
		addr, _ := setup{observer: obs, stats: stats, client: upstreamPaths[2].client}.start(t, ln.Addr().String())
		return up, addr, obs, stats
	}
	big := func(n int) *http.Request {
		req := mustReq("GET", "/")
		req.Header.Set("X-Big", strings.Repeat("x", n))
		return req
	}
	t.Run("after the SETTINGS", func(t *testing.T) {
		up, addr, obs, stats := start(t, 1<<10)
		res, _ := do(t, addr, mustReq("GET", "/"))
		require.Equal(t, http.StatusOK, res.StatusCode, "the first exchange brings the upstream's SETTINGS")
		for range 12 {
			res, _ := do(t, addr, big(4<<10))
			require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, res.StatusCode)
		}
		assert.Equal(t, int32(1), up.n.Load(), "the upstream saw only the first")
		assert.Equal(t, []upstream.Outcome{upstream.Success}, obs.outcomes())
		assert.Equal(t, uint64(12), stats.Count(upstream.RequestInvalid), "the client refused them")
	})
	// Before the SETTINGS: an upstream that closes the connection with a
	// GOAWAY as Go's server does (COMPRESSION_ERROR for a field longer
	// than its limit), but sends its SETTINGS only once the request's
	// HEADERS are in, so the client never learns the limit first (Go's
	// server sends them at once, and which arrives first is a race).
	goaway := func(t *testing.T) (*atomic.Int32, string, *recorder, *proxy.Stats) {
		var headers atomic.Int32
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					c.SetDeadline(time.Now().Add(patience))
					if _, err := io.ReadFull(c, make([]byte, len(http2.ClientPreface))); err != nil {
						return
					}
					fr := http2.NewFramer(c, c)
					for {
						f, err := fr.ReadFrame()
						if err != nil {
							return
						}
						if hf, ok := f.(*http2.HeadersFrame); ok {
							headers.Add(1)
							fr.WriteSettings(http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 1 << 10})
							fr.WriteGoAway(hf.StreamID, http2.ErrCodeCompression, nil) // as Go's server: the stream it failed on
							// A close with unread bytes would reset the
							// connection before the client reads the
							// GOAWAY: half-close, and read until it closes.
							c.(*net.TCPConn).CloseWrite()
							io.Copy(io.Discard, c)
							return
						}
					}
				}()
			}
		}()
		obs, stats := new(recorder), new(proxy.Stats)
		addr, _ := setup{observer: obs, stats: stats, client: upstreamPaths[2].client}.start(t, ln.Addr().String())
		return &headers, addr, obs, stats
	}
	t.Run("before the SETTINGS", func(t *testing.T) {
		headers, addr, obs, stats := goaway(t)
		for range 2 {
			res, _ := do(t, addr, big(4<<10))
			require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, res.StatusCode)
		}
		assert.Equal(t, int32(2), headers.Load(), "each request reached the upstream, which refused it")
		assert.Empty(t, obs.outcomes())
		assert.Equal(t, uint64(2), stats.Count(upstream.RequestInvalid))
	})
	t.Run("a short field the upstream cannot decode", func(t *testing.T) {
		headers, addr, obs, _ := goaway(t)
		res, _ := do(t, addr, big(600))
		assert.Equal(t, http.StatusBadGateway, res.StatusCode)
		assert.Equal(t, int32(1), headers.Load())
		assert.Equal(t, []upstream.Outcome{upstream.ResponseHeaderError}, obs.outcomes())
	})
}

// TestUnderscoreHeadersDroppedByDefault: a name with an underscore that
// the gateway does not own (X_Custom) is dropped on a host that does not
// keep them, so a CGI-style upstream never reads it as X-Custom.
func TestUnderscoreHeadersDroppedByDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		site *proxy.SiteConfig
	}{{"no site", nil}, {"a site that does not keep them", &proxy.SiteConfig{}}} {
		t.Run(tc.name, func(t *testing.T) {
			up, got := recordingUpstream(t)
			addr, _ := setup{site: tc.site}.start(t, up)
			res, _, _ := exchange(t, addr, "GET / HTTP/1.1\r\nHost: app.test\r\nX_Custom: 1\r\nx_lower: 1\r\nX-Custom-Ok: 1\r\n\r\n", false)
			require.Equal(t, http.StatusOK, res.StatusCode)
			s := receive(t, got)
			for k := range s.header {
				assert.NotContains(t, k, "_", "no underscore name reaches the upstream")
			}
			assert.Equal(t, []string{"1"}, s.header["X-Custom-Ok"], "its neighbour passes")
		})
	}
}

// TestBodilessPOSTIsNeverRetried: a POST without a body reached the
// upstream once its head was written, so it is never sent again, on
// either HTTP/1.1 client: not when the upstream closes a reused
// connection after reading it (the clients' own retry of a stale
// keep-alive), nor to another destination on a route that retries.
func TestBodilessPOSTIsNeverRetried(t *testing.T) {
	for _, c := range []proxy.HTTP1Client{proxy.HTTP1Direct, proxy.HTTP1NetHTTP} {
		t.Run(c.String(), func(t *testing.T) {
			a, b := postDropper(t), postDropper(t)
			obs := new(recorder)
			addr, _ := setup{client: proxy.ClientConfig{HTTP1: c}, observer: obs,
				route: proxy.RouteConfig{Retry: proxy.Retry{Attempts: 2}}}.start(t, a.addr, b.addr)
			conn := dialConn(t, addr)
			br := bufio.NewReader(conn)
			send := func(raw string) int {
				t.Helper()
				_, err := io.WriteString(conn, raw)
				require.NoError(t, err)
				res, err := http.ReadResponse(br, nil)
				require.NoError(t, err)
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				return res.StatusCode
			}
			// A GET leaves a's connection idle in the pool; the POST
			// takes it, and a closes it once it has read the POST.
			require.Equal(t, http.StatusOK, send("GET / HTTP/1.1\r\nHost: app.test\r\n\r\n"))
			assert.Equal(t, http.StatusBadGateway, send("POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 0\r\n\r\n"))
			assert.Equal(t, int32(1), a.posts.Load()+b.posts.Load(), "the POST reached an upstream exactly once")
			assert.Equal(t, int32(1), a.conns.Load(), "on the reused connection")
			assert.Equal(t, []upstream.Outcome{upstream.Success, upstream.ResponseHeaderError}, obs.outcomes())
		})
	}
}

// dropper answers GET with 200 on a keep-alive connection, and reads a
// POST and closes the connection without an answer.
type dropper struct {
	addr         string
	conns, posts atomic.Int32
}

func postDropper(t *testing.T) *dropper {
	t.Helper()
	d := &dropper{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	d.addr = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.conns.Add(1)
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(patience))
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if req.Method == http.MethodPost {
						d.posts.Add(1)
						return
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			}()
		}
	}()
	return d
}
