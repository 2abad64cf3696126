package proxy_test

import (
	"bufio"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/proxy"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// listenCounting serves h on loopback and counts its connections.
func listenCounting(t *testing.T, h http.Handler) (string, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cl := &countingListener{Listener: ln}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), &cl.n
}

func transportOf(cl *proxy.Cluster) *proxy.Transport { return cl.Transport.(*proxy.Transport) }

// TestDirectHTTP1CarriesEveryKindOfBody: bodiless and sized requests,
// sized, chunked (with trailers) and bodiless responses, all on one
// upstream connection; a chunked upload with trailers goes to net/http,
// counted as a fallback for its trailers, and its trailers cross both
// ways.
func TestDirectHTTP1CarriesEveryKindOfBody(t *testing.T) {
	up, conns := listenCounting(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/chunked":
			w.Header().Set("Trailer", "X-Sum")
			w.(http.Flusher).Flush()
			io.WriteString(w, "echo:"+string(b))
			w.Header().Set("X-Sum", r.Trailer.Get("X-Req-Sum"))
		case "/empty":
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Content-Length", "0")
			io.WriteString(w, "")
			w.Header().Set("X-Len", "")
		}
	}))
	stats := new(proxy.Stats)
	addr, cl := setup{client: proxy.ClientConfig{HTTP1: proxy.HTTP1Direct}, stats: stats}.start(t, up)
	tr := clientTransport(t)
	send := func(req *http.Request) (*http.Response, string) {
		t.Helper()
		req.URL.Host, req.URL.Scheme, req.Host = addr, "http", "app.test"
		res, err := roundTrip(t, tr, req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}
	for range 3 {
		res, body := send(mustReq("GET", "/"))
		assert.Equal(t, 200, res.StatusCode)
		assert.Empty(t, body)
	}
	res, _ := send(mustReq("GET", "/empty"))
	assert.Equal(t, 204, res.StatusCode)
	res, _ = send(mustReq("HEAD", "/"))
	assert.Equal(t, 200, res.StatusCode)

	sized, err := http.NewRequest("POST", "http://x/chunked", strings.NewReader("sized"))
	require.NoError(t, err)
	_, body := send(sized)
	assert.Equal(t, "echo:sized", body)

	chunked, err := http.NewRequest("POST", "http://x/chunked", io.NopCloser(strings.NewReader(strings.Repeat("c", 40000))))
	require.NoError(t, err)
	chunked.ContentLength = -1
	chunked.Trailer = http.Header{"X-Req-Sum": {"7"}}
	res, body = send(chunked)
	assert.Equal(t, "echo:"+strings.Repeat("c", 40000), body)
	assert.Equal(t, "7", res.Trailer.Get("X-Sum"), "trailers cross both ways")

	assert.Equal(t, fallbacks{proxy.FallbackTrailers: 1}, fallbacksOf(stats))
	assert.Equal(t, uint64(1), proxy.DirectDials(transportOf(cl)))
	assert.Equal(t, int32(2), conns.Load(), "one upstream connection carried every direct exchange, net/http's its own")
}

// fallbacks holds the non-zero fallback counts of a Stats.
type fallbacks map[proxy.HTTP1Fallback]uint64

func fallbacksOf(s *proxy.Stats) fallbacks {
	f := fallbacks{}
	for i := range proxy.HTTP1FallbackNames() {
		if n := s.HTTP1Fallbacks(proxy.HTTP1Fallback(i)); n > 0 {
			f[proxy.HTTP1Fallback(i)] = n
		}
	}
	return f
}

// TestDirectHTTP1FallsBackCounted: a request the direct client leaves to
// net/http (Expect: 100-continue, an upgrade) still gets its answer, and
// is counted by its reason; a transport set to net/http dials nothing of
// its own and counts no fallback.
func TestDirectHTTP1FallsBackCounted(t *testing.T) {
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Write(b)
	}))
	stats := new(proxy.Stats)
	addr, cl := setup{client: proxy.ClientConfig{HTTP1: proxy.HTTP1Direct}, stats: stats}.start(t, up)
	req, err := http.NewRequest("PUT", "http://"+addr+"/", strings.NewReader("payload"))
	require.NoError(t, err)
	req.Host = "app.test"
	req.Header.Set("Expect", "100-continue")
	res, err := roundTrip(t, clientTransport(t), req)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, "payload", string(b))
	assert.Equal(t, fallbacks{proxy.FallbackExpectContinue: 1}, fallbacksOf(stats))
	assert.Zero(t, proxy.DirectDials(transportOf(cl)))

	stats = new(proxy.Stats)
	addr, cl = setup{client: proxy.ClientConfig{HTTP1: proxy.HTTP1Direct}, stats: stats}.start(t, wsUpstream(t, nil))
	conn, _ := dialUpgrade(t, addr)
	conn.Close()
	assert.Equal(t, fallbacks{proxy.FallbackUpgrade: 1}, fallbacksOf(stats), "an upgrade, by its own reason")
	assert.Zero(t, proxy.DirectDials(transportOf(cl)))

	stats = new(proxy.Stats)
	addr, cl = setup{client: proxy.ClientConfig{HTTP1: proxy.HTTP1NetHTTP}, stats: stats}.start(t, up)
	res, _ = do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 200, res.StatusCode)
	assert.Empty(t, fallbacksOf(stats))
	assert.Zero(t, proxy.DirectDials(transportOf(cl)))
}

