package edge_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/proxyproto"
)

// ownSockets binds what an embedder would hand over: two TCP listeners
// and a UDP socket on the HTTPS listener's port.
func ownSockets(t *testing.T) (plain, tlsLn net.Listener, udp net.PacketConn) {
	t.Helper()
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { plain.Close() })
	// The kernel picks the TCP port alone; its UDP side may be another
	// program's, and then another port is tried (as edge's own binding
	// does).
	for try := 0; ; try++ {
		tlsLn, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		udp, err = net.ListenPacket("udp", tlsLn.Addr().String())
		if err == nil {
			break
		}
		tlsLn.Close()
		require.Less(t, try, 15, "no port with both sides free: %v", err)
	}
	t.Cleanup(func() { tlsLn.Close() })
	t.Cleanup(func() { udp.Close() })
	return plain, tlsLn, udp
}

// dialFrom dials addr over TCP from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: patience}
	c, err := d.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(patience)))
	return c
}

// Sockets the embedder bound go through the whole stack, as addresses
// do: every protocol reaches the handler, a PROXY header from a trusted
// balancer names the client, the deny list closes a connection before it
// is read, on TCP and QUIC.
func TestServesTheEmbeddersSockets(t *testing.T) {
	tlsConf, pool := tlsFor(t)
	deny := connlimit.Config{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}
	for _, given := range []string{"addresses", "sockets"} {
		t.Run(given, func(t *testing.T) {
			cfg := edge.Config{Handler: whoAmI, TLS: tlsConf, Connections: deny}
			if given == "sockets" {
				cfg.HTTPListener, cfg.HTTPSListener, cfg.HTTP3Conn = ownSockets(t)
			} else {
				cfg.HTTP, cfg.HTTPS, cfg.HTTP3 = "127.0.0.1:0", "127.0.0.1:0", true
			}
			srv := start(t, cfg)
			if given == "sockets" {
				assert.Equal(t, cfg.HTTPListener.Addr(), srv.Addr(edge.ListenerHTTP))
				assert.Equal(t, cfg.HTTPSListener.Addr(), srv.Addr(edge.ListenerHTTPS))
				assert.Equal(t, cfg.HTTP3Conn.LocalAddr(), srv.Addr(edge.ListenerHTTP3))
			}
			body, err := get(t, &http.Transport{}, "http://"+srv.Addr(edge.ListenerHTTP).String()+"/")
			require.NoError(t, err)
			assert.Equal(t, "HTTP/1.1 tls=false h3=false peer=127.0.0.1", body)
			h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}, ForceAttemptHTTP2: true}
			t.Cleanup(h2.CloseIdleConnections)
			body, err = get(t, h2, "https://"+srv.Addr(edge.ListenerHTTPS).String()+"/")
			require.NoError(t, err)
			assert.Equal(t, "HTTP/2.0 tls=true h3=false peer=127.0.0.1", body)
			h3 := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}
			t.Cleanup(func() { h3.Close() })
			body, err = get(t, h3, "https://"+srv.Addr(edge.ListenerHTTP3).String()+"/")
			require.NoError(t, err)
			assert.Equal(t, "HTTP/3.0 tls=true h3=true peer=127.0.0.1", body)

			// The deny list, on TCP: closed unread, no answer.
			c := dialFrom(t, "127.0.0.2", srv.Addr(edge.ListenerHTTP).String())
			io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
			b, err := io.ReadAll(c)
			assert.Empty(t, b, "a denied source got an answer: %v", err)
			// On QUIC: refused before the handshake.
			udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP("127.0.0.2")})
			require.NoError(t, err)
			qt := &quic.Transport{Conn: udp}
			t.Cleanup(func() { qt.Close(); udp.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			defer cancel()
			_, err = qt.Dial(ctx, srv.Addr(edge.ListenerHTTP3), &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{http3.NextProtoH3}}, nil)
			var te *quic.TransportError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, quic.ConnectionRefused, te.ErrorCode)
			st := srv.Limiter().Stats()
			assert.Equal(t, uint64(1), st.DeniedTCP)
			assert.Positive(t, st.DeniedQUIC)
		})
	}
}

