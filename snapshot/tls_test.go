package snapshot

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tlsRoots trusts the test certificates of testdata/tls.
func tlsRoots(t *testing.T) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	for _, f := range []string{"testdata/tls/cert.pem", "testdata/tls/cert2.pem"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.True(t, pool.AppendCertsFromPEM(b))
	}
	return pool
}

// tlsEdge publishes doc and serves the store on HTTPS (TCP and QUIC).
func tlsEdge(t *testing.T, doc *config.Document) (string, *Publisher, *Store) {
	t.Helper()
	store := new(Store)
	pub := NewPublisher(PublisherConfig{Store: store})
	t.Cleanup(func() { pub.Close() })
	_, err := pub.Apply(testContext(t), doc)
	require.NoError(t, err)
	srv, err := edge.Start(edge.Config{Handler: store, HTTPS: "127.0.0.1:0", TLS: store.TLS().TLSConfig(), QUICTLS: store.TLS().QUICConfig(), HTTP3: true})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	return srv.Addr("https").String(), pub, store
}

// handshake dials addr with SNI name and returns the state, or the error.
func handshake(t *testing.T, addr, name string, roots *x509.CertPool, conf *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	if conf == nil {
		conf = &tls.Config{}
	}
	conf = conf.Clone()
	conf.ServerName, conf.RootCAs = name, roots
	if conf.NextProtos == nil {
		conf.NextProtos = []string{"h2", "http/1.1"}
	}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, conf)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer c.Close()
	return c.ConnectionState(), nil
}

func serial(st tls.ConnectionState) int64 { return st.PeerCertificates[0].SerialNumber.Int64() }

// twoCertificates is a document of three hosts and two certificates:
// app.test with the first, other.test with the second, and a fixed host
// www.app.test without one, served the default (the first).
func twoCertificates(backendAddr string) *config.Document {
	return &config.Document{
		Global: GlobalTLS0("main", "refuse"),
		Certificates: []config.Certificate{
			{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"},
			{ID: "second", CertFile: "testdata/tls/cert2.pem", KeyFile: "testdata/tls/key2.pem"},
		},
		Hosts: []config.Host{
			{Names: []string{"app.test"}, Certificate: "main", TLS: &config.HostTLS{HTTP3: true, MinVersion: "1.3"}, Routes: []config.Route{{Upstream: "web"}}},
			{Names: []string{"other.test"}, Certificate: "second", TLS: &config.HostTLS{HTTP1Only: true}, Routes: []config.Route{{Upstream: "web"}}},
			{Names: []string{"www.app.test"}, Kind: "fixed", Fixed: &config.FixedAnswer{Body: "www\n"}},
		},
		Upstreams: []config.Upstream{{ID: "web", Destinations: []config.Destination{{ID: "w", Address: "http://" + backendAddr}}}},
	}
}

// GlobalTLS0 is a global block with only TLS set.
func GlobalTLS0(def, unknown string) config.Global {
	return config.Global{TLS: config.GlobalTLS{DefaultCertificate: def, UnknownSNI: unknown}}
}

func TestTLSEachHostItsCertificateAndPolicy(t *testing.T) {
	b := startBackend(t, "web")
	addr, _, store := tlsEdge(t, twoCertificates(b.addr))
	roots := tlsRoots(t)

	st, err := handshake(t, addr, "app.test", roots, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(1), serial(st), "app.test: its own certificate")
	assert.Equal(t, "h2", st.NegotiatedProtocol)
	assert.Equal(t, uint16(tls.VersionTLS13), st.Version)

	st, err = handshake(t, addr, "other.test", roots, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2), serial(st), "other.test: the second certificate")
	assert.Equal(t, "http/1.1", st.NegotiatedProtocol, "http1Only")

	st, err = handshake(t, addr, "WWW.app.test", roots, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(1), serial(st), "a host without a certificate gets the default")

	_, err = handshake(t, addr, "unknown.test", roots, nil)
	assert.ErrorContains(t, err, "unrecognized name", "unknownSni refuse")
	assert.Equal(t, uint64(1), store.TLS().Stats().Refused.UnknownSNI)

	_, err = handshake(t, addr, "app.test", roots, &tls.Config{MaxVersion: tls.VersionTLS12})
	assert.Error(t, err, "minVersion 1.3 refuses a TLS 1.2 client")

	// Requests through the gate, by protocol.
	h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}
	t.Cleanup(h2.CloseIdleConnections)
	res := tlsGet(t, h2, "https://app.test/", addr)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "HTTP/2.0", res.Proto)
	assert.Equal(t, []string{gateDefaultAltSvc}, res.Header["Alt-Svc"], "the gate advertises HTTP/3 for an http3 host")

	// A connection made for www.app.test over TLS 1.2 (its policy allows
	// it; the certificate covers app.test too) is the one an h2 client
	// coalesces app.test onto: the gate re-checks app.test's policy.
	weak := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "www.app.test", MaxVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}
	t.Cleanup(weak.CloseIdleConnections)
	res = tlsGet(t, weak, "https://www.app.test/", addr)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, uint16(tls.VersionTLS12), res.TLS.Version)
	res = tlsGet(t, weak, "https://app.test/", addr)
	assert.Equal(t, http.StatusMisdirectedRequest, res.StatusCode, "app.test over www.app.test's TLS 1.2 connection")

	h3 := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, Dial: dialTo(addr)}
	t.Cleanup(func() { h3.Close() })
	res = tlsGet(t, h3, "https://app.test/", addr)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "HTTP/3.0", res.Proto)
	_, err = h3.RoundTrip(mustGet(t, "https://other.test/"))
	var te *quic.TransportError
	assert.True(t, errors.As(err, &te), "a host without http3 is refused on QUIC: %v", err)
}

