package edge_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/paduraksa/paduraksa/proxyproto"
	"github.com/paduraksa/paduraksa/tlsselect"
)

const patience = 10 * time.Second

// tlsFor returns a server config picking one certificate for every SNI,
// with its own NextProtos as a per-SNI table would, and a client pool.
func tlsFor(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	cert, err := testcert.New("localhost", "127.0.0.1")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	host := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12}
	return &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return host, nil }}, pool
}

// whoAmI answers with the protocol, the ConnInfo the gate would see and
// the peer.
var whoAmI = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	ci := gate.ConnInfoFrom(r.Context())
	peer, h3, pp := netip.AddrPort{}, false, false
	if ci != nil {
		peer, h3, pp = ci.Peer, ci.HTTP3, ci.ProxyProtocol
	}
	fmt.Fprintf(w, "%s tls=%v h3=%v peer=%s", r.Proto, r.TLS != nil || h3, h3, peer.Addr())
	if pp {
		io.WriteString(w, " via PROXY")
	}
})

func start(t *testing.T, cfg edge.Config) *edge.Server {
	t.Helper()
	srv, err := edge.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		assert.NoError(t, srv.Shutdown(ctx))
	})
	return srv
}

func get(t *testing.T, rt http.RoundTripper, url string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	res, err := rt.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return string(b), err
}

func TestEveryProtocolReachesTheHandler(t *testing.T) {
	tlsConf, pool := tlsFor(t)
	srv := start(t, edge.Config{Handler: whoAmI, HTTP: "127.0.0.1:0", HTTPS: "127.0.0.1:0", TLS: tlsConf, HTTP3: true})
	https := srv.Addr("https").String()
	require.Equal(t, https, srv.Addr("http3").String(), "HTTP/3 on the HTTPS port")

	h1 := &http.Transport{}
	t.Cleanup(h1.CloseIdleConnections)
	body, err := get(t, h1, "http://"+srv.Addr("http").String()+"/")
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 tls=false h3=false peer=127.0.0.1", body)

	for _, tc := range []struct {
		name string
		h2   bool
		want string
	}{
		{"h1 over TLS", false, "HTTP/1.1 tls=true h3=false peer=127.0.0.1"},
		{"h2 over TLS", true, "HTTP/2.0 tls=true h3=false peer=127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}, ForceAttemptHTTP2: tc.h2}
			if !tc.h2 {
				tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
			}
			t.Cleanup(tr.CloseIdleConnections)
			body, err := get(t, tr, "https://"+https+"/")
			require.NoError(t, err)
			assert.Equal(t, tc.want, body)
		})
	}
	t.Run("h3", func(t *testing.T) {
		tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}
		t.Cleanup(func() { tr.Close() })
		body, err := get(t, tr, "https://"+https+"/")
		require.NoError(t, err)
		assert.Equal(t, "HTTP/3.0 tls=true h3=true peer=127.0.0.1", body)
	})
}

func TestQUICConnectionStage(t *testing.T) {
	tlsConf, pool := tlsFor(t)
	t.Run("a denied source is refused before the handshake", func(t *testing.T) {
		srv := start(t, edge.Config{Handler: whoAmI, HTTPS: "127.0.0.1:0", TLS: tlsConf, HTTP3: true,
			Connections: connlimit.Config{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
		tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}
		t.Cleanup(func() { tr.Close() })
		_, err := get(t, tr, "https://"+srv.Addr("https").String()+"/")
		var te *quic.TransportError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, quic.ConnectionRefused, te.ErrorCode)
		assert.Positive(t, srv.Limiter().Stats().DeniedQUIC)
	})
	t.Run("an established connection holds a place until it closes", func(t *testing.T) {
		srv := start(t, edge.Config{Handler: whoAmI, HTTPS: "127.0.0.1:0", TLS: tlsConf, HTTP3: true,
			Connections: connlimit.Config{PerAddress: 1}})
		tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}
		_, err := get(t, tr, "https://"+srv.Addr("https").String()+"/")
		require.NoError(t, err)
		// Counted once its handshake completed, which the first request
		// may beat.
		require.Eventually(t, func() bool { return srv.Limiter().Stats().Counted == 1 }, patience, 5*time.Millisecond)

		second := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}}
		t.Cleanup(func() { second.Close() })
		_, err = get(t, second, "https://"+srv.Addr("https").String()+"/")
		require.Error(t, err, "one place per address: the second connection is refused")

		require.NoError(t, tr.Close())
		require.Eventually(t, func() bool { return srv.Limiter().Stats().Counted == 0 }, patience, 5*time.Millisecond, "the place is given back")
	})
}

