package main

// A host's TLS policy is the policy of every connection a request for it
// comes on: the client certificate a host requires is re-checked per
// request against that host's own CA pool, whatever name the handshake
// was for, on HTTP/1.1, HTTP/2 and HTTP/3 and for every spelling of the
// name (the class of Traefik's CVE-2019-20894 and CVE-2022-23632).

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mtls is the daemon serving four hosts on one certificate that covers
// them all, so clients may coalesce: a.test asks for no client
// certificate, b.test requires one of CA X, c.test one of CA Y, d.test
// takes one of CA X when given, and e.test requires one of CA X and
// redirects plain HTTP. Each host has an upstream of its own that
// records what reaches it.
type mtls struct {
	d          *daemon
	roots      *x509.CertPool // trusts the server certificate
	x, y       tls.Certificate
	upstreams  map[string]*recorder
	clientOfCA map[string]*testcert.CA
}

func startMTLS(t *testing.T) *mtls {
	t.Helper()
	dir := t.TempDir()
	server, err := testcert.New("a.test", "b.test", "c.test", "d.test", "e.test")
	require.NoError(t, err)
	certFile, keyFile := writeKeyPair(t, dir, "server", server)
	m := &mtls{roots: x509.NewCertPool(), upstreams: map[string]*recorder{}, clientOfCA: map[string]*testcert.CA{}}
	m.roots.AddCert(server.Leaf)
	caFiles := map[string]string{}
	for _, name := range []string{"X", "Y"} {
		ca, err := testcert.NewCA("client CA " + name)
		require.NoError(t, err)
		m.clientOfCA[name] = ca
		caFiles[name] = filepath.Join(dir, "ca-"+name+".pem")
		require.NoError(t, os.WriteFile(caFiles[name], ca.PEM(), 0o600))
	}
	m.x, err = m.clientOfCA["X"].Client("alice")
	require.NoError(t, err)
	m.y, err = m.clientOfCA["Y"].Client("bob")
	require.NoError(t, err)

	doc := config.Document{
		Global:       config.Global{TLS: config.GlobalTLS{DefaultCertificate: "all"}},
		Certificates: []config.Certificate{{ID: "all", CertFile: certFile, KeyFile: keyFile}},
	}
	tlsOf := map[string]*config.HostTLS{
		"a": {HTTP3: true},
		"b": {HTTP3: true, ClientAuth: "required", ClientCAs: caFiles["X"]},
		"c": {HTTP3: true, ClientAuth: "required", ClientCAs: caFiles["Y"]},
		"d": {HTTP3: true, ClientAuth: "optional", ClientCAs: caFiles["X"]},
		"e": {ClientAuth: "required", ClientCAs: caFiles["X"]},
	}
	for _, h := range []string{"a", "b", "c", "d", "e"} {
		rc := startRecorder(t, map[string]string{"/": h})
		m.upstreams[h] = rc
		host := config.Host{Names: []string{h + ".test"}, TLS: tlsOf[h], Routes: []config.Route{{Upstream: h}}}
		if h == "e" {
			host.HTTPSRedirect = &config.HTTPSRedirect{}
		}
		doc.Hosts = append(doc.Hosts, host)
		doc.Upstreams = append(doc.Upstreams, upstreamOf(h, rc.addr))
	}
	m.d = startWithDoc(t, doc, "-https", "127.0.0.1:0")
	require.NotEmpty(t, m.d.tlsAddr)
	return m
}

// dial makes a TLS connection to the daemon with server name sni ("" for
// none), presenting cert when not nil, offering protos.
func (m *mtls) dial(t *testing.T, sni string, cert *tls.Certificate, protos ...string) *tls.Conn {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: wireTimeout}, "tcp", m.d.tlsAddr, m.clientConfig(sni, cert, protos...))
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(wireTimeout)))
	return c
}