// dialTo dials every HTTP/3 request to addr, whatever its URL names.
func dialTo(addr string) func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
	return func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
		return quic.DialAddrEarly(ctx, addr, tc, qc)
	}
}

func mustGet(t *testing.T, url string) *http.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	return req
}

// tlsGet sends GET url to addr over rt and reads the body.
func tlsGet(t *testing.T, rt http.RoundTripper, url, addr string) *http.Response {
	t.Helper()
	if tr, ok := rt.(*http.Transport); ok {
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
	}
	res, err := rt.RoundTrip(mustGet(t, url))
	require.NoError(t, err)
	_, err = io.ReadAll(res.Body)
	require.NoError(t, err)
	res.Body.Close()
	return res
}

const gateDefaultAltSvc = `h3=":443"; ma=86400`

func TestTLSCertificateReplacedOnDisk(t *testing.T) {
	b := startBackend(t, "web")
	dir := t.TempDir()
	copyFile := func(from, to string) {
		t.Helper()
		data, err := os.ReadFile(from)
		require.NoError(t, err)
		tmp := to + ".tmp"
		require.NoError(t, os.WriteFile(tmp, data, 0o600))
		require.NoError(t, os.Rename(tmp, to))
	}
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	copyFile("testdata/tls/cert.pem", cert)
	copyFile("testdata/tls/key.pem", key)
	doc := twoCertificates(b.addr)
	doc.Certificates[0].CertFile, doc.Certificates[0].KeyFile = cert, key
	addr, pub, _ := tlsEdge(t, doc)
	roots := tlsRoots(t)

	open, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, &tls.Config{ServerName: "app.test", RootCAs: roots, NextProtos: []string{"http/1.1"}})
	require.NoError(t, err)
	defer open.Close()
	assert.Equal(t, int64(1), serial(open.ConnectionState()))

	copyFile("testdata/tls/cert2.pem", cert)
	copyFile("testdata/tls/key2.pem", key)
	// Make the change visible to a stat that only sees the second.
	later := time.Now().Add(time.Second)
	require.NoError(t, os.Chtimes(cert, later, later))
	o, err := pub.Apply(testContext(t), clone(doc))
	require.NoError(t, err)
	assert.Equal(t, Applied, o.Status, "an unchanged document with a changed certificate file is applied")

	st, err := handshake(t, addr, "app.test", roots, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2), serial(st), "the next handshake gets the new certificate")

	require.NoError(t, open.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(open, "GET / HTTP/1.1\r\nHost: app.test\r\n\r\n")
	require.NoError(t, err)
	buf := make([]byte, 12)
	_, err = io.ReadFull(open, buf)
	require.NoError(t, err)
	assert.Equal(t, "HTTP/1.1 200", string(buf), "the connection opened before keeps working")
}

func TestTLSClientCertificates(t *testing.T) {
	b := startBackend(t, "web")
	doc := twoCertificates(b.addr)
	doc.Hosts[1].TLS = &config.HostTLS{ClientAuth: "required", ClientCAs: "testdata/tls/cert2.pem"}
	addr, _, _ := tlsEdge(t, doc)
	roots := tlsRoots(t)
	client, err := tls.LoadX509KeyPair("testdata/tls/cert2.pem", "testdata/tls/key2.pem")
	require.NoError(t, err)
	// In TLS 1.3 the server judges the client's certificate after the
	// client's handshake returned: the refusal comes with the answer.
	get := func(host string, certs []tls.Certificate) error {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs}}
		t.Cleanup(tr.CloseIdleConnections)
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}
		res, err := tr.RoundTrip(mustGet(t, "https://"+host+"/"))
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	assert.ErrorContains(t, get("other.test", nil), "certificate required", "other.test requires a client certificate")
	assert.NoError(t, get("other.test", []tls.Certificate{client}), "a certificate of the configured CA is accepted")
	assert.NoError(t, get("app.test", nil), "app.test asks for none")
}

func TestTLSDocumentProblems(t *testing.T) {
	doc := twoCertificates("127.0.0.1:1")
	doc.Certificates[1].KeyFile = "testdata/tls/key.pem" // not the key of cert2
	doc.Hosts[0].TLS.MinVersion = "1.1"
	doc.Global.TLS.UnknownSNI = "ignore"
	got := codePaths(Validate(doc))
	assert.ElementsMatch(t, []string{
		"tlsselect.certificate.key.mismatch certificates[1].keyFile",
		"tlsselect.tls.minVersion.invalid hosts[0].tls.minVersion",
		"tlsselect.fallback.invalid global.tls.unknownSni",
	}, got)
}