func TestProxyProtocolOnTCP(t *testing.T) {
	srv := start(t, edge.Config{Handler: whoAmI, HTTP: "127.0.0.1:0",
		ProxyProtocol: proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}})
	c, err := net.Dial("tcp", srv.Addr("http").String())
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(patience)))
	_, err = io.WriteString(c, "PROXY TCP4 203.0.113.9 127.0.0.1 5000 80\r\nGET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	require.NoError(t, err)
	b, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Contains(t, string(b), "peer=203.0.113.9 via PROXY", "the PROXY source is the peer the gate sees, through the listener wrappers")
}

func TestShutdownDrains(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		io.WriteString(w, "finished")
	})
	srv, err := edge.Start(edge.Config{Handler: slow, HTTP: "127.0.0.1:0"})
	require.NoError(t, err)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	got := make(chan string, 1)
	go func() {
		body, err := get(t, tr, "http://"+srv.Addr("http").String()+"/")
		if err != nil {
			body = err.Error()
		}
		got <- body
	}()
	<-arrived
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		defer cancel()
		done <- srv.Shutdown(ctx)
	}()
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v while a request was in flight", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case body := <-got:
		assert.Equal(t, "finished", body)
	case <-time.After(patience):
		t.Fatal("the request in flight did not finish")
	}
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("Shutdown did not return")
	}
	_, err = net.Dial("tcp", srv.Addr("http").String())
	assert.Error(t, err, "nothing listens after Shutdown")
}

func TestStartRefusals(t *testing.T) {
	tlsConf, _ := tlsFor(t)
	for _, tc := range []struct {
		cfg  edge.Config
		want error
	}{
		{edge.Config{HTTP: "127.0.0.1:0"}, edge.ErrNoHandler},
		{edge.Config{Handler: whoAmI}, edge.ErrNoListener},
		{edge.Config{Handler: whoAmI, HTTPS: "127.0.0.1:0"}, edge.ErrNoTLS},
		{edge.Config{Handler: whoAmI, HTTP: "127.0.0.1:0", HTTP3: true}, edge.ErrHTTP3},
	} {
		_, err := edge.Start(tc.cfg)
		assert.ErrorIs(t, err, tc.want)
	}
	_, err := edge.Start(edge.Config{Handler: whoAmI, HTTP: "127.0.0.1:0", Limits: listenlimits.Limits{MinRequestBodyGrace: time.Millisecond}})
	var ve *listenlimits.ValidationError
	assert.True(t, errors.As(err, &ve), "the listener limits validate: %v", err)

	// A bind failure leaves nothing bound: as many descriptors are open
	// after the failed Start as before it.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	before := openFiles(t)
	_, err = edge.Start(edge.Config{Handler: whoAmI, HTTP: "127.0.0.1:0", HTTPS: busy.Addr().String(), TLS: tlsConf})
	require.Error(t, err)
	assert.Equal(t, before, openFiles(t), "the HTTP listener of the failed Start was closed")
}

// openFiles counts the process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err, "the test reads /proc (Linux)")
	return len(fds)
}

// certSource hands a prepared certificate to tlsselect.
type certSource struct{ c tls.Certificate }

func (s certSource) Certificate(tlsselect.SourceRequest) (*tls.Certificate, error) { return &s.c, nil }

// TestTLSSelectionOnBothTransports serves two hosts from a tlsselect
// table: both over TCP, only the HTTP/3 one over QUIC.
func TestTLSSelectionOnBothTransports(t *testing.T) {
	shop, err := testcert.New("shop.test")
	require.NoError(t, err)
	api, err := testcert.New("api.test")
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(shop.Leaf)
	roots.AddCert(api.Leaf)
	table, err := tlsselect.New(tlsselect.Config{
		Certificates: []tlsselect.Certificate{{ID: "shop", Source: certSource{shop}}, {ID: "api", Source: certSource{api}}},
		Hosts: []tlsselect.Host{
			{Names: []string{"shop.test"}, Certificate: "shop", TLS: tlsselect.Policy{HTTP3: true}},
			{Names: []string{"api.test"}, Certificate: "api"},
		},
		UnknownSNI: tlsselect.FallbackRefuse,
	})
	require.NoError(t, err)
	sel := tlsselect.NewSelector(table)
	srv := start(t, edge.Config{Handler: whoAmI, HTTPS: "127.0.0.1:0", TLS: sel.TLSConfig(), QUICTLS: sel.QUICConfig(), HTTP3: true})
	addr := srv.Addr("https").String()
	for _, name := range []string{"shop.test", "api.test"} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: name}, ForceAttemptHTTP2: true}
		t.Cleanup(tr.CloseIdleConnections)
		body, err := get(t, tr, "https://"+addr+"/")
		require.NoError(t, err, name)
		assert.Equal(t, "HTTP/2.0 tls=true h3=false peer=127.0.0.1", body, name)
	}
	h3 := func(name string) (string, error) {
		tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: name}}
		t.Cleanup(func() { tr.Close() })
		return get(t, tr, "https://"+addr+"/")
	}
	body, err := h3("shop.test")
	require.NoError(t, err)
	assert.Equal(t, "HTTP/3.0 tls=true h3=true peer=127.0.0.1", body)
	_, err = h3("api.test")
	var te *quic.TransportError
	require.ErrorAs(t, err, &te, "a host without HTTP/3 is refused on QUIC")
	assert.Equal(t, uint64(1), sel.Stats().Refused.NoHTTP3)
}

