package proxy_test

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/proxyproto"
)

type headerKey struct{}

// proxyUpstream serves over a proxyproto.Listener (over TLS when cert is
// not nil, the header before the handshake) and answers each request
// with its connection's PROXY header: the command, the source and the
// destination.
func proxyUpstream(t testing.TB, cert *tls.Certificate) string {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pl, err := proxyproto.NewListener(raw, proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	require.NoError(t, err)
	var ln net.Listener = pl
	if cert != nil {
		ln = tls.NewListener(pl, &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"h2", "http/1.1"}})
	}
	srv := &http.Server{
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*tls.Conn); ok {
				c = tc.NetConn()
			}
			return context.WithValue(ctx, headerKey{}, c.(*proxyproto.Conn).Header())
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := r.Context().Value(headerKey{}).(proxyproto.Header)
			io.WriteString(w, h.Command.String()+" "+h.Source.String()+" "+h.Destination.String())
		}),
		ErrorLog:          log.New(io.Discard, "", 0),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return raw.Addr().String()
}

// TestProxyProtocolToUpstream: with the PROXY protocol on, the upstream
// reads the address of the client the gate resolved (here from a trusted
// forwarder's X-Forwarded-For) and the address the client reached, in
// v1 and v2, over plain HTTP/1.1, TLS HTTP/1.1 and HTTP/2; two clients
// of different addresses never share a connection. Probes send LOCAL
// (v1: "PROXY UNKNOWN", which the parser reads as LOCAL).
func TestProxyProtocolToUpstream(t *testing.T) {
	cert, _ := selfSigned(t, "app.test")
	for _, v := range []struct {
		name    string
		scheme  string
		version proxy.HTTPVersion
		cert    *tls.Certificate
		pp      proxy.ProxyProtocol
	}{
		{"plain HTTP/1.1", "http", proxy.HTTP11, nil, proxy.ProxyProtocolV2},
		{"plain HTTP/1.1, v1", "http", proxy.HTTP11, nil, proxy.ProxyProtocolV1},
		{"TLS HTTP/1.1", "https", proxy.HTTP11, &cert, proxy.ProxyProtocolV2},
		{"TLS HTTP/2", "https", proxy.HTTP2, &cert, proxy.ProxyProtocolV2},
		{"TLS HTTP/2, v1", "https", proxy.HTTP2, &cert, proxy.ProxyProtocolV1},
	} {
		t.Run(v.name, func(t *testing.T) {
			up := proxyUpstream(t, v.cert)
			cfg := proxy.ClientConfig{Version: v.version, Trust: proxy.TrustAny, ProxyProtocol: v.pp}
			gw, cl := setup{scheme: v.scheme, client: cfg,
				cfg: gate.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}}.start(t, up)
			tr := cl.Transport.(*proxy.Transport)
			get := func(c *http.Client, xff string) string {
				t.Helper()
				req := mustReq("GET", "http://"+gw+"/")
				req.Host = "app.test"
				if xff != "" {
					req.Header.Set("X-Forwarded-For", xff)
				}
				res, err := c.Do(req)
				require.NoError(t, err)
				defer res.Body.Close()
				b, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				require.Equal(t, 200, res.StatusCode, string(b))
				return string(b)
			}
			a, b := &http.Client{Transport: &http.Transport{}}, &http.Client{Transport: &http.Transport{}}
			defer a.CloseIdleConnections()
			defer b.CloseIdleConnections()
			assert.Equal(t, "PROXY 203.0.113.7:0 "+gw, get(a, "203.0.113.7"))
			assert.Equal(t, "PROXY 198.51.100.9:0 "+gw, get(b, "198.51.100.9"))
			assert.Equal(t, "PROXY 203.0.113.7:0 "+gw, get(a, "203.0.113.7"), "a's connection is never b's")
			// Without a forwarder's header the client is the peer, port
			// and all.
			got := get(a, "")
			ap, err := netip.ParseAddrPort(got[len("PROXY ") : len(got)-len(gw)-1])
			require.NoError(t, err, got)
			assert.Equal(t, "127.0.0.1", ap.Addr().String())
			assert.NotZero(t, ap.Port())

			probe, err := http.NewRequest("GET", v.scheme+"://"+up+"/health", nil)
			require.NoError(t, err)
			res, err := tr.RoundTrip(probe)
			require.NoError(t, err)
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			assert.Equal(t, "LOCAL invalid AddrPort invalid AddrPort", string(body), "a probe sends LOCAL")
		})
	}
}

// BenchmarkForwardProxyProtocol is the cost of the PROXY protocol toward
// the upstream, against the same upstream without it, for one client on
// one keep-alive connection: over the direct HTTP/1.1 client, whose pool
// keeps the client's upstream connection, and over HTTP/2 to TLS, where
// net/http keeps none alive and each request dials and handshakes.
func BenchmarkForwardProxyProtocol(b *testing.B) {
	cert, err := testcert.New("app.test")
	require.NoError(b, err)
	for _, c := range []struct {
		name   string
		scheme string
		cfg    proxy.ClientConfig
		cert   *tls.Certificate
	}{
		{"h1/off", "http", proxy.ClientConfig{}, nil},
		{"h1/v2", "http", proxy.ClientConfig{ProxyProtocol: proxy.ProxyProtocolV2}, nil},
		{"h2tls/off", "https", proxy.ClientConfig{Version: proxy.HTTP2, Trust: proxy.TrustAny}, &cert},
		{"h2tls/v2", "https", proxy.ClientConfig{Version: proxy.HTTP2, Trust: proxy.TrustAny, ProxyProtocol: proxy.ProxyProtocolV2}, &cert},
	} {
		b.Run(c.name, func(b *testing.B) {
			var up string
			if c.cfg.ProxyProtocol == proxy.ProxyProtocolOff {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(b, err)
				var l net.Listener = ln
				if c.cert != nil {
					l = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*c.cert}, NextProtos: []string{"h2", "http/1.1"}})
				}
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), ErrorLog: log.New(io.Discard, "", 0)}
				go srv.Serve(l)
				b.Cleanup(func() { srv.Close() })
				up = ln.Addr().String()
			} else {
				up = proxyUpstream(b, c.cert)
			}
			addr, _ := setup{scheme: c.scheme, client: c.cfg}.start(b, up)
			runClient(b, addr, h1Client(b))
		})
	}
}
