package gate

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCatchAllHost: over a loopback socket, an exact name beats a
// wildcard, a wildcard beats the catch-all, and every other well-formed
// name reaches the catch-all host; a Host header that names no host at
// all gets the default answer, catch-all or not.
func TestCatchAllHost(t *testing.T) {
	g, err := New(Config{
		Default: Answer{Status: 400, Body: []byte("no such host\n")},
		Hosts: []Host{
			{Names: []string{"app.test"}, Routes: []Route{{ID: "exact", Prefix: "/", Target: echoTarget}}},
			{Names: []string{"*.app.test"}, Routes: []Route{{ID: "wildcard", Prefix: "/", Target: echoTarget}}},
			{Names: []string{" * "}, Routes: []Route{{ID: "catch-all", Prefix: "/", Target: echoTarget}}},
		},
	})
	require.NoError(t, err)
	addr := serve(t, g)
	for host, route := range map[string]string{
		"app.test": "exact", "APP.test.:80": "exact", "a.app.test": "wildcard", "a.b.app.test": "wildcard",
		"other.test": "catch-all", "app.test.example": "catch-all", "192.0.2.1": "catch-all", "[2001:db8::1]:8080": "catch-all",
		"localhost": "catch-all",
	} {
		resp := do(t, addr, call{host: host, target: "/x"})
		assert.Equal(t, 200, resp.StatusCode, host)
		assert.Equal(t, route, resp.Header.Get("X-Route"), host)
	}

	h, m := g.Lookup("nobody.test")
	require.NotNil(t, h)
	assert.Equal(t, HostCatchAll, m)
	assert.Equal(t, []string{CatchAll}, h.Names, "stored in its canonical form")
	assert.Equal(t, "catchAll", m.String())
	for _, bad := range []string{"", "a..test", "a,b.test", "a.test:x"} {
		h, m := g.Lookup(bad)
		assert.Nil(t, h, "%q names no host", bad)
		assert.Equal(t, HostUnknown, m, "%q", bad)
	}

	// net/http's client will not send a malformed Host: write one.
	c, err := net.DialTimeout("tcp", addr, patience)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /x HTTP/1.1\r\nHost: a..test\r\nConnection: close\r\n\r\n")
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, 400, resp.StatusCode, "a name with an empty label gets the default answer")
	assert.Equal(t, "no such host\n", body(t, resp))
}

// TestCatchAllHTTPSRedirect: the catch-all's HTTPS redirect names the
// host the request named; a catch-all redirect host that sends every name
// to a name no other host has leads back to itself, and New says so.
func TestCatchAllHTTPSRedirect(t *testing.T) {
	g, err := New(Config{HTTPSPort: 8443, Hosts: []Host{
		{Names: []string{"*"}, HTTPSRedirect: HTTPSRedirect{Enabled: true}, Routes: []Route{{Prefix: "/", Target: echoTarget}}},
	}})
	require.NoError(t, err)
	resp := do(t, serve(t, g), call{host: "Shop.Test", target: "/a?b=1"})
	assert.Equal(t, 308, resp.StatusCode)
	assert.Equal(t, "https://shop.test:8443/a?b=1", resp.Header.Get("Location"))

	_, err = New(Config{Hosts: []Host{
		{Names: []string{"*"}, Kind: HostRedirect, Redirect: Redirect{To: "https://www.example.com"}},
	}})
	assert.Equal(t, []string{CodeHostRedirectToLoop + " hosts[0].redirect.to"}, codePaths(err))
	_, err = New(Config{Hosts: []Host{
		{Names: []string{"*"}, Kind: HostRedirect, Redirect: Redirect{To: "https://www.example.com"}},
		{Names: []string{"www.example.com"}, Kind: HostFixed},
	}})
	assert.NoError(t, err, "the target has a host of its own")
}

// TestHTTPSPort: over TLS on a loopback socket, an HTTP/3 host advertises
// the gate's HTTPS port in Alt-Svc and its HTTPS redirect names it,
// unless the host sets its own; without one, both say 443.
func TestHTTPSPort(t *testing.T) {
	cert, pool := selfSigned(t, "a.test", "own.test")
	hosts := func() []Host {
		return []Host{
			{Names: []string{"a.test"}, TLS: TLSPolicy{HTTP3: true}, HTTPSRedirect: HTTPSRedirect{Enabled: true},
				Routes: []Route{{Prefix: "/", Target: echoTarget}}},
			{Names: []string{"own.test"}, TLS: TLSPolicy{HTTP3: true, AltSvc: `h3=":9443"; ma=60`}, HTTPSRedirect: HTTPSRedirect{Enabled: true, Port: 9443},
				Routes: []Route{{Prefix: "/", Target: echoTarget}}},
		}
	}
	for _, tt := range []struct {
		port             int
		altSvc, location string
	}{
		{0, `h3=":443"; ma=86400`, "https://a.test/x"},
		{443, `h3=":443"; ma=86400`, "https://a.test/x"},
		{8443, `h3=":8443"; ma=86400`, "https://a.test:8443/x"},
	} {
		g, err := New(Config{HTTPSPort: tt.port, Hosts: hosts()})
		require.NoError(t, err)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		srv := &http.Server{Handler: g, ConnContext: ConnContext, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
		go srv.ServeTLS(ln, "", "")
		t.Cleanup(func() { srv.Close() })
		tlsAddr := ln.Addr().String()
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, tlsAddr)
			}}
		t.Cleanup(tr.CloseIdleConnections)
		client := &http.Client{Transport: tr, Timeout: patience}
		for host, want := range map[string]string{"a.test": tt.altSvc, "own.test": `h3=":9443"; ma=60`} {
			resp, err := client.Get("https://" + host + "/")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, want, resp.Header.Get("Alt-Svc"), "port %d, %s", tt.port, host)
		}
		addr := serve(t, g)
		assert.Equal(t, tt.location, do(t, addr, call{host: "a.test", target: "/x"}).Header.Get("Location"), "port %d", tt.port)
		assert.Equal(t, "https://own.test:9443/x", do(t, addr, call{host: "own.test", target: "/x"}).Header.Get("Location"), "port %d", tt.port)
	}
	assert.Equal(t, DefaultAltSvc, AltSvcFor(0))
	assert.Equal(t, DefaultAltSvc, AltSvcFor(DefaultHTTPSPort))
	assert.True(t, strings.Contains(AltSvcFor(8443), `":8443"`))
}