// TestDirectHTTP1RetriesAClosedIdleConnection: an upstream that closes
// every connection after its answer, without saying so, costs no request
// its answer: a reused connection that fails before any byte of the
// response is replaced.
func TestDirectHTTP1RetriesAClosedIdleConnection(t *testing.T) {
	addr, cl := setup{client: proxy.ClientConfig{HTTP1: proxy.HTTP1Direct}}.start(t, rawUpstream(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
	for i := range 5 {
		res, body := do(t, addr, mustReq("GET", "/"))
		assert.Equal(t, 200, res.StatusCode, i)
		assert.Equal(t, "ok", body, i)
	}
	assert.GreaterOrEqual(t, proxy.DirectDials(transportOf(cl)), uint64(5), "the direct client, one connection per answer")
}

// TestDirectHTTP1SkipsAConnectionClosedWhileIdle: a request with a body,
// which cannot be sent again, never takes a pooled connection the
// upstream has closed meanwhile.
func TestDirectHTTP1SkipsAConnectionClosedWhileIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	closed := make(chan struct{}, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(patience))
			if req, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				io.Copy(io.Discard, req.Body)
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
			c.Close()
			closed <- struct{}{}
		}
	}()
	addr, cl := setup{client: proxy.ClientConfig{HTTP1: proxy.HTTP1Direct}}.start(t, ln.Addr().String())
	for i := range 3 {
		req, err := http.NewRequest("POST", "http://"+addr+"/", strings.NewReader("body"))
		require.NoError(t, err)
		req.Host = "app.test"
		res, err := roundTrip(t, clientTransport(t), req)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, 200, res.StatusCode, i)
		recv(t, closed)
	}
	assert.Equal(t, uint64(3), proxy.DirectDials(transportOf(cl)), "a new connection each time, never the closed one")
}

// TestDirectHTTP1OverTLS: TLS destinations speak HTTP/1.1 on the direct
// client too, one handshake for a run of requests with the SNI of the
// Host; a cluster set to HTTP/2 leaves them to net/http by its
// configuration, not as a fallback.
func TestDirectHTTP1OverTLS(t *testing.T) {
	up, _, sni := tlsUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Proto)
	}), "app.test")
	stats := new(proxy.Stats)
	addr, cl := setup{scheme: "https", client: proxy.ClientConfig{Trust: proxy.TrustAny, HTTP1: proxy.HTTP1Direct}, stats: stats}.start(t, up)
	for range 3 {
		_, body := do(t, addr, mustReq("GET", "/"))
		assert.Equal(t, "HTTP/1.1", body)
	}
	assert.Equal(t, "app.test", recv(t, sni))
	assert.Empty(t, sni, "one handshake")
	assert.Equal(t, uint64(1), proxy.DirectDials(transportOf(cl)))
	assert.Empty(t, fallbacksOf(stats))

	stats = new(proxy.Stats)
	addr, cl = setup{scheme: "https", client: proxy.ClientConfig{Trust: proxy.TrustAny, HTTP1: proxy.HTTP1Direct, Version: proxy.HTTP2}, stats: stats}.start(t, up)
	_, body := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, "HTTP/2.0", body)
	recv(t, sni)
	assert.Zero(t, proxy.DirectDials(transportOf(cl)))
	assert.Empty(t, fallbacksOf(stats))
}

// tlsUpstream serves h over TLS on loopback with a self-signed
// certificate for names, offering h2 and http/1.1. It returns the
// address, the certificate's pin and the server names clients send.
func tlsUpstream(t *testing.T, h http.Handler, names ...string) (string, []byte, <-chan string) {
	t.Helper()
	cert, pin := selfSigned(t, names...)
	sni := make(chan string, 16)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			sni <- h.ServerName
			return nil, nil
		},
	})
	require.NoError(t, err)
	srv := &http.Server{Handler: h, ErrorLog: log.New(io.Discard, "", 0)} // refused handshakes are some tests' point
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), pin, sni
}