func (m *mtls) clientConfig(sni string, cert *tls.Certificate, protos ...string) *tls.Config {
	cfg := &tls.Config{ServerName: sni, RootCAs: m.roots, NextProtos: protos}
	if sni == "" {
		// No name to send, none to check the certificate against.
		cfg.InsecureSkipVerify = true
	}
	if cert != nil {
		// Sent whatever the server asks for: a client that withholds
		// it would test nothing.
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	return cfg
}

// h1 writes raw on c and reads the answer.
func h1(t *testing.T, c net.Conn, br *bufio.Reader, raw string) (int, string) {
	t.Helper()
	_, err := io.WriteString(c, raw)
	require.NoError(t, err)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// reached returns the hosts whose upstreams received a request since the
// last call.
func (m *mtls) reached() []string {
	var out []string
	for _, h := range []string{"a", "b", "c", "d", "e"} {
		for range m.upstreams[h].take() {
			out = append(out, h)
		}
	}
	return out
}

func TestTLSPolicyClientCertificatePerRequest(t *testing.T) {
	m := startMTLS(t)
	x, y := &m.x, &m.y

	// HTTP/1.1 over TLS: the handshake for one name, the request for b.
	for _, tc := range []struct {
		name   string
		sni    string
		cert   *tls.Certificate
		raw    string
		status int
		want   []string // upstreams reached
	}{
		{"SNI a.test, Host b.test", "a.test", nil, get("b.test", "/"), 421, nil},
		{"no SNI, Host b.test", "", nil, get("b.test", "/"), 421, nil},
		{"SNI c.test with its own CA Y certificate, Host b.test", "c.test", y, get("b.test", "/"), 421, nil},
		{"SNI a.test, Host B.TEST.", "a.test", nil, get("B.TEST.", "/"), 421, nil},
		{"SNI a.test, Host b.test:443", "a.test", nil, get("b.test:443", "/"), 421, nil},
		{"SNI a.test, absolute-form target for b.test, Host a.test", "a.test", nil,
			"GET https://b.test/ HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n", 421, nil},
		{"SNI d.test without a certificate, Host b.test", "d.test", nil, get("b.test", "/"), 421, nil},
		{"SNI b.test with a CA X certificate", "b.test", x, get("b.test", "/"), 200, []string{"b"}},
		{"SNI d.test with a CA X certificate, Host b.test (the same CA)", "d.test", x, get("b.test", "/"), 200, []string{"b"}},
		{"SNI d.test with a CA X certificate, Host c.test", "d.test", x, get("c.test", "/"), 421, nil},
		{"SNI a.test without a certificate, Host d.test", "a.test", nil, get("d.test", "/"), 200, []string{"d"}},
		{"SNI c.test with a CA Y certificate, Host d.test", "c.test", y, get("d.test", "/"), 421, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := m.dial(t, tc.sni, tc.cert, "http/1.1")
			status, body := h1(t, c, bufio.NewReader(c), tc.raw)
			assert.Equal(t, tc.status, status, body)
			assert.Equal(t, tc.want, m.reached())
		})
	}

	t.Run("one connection, each request for its own host", func(t *testing.T) {
		c := m.dial(t, "d.test", x, "http/1.1")
		br := bufio.NewReader(c)
		for _, step := range []struct {
			host   string
			status int
		}{{"d.test", 200}, {"b.test", 200}, {"c.test", 421}, {"a.test", 200}, {"b.test", 200}} {
			status, _ := h1(t, c, br, "GET / HTTP/1.1\r\nHost: "+step.host+"\r\n\r\n")
			assert.Equal(t, step.status, status, step.host)
		}
		assert.Equal(t, []string{"a", "b", "b", "d"}, m.reached())
	})

	t.Run("a resumed session keeps its verified chain", func(t *testing.T) {
		cache := tls.NewLRUClientSessionCache(4)
		for i, want := range []bool{false, true} {
			cfg := m.clientConfig("d.test", x, "http/1.1")
			cfg.ClientSessionCache = cache
			c, err := tls.DialWithDialer(&net.Dialer{Timeout: wireTimeout}, "tcp", m.d.tlsAddr, cfg)
			require.NoError(t, err)
			require.NoError(t, c.SetDeadline(time.Now().Add(wireTimeout)))
			br := bufio.NewReader(c)
			status, _ := h1(t, c, br, "GET / HTTP/1.1\r\nHost: b.test\r\n\r\n")
			// The ticket arrives after the handshake: the answer read
			// above carried it into the cache.
			assert.Equal(t, want, c.ConnectionState().DidResume, "connection %d", i)
			assert.Equal(t, 200, status, "connection %d", i)
			c.Close()
		}
		assert.Equal(t, []string{"b", "b"}, m.reached())
	})

	// HTTP/2 over a connection made for a.test: any :authority spelling
	// of b, and :scheme http, are refused on the stream.
	h2 := func(t *testing.T, url, authority string) int {
		t.Helper()
		var protos http.Protocols
		protos.SetHTTP2(true)
		tr := &http.Transport{Protocols: &protos, DialTLSContext: func(context.Context, string, string) (net.Conn, error) {
			c := m.dial(t, "a.test", nil, "h2")
			require.Equal(t, "h2", c.ConnectionState().NegotiatedProtocol)
			return c, nil
		}}
		ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
		defer cancel()
		cc, err := tr.NewClientConn(ctx, "https", "a.test:443")
		require.NoError(t, err)
		defer cc.Close()
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		require.NoError(t, err)
		req.Host = authority
		res, err := cc.RoundTrip(req)
		require.NoError(t, err)
		defer res.Body.Close()
		assert.Equal(t, 2, res.ProtoMajor)
		_, err = io.Copy(io.Discard, res.Body)
		require.NoError(t, err)
		return res.StatusCode
	}
	for _, tc := range []struct{ name, url, authority string }{
		{":authority b.test", "https://b.test/", "b.test"},
		{":authority B.TEST.", "https://b.test/", "B.TEST."},
		{":scheme http, :authority b.test", "http://b.test/", "b.test"},
	} {
		t.Run("HTTP/2 "+tc.name, func(t *testing.T) {
			assert.Equal(t, 421, h2(t, tc.url, tc.authority))
			assert.Empty(t, m.reached())
		})
	}
	t.Run("HTTP/2 :authority d.test", func(t *testing.T) {
		assert.Equal(t, 200, h2(t, "https://d.test/", "d.test"))
		assert.Equal(t, []string{"d"}, m.reached())
	})

	// HTTP/3: a QUIC connection made for one name, a request for b.test.
	// quic-go's server fills r.TLS with the connection's verified chains.
	for _, tc := range []struct {
		name   string
		sni    string
		cert   *tls.Certificate
		url    string
		status int
		want   []string
	}{
		{"SNI a.test, :authority b.test", "a.test", nil, "https://b.test/", 421, nil},
		{"SNI a.test, :authority a.test", "a.test", nil, "https://a.test/", 200, []string{"a"}},
		{"SNI c.test with a CA Y certificate, :authority b.test", "c.test", y, "https://b.test/", 421, nil},
		{"SNI b.test with a CA X certificate, :authority b.test", "b.test", x, "https://b.test/", 200, []string{"b"}},
		{"SNI d.test with a CA X certificate, :authority b.test", "d.test", x, "https://b.test/", 200, []string{"b"}},
	} {
		t.Run("HTTP/3 "+tc.name, func(t *testing.T) {
			tr := &http3.Transport{TLSClientConfig: m.clientConfig(tc.sni, tc.cert), Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
				return quic.DialAddrEarly(ctx, m.d.tlsAddr, tc, qc)
			}}
			defer tr.Close()
			res, _ := fetch(t, tr, tc.url)
			assert.Equal(t, "HTTP/3.0", res.Proto)
			assert.Equal(t, tc.status, res.StatusCode)
			assert.Equal(t, tc.want, m.reached())
		})
	}

	// Plain HTTP carries no certificate: refused for a host that
	// requires one, unless its HTTPS redirect answers.
	t.Run("plain HTTP", func(t *testing.T) {
		status, _ := m.d.get(t, "b.test", "/")
		assert.Equal(t, 421, status, "b.test")
		status, _ = m.d.get(t, "e.test", "/")
		assert.Equal(t, 308, status, "e.test redirects to HTTPS")
		status, _ = m.d.get(t, "d.test", "/")
		assert.Equal(t, 200, status, "d.test takes a connection without a certificate")
		assert.Equal(t, []string{"d"}, m.reached())
	})
}