// An idle HTTP/1.1 keep-alive connection is parked and served again: the
// same client connection, the same peer for the gate, a new connection
// context (the server served it anew), and its place under the
// per-address cap kept while parked.
func TestIdleConnectionParks(t *testing.T) {
	const release = 20 * time.Millisecond
	infos := make(chan *gate.ConnInfo, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		infos <- gate.ConnInfoFrom(r.Context())
		whoAmI(w, r)
	})
	srv := start(t, edge.Config{Handler: h, HTTP: "127.0.0.1:0", Limits: listenlimits.Limits{IdleRelease: release},
		Connections: connlimit.Config{PerAddress: 1}})
	addr := srv.Addr("http").String()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(patience)))
	br := bufio.NewReader(c)
	ask := func() string {
		t.Helper()
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		require.NoError(t, err)
		resp, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	require.Equal(t, "HTTP/1.1 tls=false h3=false peer=127.0.0.1", ask())
	first := <-infos
	deadline := time.Now().Add(patience)
	for srv.Stats().Parked != 1 {
		require.True(t, time.Now().Before(deadline), "the idle connection was never parked")
		time.Sleep(release / 4) // polling a state: parking has no event to wait on
	}
	require.Equal(t, int64(1), srv.Stats().Open["http"], "a parked connection is still open")

	// The parked connection still holds the address's one place.
	other, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer other.Close()
	require.NoError(t, other.SetDeadline(time.Now().Add(patience)))
	_, err = other.Read(make([]byte, 1))
	require.Error(t, err, "a second connection from the address was served")

	require.Equal(t, "HTTP/1.1 tls=false h3=false peer=127.0.0.1", ask())
	second := <-infos
	require.NotSame(t, first, second, "not parked: served by the same net/http connection")
	require.Equal(t, first.Peer.Addr(), second.Peer.Addr())
}

// A failed TLS handshake is counted and told to OnHandshakeFailure with
// the client's address and crypto/tls's reason, before the connection
// closes.
func TestHandshakeFailureReported(t *testing.T) {
	cert, err := testcert.New("localhost")
	require.NoError(t, err)
	tls13 := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	failures := make(chan edge.HandshakeFailure, 4)
	srv := start(t, edge.Config{Handler: whoAmI, HTTPS: "127.0.0.1:0", TLS: tls13,
		OnHandshakeFailure: func(f edge.HandshakeFailure) { failures <- f }})
	c, err := net.Dial("tcp", srv.Addr(edge.ListenerHTTPS).String())
	require.NoError(t, err)
	defer c.Close()
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12})
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.Error(t, tc.HandshakeContext(ctx))
	select {
	case f := <-failures:
		assert.Equal(t, c.LocalAddr().(*net.TCPAddr).AddrPort(), f.Remote)
		assert.Contains(t, f.Reason, "tls: client offered only unsupported versions")
	case <-time.After(patience):
		t.Fatal("the failed handshake was not reported")
	}
	assert.Equal(t, uint64(1), srv.Stats().TLSHandshakeFailures)
}

// Close cuts a request in flight at once and returns when the servers
// have stopped.
func TestCloseCutsRequestsInFlight(t *testing.T) {
	arrived := make(chan struct{})
	stuck := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})
	srv, err := edge.Start(edge.Config{Handler: stuck, HTTP: "127.0.0.1:0"})
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() {
		_, err := get(t, &http.Transport{}, "http://"+srv.Addr(edge.ListenerHTTP).String()+"/")
		got <- err
	}()
	select {
	case <-arrived:
	case <-time.After(patience):
		t.Fatal("the request never arrived")
	}
	require.NoError(t, srv.Close())
	select {
	case err := <-got:
		assert.Error(t, err, "the request in flight was cut")
	case <-time.After(patience):
		t.Fatal("the request in flight outlived Close")
	}
	_, err = net.Dial("tcp", srv.Addr(edge.ListenerHTTP).String())
	assert.Error(t, err, "nothing listens after Close")
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	assert.NoError(t, srv.Shutdown(ctx), "Shutdown after Close does nothing")
}
