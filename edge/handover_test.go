package edge_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/edge"
)

// tunnel is a handler that upgrades the connection and echoes each line
// back until the client sends "bye".
var tunnel = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	brw.Flush()
	for {
		line, err := brw.ReadString('\n')
		if err != nil || line == "bye\n" {
			return
		}
		brw.WriteString(line)
		brw.Flush()
	}
})

// openTunnel upgrades a connection to addr and returns it, past the 101.
func openTunnel(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, patience)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(patience)))
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 101, res.StatusCode)
	return c, br
}

func echo(t *testing.T, c net.Conn, br *bufio.Reader, s string) {
	t.Helper()
	_, err := io.WriteString(c, s+"\n")
	require.NoError(t, err)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, s+"\n", line)
}

// Shutdown waits for an upgrade in flight, which net/http's own
// Shutdown forgets once the connection is hijacked: the tunnel keeps
// working while the listener is closed, and Shutdown returns when it
// ends.
func TestShutdownWaitsForUpgrades(t *testing.T) {
	srv, err := edge.Start(edge.Config{Handler: tunnel, HTTP: "127.0.0.1:0"})
	require.NoError(t, err)
	addr := srv.Addr(edge.ListenerHTTP).String()
	c, br := openTunnel(t, addr)
	echo(t, c, br, "before")
	assert.Equal(t, int64(1), srv.InFlight())

	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v while an upgrade was in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	echo(t, c, br, "during")
	io.WriteString(c, "bye\n")
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("Shutdown did not return once the upgrade ended")
	}
	assert.Equal(t, int64(0), srv.InFlight())
}

// Shutdown gives up on an upgrade when its context ends, and says so.
func TestShutdownReportsUpgradesLeftOpen(t *testing.T) {
	srv, err := edge.Start(edge.Config{Handler: tunnel, HTTP: "127.0.0.1:0"})
	require.NoError(t, err)
	c, br := openTunnel(t, srv.Addr(edge.ListenerHTTP).String())
	echo(t, c, br, "x")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = srv.Shutdown(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "edge: 1 requests still in flight")
	io.WriteString(c, "bye\n")
}

// CloseHTTP3 closes the QUIC side of a hand-over at once, socket and
// all, while TCP goes on serving.
func TestCloseHTTP3KeepsTCP(t *testing.T) {
	tlsConf, pool := tlsFor(t)
	cfg := edge.Config{Handler: whoAmI, TLS: tlsConf}
	cfg.HTTPListener, cfg.HTTPSListener, cfg.HTTP3Conn = ownSockets(t)
	srv := start(t, cfg)
	udpAddr := srv.Addr(edge.ListenerHTTP3).String()
	h3 := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"},
		QUICConfig: &quic.Config{HandshakeIdleTimeout: 300 * time.Millisecond}}
	t.Cleanup(func() { h3.Close() })
	body, err := get(t, h3, "https://"+udpAddr+"/")
	require.NoError(t, err)
	assert.Equal(t, "HTTP/3.0 tls=true h3=true peer=127.0.0.1", body)

	srv.CloseHTTP3()
	srv.CloseHTTP3() // twice does nothing more

	// The socket is closed: the port binds again (the new process of a
	// hand-over holds a duplicate, which would keep it bound).
	again, err := net.ListenPacket("udp", udpAddr)
	require.NoError(t, err, "the UDP socket is still open")
	again.Close()
	_, err = get(t, h3, "https://"+udpAddr+"/")
	assert.Error(t, err, "HTTP/3 answered after CloseHTTP3")

	h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}, ForceAttemptHTTP2: true}
	t.Cleanup(h2.CloseIdleConnections)
	body, err = get(t, h2, "https://"+srv.Addr(edge.ListenerHTTPS).String()+"/")
	require.NoError(t, err)
	assert.Equal(t, "HTTP/2.0 tls=true h3=false peer=127.0.0.1", body)
	body, err = get(t, &http.Transport{}, "http://"+srv.Addr(edge.ListenerHTTP).String()+"/")
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 tls=false h3=false peer=127.0.0.1", body)
}

// A hand-over between two Servers in one process: the second serves
// duplicates of the first's sockets (what a binary upgrade passes), the
// first closes its HTTP/3 side and shuts down, and the second answers on
// every protocol at the same addresses.
func TestHandOverToDuplicates(t *testing.T) {
	tlsConf, pool := tlsFor(t)
	old := edge.Config{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "old") }), TLS: tlsConf}
	old.HTTPListener, old.HTTPSListener, old.HTTP3Conn = ownSockets(t)
	oldSrv, err := edge.Start(old)
	require.NoError(t, err)

	dupL := func(ln net.Listener) net.Listener {
		f, err := ln.(*net.TCPListener).File()
		require.NoError(t, err)
		defer f.Close()
		d, err := net.FileListener(f)
		require.NoError(t, err)
		return d
	}
	f, err := old.HTTP3Conn.(*net.UDPConn).File()
	require.NoError(t, err)
	dupU, err := net.FilePacketConn(f)
	f.Close()
	require.NoError(t, err)
	cfg := edge.Config{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "new") }), TLS: tlsConf,
		HTTPListener: dupL(old.HTTPListener), HTTPSListener: dupL(old.HTTPSListener), HTTP3Conn: dupU}
	newSrv := start(t, cfg)

	oldSrv.CloseHTTP3()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(t, oldSrv.Shutdown(ctx))

	body, err := get(t, &http.Transport{}, "http://"+newSrv.Addr(edge.ListenerHTTP).String()+"/")
	require.NoError(t, err)
	assert.Equal(t, "new", body)
	h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}, ForceAttemptHTTP2: true}
	t.Cleanup(h2.CloseIdleConnections)
	body, err = get(t, h2, "https://"+newSrv.Addr(edge.ListenerHTTPS).String()+"/")
	require.NoError(t, err)
	assert.Equal(t, "new", body)
	h3 := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}
	t.Cleanup(func() { h3.Close() })
	body, err = get(t, h3, "https://"+newSrv.Addr(edge.ListenerHTTP3).String()+"/")
	require.NoError(t, err)
	assert.Equal(t, "new", body)
}
