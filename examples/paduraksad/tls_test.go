package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/tlsselect"
)

// fetch sends GET url over rt to addr, whatever host the URL names.
func fetch(t *testing.T, rt http.RoundTripper, url string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	res, err := rt.RoundTrip(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

func dialAlways(addr string) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

// TestDemoServesHTTPSAndHTTP3: with no flags but its ports, the daemon
// serves the demo over HTTPS (HTTP/2) and HTTP/3 with the certificate it
// made, which the curl line it prints trusts.
func TestDemoServesHTTPSAndHTTP3(t *testing.T) {
	d := startDaemon(t)
	require.NotEmpty(t, d.tlsAddr)
	m := regexp.MustCompile(`curl -i --cacert (\S+) https://localhost:(\d+)/hello`).FindStringSubmatch(d.out.String())
	require.NotNil(t, m, "the curl line for HTTPS: %s", d.out)
	_, port, _ := net.SplitHostPort(d.tlsAddr)
	assert.Equal(t, port, m[2])
	pemData, err := os.ReadFile(m[1])
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pemData))

	h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true, DialContext: dialAlways(d.tlsAddr)}
	t.Cleanup(h2.CloseIdleConnections)
	res, body := fetch(t, h2, "https://localhost/hello")
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "HTTP/2.0", res.Proto)
	assert.Contains(t, body, "hello from the demo upstream")
	assert.Contains(t, body, "X-Forwarded-Proto: https")
	assert.Equal(t, `h3=":`+port+`"; ma=86400`, res.Header.Get("Alt-Svc"), "the public HTTPS port")

	h3 := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
		return quic.DialAddrEarly(ctx, d.tlsAddr, tc, qc)
	}}
	t.Cleanup(func() { h3.Close() })
	res, body = fetch(t, h3, "https://localhost/hello")
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "HTTP/3.0", res.Proto)
	assert.Contains(t, body, "hello from the demo upstream")
}

// TestHTTPSFromTheDocument: a document with two certificates and three
// hosts serves each with its own through -https.
func TestHTTPSFromTheDocument(t *testing.T) {
	dir := t.TempDir()
	var pems [2][2]string
	pool := x509.NewCertPool()
	for i, names := range [][]string{{"a.test", "c.test"}, {"b.test"}} {
		c, err := tlsselect.SelfSigned(time.Hour, names...)
		require.NoError(t, err)
		pool.AddCert(c.Leaf)
		pems[i][0], pems[i][1] = writeKeyPair(t, dir, names[0], c)
	}
	up := upstreamServer(t, "u")
	cfg := filepath.Join(dir, "paduraksa.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
global: {tls: {unknownSni: refuse}}
certificates:
  - {id: one, certFile: `+pems[0][0]+`, keyFile: `+pems[0][1]+`}
  - {id: two, certFile: `+pems[1][0]+`, keyFile: `+pems[1][1]+`}
hosts:
  - {names: [a.test], certificate: one, routes: [{upstream: u}]}
  - {names: [b.test], certificate: two, tls: {http1Only: true}, routes: [{upstream: u}]}
  - {names: [c.test], certificate: one, kind: fixed, fixed: {body: "c\n"}}
upstreams:
  - {id: u, destinations: [{id: d, address: "http://`+up+`"}]}
`), 0o600))
	d := startDaemon(t, "-config", cfg, "-https", "127.0.0.1:0")
	for _, tc := range []struct {
		name, cn, proto string
	}{{"a.test", "a.test", "h2"}, {"b.test", "b.test", "http/1.1"}, {"c.test", "a.test", "h2"}} {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", d.tlsAddr,
			&tls.Config{ServerName: tc.name, RootCAs: pool, NextProtos: []string{"h2", "http/1.1"}})
		require.NoError(t, err, tc.name)
		st := c.ConnectionState()
		c.Close()
		assert.Equal(t, tc.cn, st.PeerCertificates[0].Subject.CommonName, tc.name)
		assert.Equal(t, tc.proto, st.NegotiatedProtocol, tc.name)
	}
	_, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", d.tlsAddr, &tls.Config{ServerName: "nope.test", RootCAs: pool})
	assert.ErrorContains(t, err, "unrecognized name")
}

// TestHTTPSPortIsTheBoundOne: served on a port that is not 443, an
// HTTP/3 host's Alt-Svc and an HTTPS redirect's Location name the port
// -https bound; with global.httpsPort (a load balancer's public port),
// that one.
func TestHTTPSPortIsTheBoundOne(t *testing.T) {
	dir := t.TempDir()
	c, err := tlsselect.SelfSigned(time.Hour, "a.test")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(c.Leaf)
	certFile, keyFile := writeKeyPair(t, dir, "a.test", c)
	up := upstreamServer(t, "u")
	for _, tt := range []struct{ global, want string }{{"", ""}, {"global: {httpsPort: 9443}\n", "9443"}} {
		cfg := filepath.Join(dir, "paduraksa.yaml")
		require.NoError(t, os.WriteFile(cfg, []byte(tt.global+`
certificates:
  - {id: one, certFile: `+certFile+`, keyFile: `+keyFile+`}
hosts:
  - {names: [a.test], certificate: one, tls: {http3: true}, httpsRedirect: {}, routes: [{upstream: u}]}
upstreams:
  - {id: u, destinations: [{id: d, address: "http://`+up+`"}]}
`), 0o600))
		d := startDaemon(t, "-config", cfg, "-https", "127.0.0.1:0")
		want := tt.want
		if want == "" {
			_, want, _ = net.SplitHostPort(d.tlsAddr)
		}
		require.NotEqual(t, "443", want)

		h2 := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true, DialContext: dialAlways(d.tlsAddr)}
		t.Cleanup(h2.CloseIdleConnections)
		res, body := fetch(t, h2, "https://a.test/x")
		assert.Equal(t, 200, res.StatusCode)
		assert.Equal(t, "u", body)
		assert.Equal(t, `h3=":`+want+`"; ma=86400`, res.Header.Get("Alt-Svc"), "global %q", tt.global)

		plain := &http.Transport{DialContext: dialAlways(d.addr)}
		t.Cleanup(plain.CloseIdleConnections)
		res, _ = fetch(t, plain, "http://a.test/x?y=1")
		assert.Equal(t, http.StatusPermanentRedirect, res.StatusCode)
		assert.Equal(t, "https://a.test:"+want+"/x?y=1", res.Header.Get("Location"), "global %q", tt.global)
	}
}

func TestHTTPSNeedsACertificate(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "paduraksa.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("hosts: [{names: [a.test], kind: fixed, fixed: {body: x}}]\n"), 0o600))
	err := run(context.Background(), []string{"-config", cfg, "-listen", "127.0.0.1:0", "-https", "127.0.0.1:0"}, options{stdout: io.Discard, stderr: io.Discard})
	assert.ErrorContains(t, err, "-https: the config names no certificate")
}

// writeKeyPair writes c's chain and key as PEM files named after name.
func writeKeyPair(t *testing.T, dir, name string, c tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	key, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600))
	return certFile, keyFile
}