// A PROXY header is read on a listener the embedder bound as on one
// bound from an address.
func TestProxyProtocolOnTheEmbeddersListener(t *testing.T) {
	plain, _, _ := ownSockets(t)
	srv := start(t, edge.Config{Handler: whoAmI, HTTPListener: plain,
		ProxyProtocol: proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
	c := dialFrom(t, "127.0.0.1", srv.Addr(edge.ListenerHTTP).String())
	_, err := io.WriteString(c, "PROXY TCP4 203.0.113.9 127.0.0.1 5000 80\r\nGET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	require.NoError(t, err)
	b, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Contains(t, string(b), "peer=203.0.113.9 via PROXY")
}

// Once Start has returned, the sockets it was given are the Server's:
// Shutdown closes them.
func TestShutdownClosesTheEmbeddersSockets(t *testing.T) {
	tlsConf, _ := tlsFor(t)
	plain, tlsLn, udp := ownSockets(t)
	srv, err := edge.Start(edge.Config{Handler: whoAmI, HTTPListener: plain, HTTPSListener: tlsLn, HTTP3Conn: udp, TLS: tlsConf})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(t, srv.Shutdown(ctx))
	for _, ln := range []net.Listener{plain, tlsLn} {
		_, err := ln.Accept()
		assert.ErrorIs(t, err, net.ErrClosed)
	}
	udp.SetReadDeadline(time.Now().Add(patience)) // a socket left open fails the test, late
	_, _, err = udp.ReadFrom(make([]byte, 1))
	assert.ErrorIs(t, err, net.ErrClosed)
}

// A Start that fails leaves the sockets it was given open, as the
// caller's: it closes only what it bound itself.
func TestFailedStartLeavesTheEmbeddersSocketsOpen(t *testing.T) {
	tlsConf, _ := tlsFor(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	for _, tc := range []struct {
		name string
		cfg  func(edge.Config) edge.Config
	}{
		{"a bind fails", func(c edge.Config) edge.Config {
			c.HTTPSListener, c.HTTPS = nil, busy.Addr().String()
			return c
		}},
		{"the HTTP/3 settings are refused, after both TCP listeners were stacked", func(c edge.Config) edge.Config {
			c.QUIC = &quic.Config{Versions: []quic.Version{0x1234}}
			return c
		}},
		{"the PROXY-protocol settings are refused", func(c edge.Config) edge.Config {
			c.HTTP, c.HTTPListener = "127.0.0.1:0", nil
			c.ProxyProtocol = proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, MaxPending: -1}
			return c
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plain, tlsLn, udp := ownSockets(t)
			before := openFiles(t)
			_, err := edge.Start(tc.cfg(edge.Config{Handler: whoAmI, HTTPListener: plain, HTTPSListener: tlsLn, HTTP3Conn: udp, TLS: tlsConf}))
			require.Error(t, err)
			assert.Equal(t, before, openFiles(t), "what Start bound is closed again")
			for _, ln := range []net.Listener{plain, tlsLn} {
				c, err := net.DialTimeout("tcp", ln.Addr().String(), patience)
				require.NoError(t, err, "the listener still listens")
				c.Close()
			}
			require.NoError(t, udp.SetReadDeadline(time.Now()))
			_, _, err = udp.ReadFrom(make([]byte, 1))
			assert.ErrorIs(t, err, os.ErrDeadlineExceeded, "the UDP socket is still open")
		})
	}
}

func TestSocketRefusals(t *testing.T) {
	tlsConf, _ := tlsFor(t)
	plain, tlsLn, udp := ownSockets(t)
	unix, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	require.NoError(t, err)
	t.Cleanup(func() { unix.Close() })
	for _, tc := range []struct {
		name string
		cfg  edge.Config
		want error
		msg  string
	}{
		{"HTTP twice", edge.Config{Handler: whoAmI, HTTP: "127.0.0.1:0", HTTPListener: plain}, edge.ErrAddressAndSocket, "HTTP and HTTPListener"},
		{"HTTPS twice", edge.Config{Handler: whoAmI, HTTPS: "127.0.0.1:0", HTTPSListener: tlsLn, TLS: tlsConf}, edge.ErrAddressAndSocket, "HTTPS and HTTPSListener"},
		{"HTTPS socket without TLS", edge.Config{Handler: whoAmI, HTTPSListener: tlsLn}, edge.ErrNoTLS, ""},
		{"HTTP/3 socket without TLS", edge.Config{Handler: whoAmI, HTTP3Conn: udp}, edge.ErrNoTLS, ""},
		{"HTTP/3 on a Unix listener's port", edge.Config{Handler: whoAmI, HTTPSListener: unix, TLS: tlsConf, HTTP3: true}, nil, "is not TCP; give HTTP3Conn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := edge.Start(tc.cfg)
			require.Error(t, err)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			}
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
	// HTTP/3 alone, on the embedder's socket, is an edge.
	srv := start(t, edge.Config{Handler: whoAmI, HTTP3Conn: udp, QUICTLS: tlsConf})
	assert.Nil(t, srv.Addr(edge.ListenerHTTPS))
	assert.Equal(t, udp.LocalAddr(), srv.Addr(edge.ListenerHTTP3))
}
