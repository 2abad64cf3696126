package gate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/testcert"
)

// selfSigned returns a certificate for names and a pool that trusts it.
func selfSigned(t *testing.T, names ...string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	cert, err := testcert.New(names...)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	return cert, pool
}

// TestTLSPolicy421 serves two hosts from one certificate and one TLS
// listener that accepts HTTP/2 and TLS 1.2: the host that allows only
// HTTP/1.1 and the host that requires TLS 1.3 answer 421 to connections
// they would not have accepted.
func TestTLSPolicy421(t *testing.T) {
	cert, pool := selfSigned(t, "h1.test", "tls13.test", "any.test")
	g, err := New(Config{Hosts: []Host{
		{Names: []string{"h1.test"}, TLS: TLSPolicy{HTTP1Only: true}, Routes: []Route{{Prefix: "/", Target: echoTarget}}},
		{Names: []string{"tls13.test"}, TLS: TLSPolicy{MinVersion: tls.VersionTLS13}, Routes: []Route{{Prefix: "/", Target: echoTarget}}},
		{Names: []string{"any.test"}, Routes: []Route{{Prefix: "/", Target: echoTarget}}},
	}})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: g, ConnContext: ConnContext,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12}}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	client := func(h2 bool, maxVersion uint16) *http.Client {
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool, MaxVersion: maxVersion},
			ForceAttemptHTTP2: h2,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, network, addr)
			},
		}
		if !h2 {
			tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: patience}
	}
	tests := []struct {
		name       string
		host       string
		h2         bool
		maxVersion uint16
		status     int
		proto      int
	}{
		{"HTTP/2 to HTTP/1.1-only host", "h1.test", true, 0, 421, 2},
		{"HTTP/1.1 to HTTP/1.1-only host", "h1.test", false, 0, 200, 1},
		{"TLS 1.2 to TLS 1.3 host", "tls13.test", false, tls.VersionTLS12, 421, 1},
		{"TLS 1.3 to TLS 1.3 host", "tls13.test", true, 0, 200, 2},
		{"TLS 1.2 over HTTP/2 to any host", "any.test", true, tls.VersionTLS12, 200, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client(tt.h2, tt.maxVersion).Get("https://" + tt.host + "/")
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tt.status, resp.StatusCode)
			assert.Equal(t, tt.proto, resp.ProtoMajor)
			assert.Equal(t, "Paduraksa", resp.Header.Get("Server"), "a 421 carries stage 1 headers")
			if tt.status == 200 {
				assert.Equal(t, "https", resp.Header.Get("X-Scheme"))
			}
		})
	}
}
