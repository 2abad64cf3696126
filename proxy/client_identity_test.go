package proxy_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// certStore is a proxy.ClientCertificates holding one certificate that a
// test may replace, as a renewal does.
type certStore struct {
	id   string
	cert atomic.Pointer[tls.Certificate]
}

func (s *certStore) ClientCertificate(id string) *tls.Certificate {
	if id != s.id {
		return nil
	}
	return s.cert.Load()
}

// mtlsUpstream serves h over TLS with a certificate of ca for names, and
// requires a client certificate of clients. Its handler answers the
// client certificate's common name and the protocol.
func mtlsUpstream(t *testing.T, ca, clients *testcert.CA, names ...string) string {
	t.Helper()
	cert, err := ca.Server(names...)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(clients.Cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		NextProtos:   []string{"h2", "http/1.1"},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	})
	require.NoError(t, err)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName+" "+r.Proto)
		}),
		ErrorLog:          log.New(io.Discard, "", 0), // refused handshakes are the point
		ReadHeaderTimeout: 10 * time.Second,
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

func newCA(t *testing.T, name string) *testcert.CA {
	t.Helper()
	ca, err := testcert.NewCA(name)
	require.NoError(t, err)
	return ca
}

func clientCert(t *testing.T, ca *testcert.CA, name string) *tls.Certificate {
	t.Helper()
	c, err := ca.Client(name)
	require.NoError(t, err)
	return &c
}

// TestClientCertificateToUpstream: an upstream that requires a client
// certificate refuses the gateway without one and serves it with the
// store's, over the direct HTTP/1.1 client, net/http's HTTP/2 and the
// probes' round trip; a certificate replaced in the store is the one the
// next new connection presents. The upstream's own certificate is checked
// against the CA roots of trust caFile.
func TestClientCertificateToUpstream(t *testing.T) {
	servers, clients := newCA(t, "servers"), newCA(t, "clients")
	up := mtlsUpstream(t, servers, clients, "app.test")
	caPEM := string(servers.PEM())

	for _, v := range []struct {
		name    string
		version proxy.HTTPVersion
		proto   string
	}{{"HTTP/1.1 direct", proxy.HTTP11, "HTTP/1.1"}, {"HTTP/2", proxy.HTTP2, "HTTP/2.0"}} {
		t.Run(v.name, func(t *testing.T) {
			store := &certStore{id: "edge"}
			store.cert.Store(clientCert(t, clients, "edge-1"))
			cfg := proxy.ClientConfig{Version: v.version, Trust: proxy.TrustCAFile, CAs: caPEM, ClientCertificate: "edge", Certificates: store}
			require.NoError(t, cfg.Validate())
			addr, cl := setup{scheme: "https", client: cfg}.start(t, up)
			res, body := do(t, addr, mustReq("GET", "/"))
			require.Equal(t, 200, res.StatusCode, body)
			assert.Equal(t, "edge-1 "+v.proto, body)

			// A renewal: the next new connection presents the new one.
			store.cert.Store(clientCert(t, clients, "edge-2"))
			cl.Transport.(*proxy.Transport).CloseIdleConnections()
			res, body = do(t, addr, mustReq("GET", "/"))
			require.Equal(t, 200, res.StatusCode, body)
			assert.Equal(t, "edge-2 "+v.proto, body)

			// The probes' round trip presents it too.
			probe, err := http.NewRequest("GET", "https://"+up+"/health", nil)
			require.NoError(t, err)
			probe.Host = "app.test"
			tr := proxy.NewTransport(proxy.ClientConfig{Version: v.version, Trust: proxy.TrustCAFile, CAs: caPEM, ServerName: "app.test", ClientCertificate: "edge", Certificates: store})
			defer tr.CloseIdleConnections()
			pres, err := tr.RoundTrip(probe)
			require.NoError(t, err)
			b, _ := io.ReadAll(pres.Body)
			pres.Body.Close()
			assert.Equal(t, "edge-2 "+v.proto, string(b))

			// Without a certificate, the upstream refuses the handshake.
			obs := new(recorder)
			bare := cfg
			bare.ClientCertificate, bare.Certificates = "", nil
			addr, _ = setup{scheme: "https", client: bare, observer: obs}.start(t, up)
			res, _ = do(t, addr, mustReq("GET", "/"))
			assert.Equal(t, 502, res.StatusCode)
			tr = proxy.NewTransport(proxy.ClientConfig{Version: v.version, Trust: proxy.TrustCAFile, CAs: caPEM, ServerName: "app.test"})
			defer tr.CloseIdleConnections()
			if pres, err := tr.RoundTrip(probe); err == nil {
				pres.Body.Close()
				t.Fatalf("a probe without the client certificate got %d", pres.StatusCode)
			}
			// A store without the certificate yet presents none.
			empty := &certStore{id: "edge"}
			noneYet := cfg
			noneYet.Certificates = empty
			addr, _ = setup{scheme: "https", client: noneYet}.start(t, up)
			res, _ = do(t, addr, mustReq("GET", "/"))
			assert.Equal(t, 502, res.StatusCode)
		})
	}

	t.Run("caFile refuses an upstream of another CA", func(t *testing.T) {
		other := mtlsUpstream(t, newCA(t, "others"), clients, "app.test")
		store := &certStore{id: "edge"}
		store.cert.Store(clientCert(t, clients, "edge-1"))
		obs := new(recorder)
		cfg := proxy.ClientConfig{Trust: proxy.TrustCAFile, CAs: caPEM, ClientCertificate: "edge", Certificates: store}
		addr, _ := setup{scheme: "https", client: cfg, observer: obs}.start(t, other)
		res, _ := do(t, addr, mustReq("GET", "/"))
		assert.Equal(t, 502, res.StatusCode)
		assert.Equal(t, []upstream.Outcome{upstream.TLSError}, obs.outcomes())
		// And caFile without usable roots trusts nothing, not the system.
		cfg.CAs = "no PEM here"
		addr, _ = setup{scheme: "https", client: cfg}.start(t, up)
		res, _ = do(t, addr, mustReq("GET", "/"))
		assert.Equal(t, 502, res.StatusCode)
	})
}
