package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/proxyproto"
)

// pathLog records what an upstream saw, by request path.
type pathLog struct {
	mu  sync.Mutex
	got map[string][]string
}

func (s *pathLog) add(path, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.got == nil {
		s.got = make(map[string][]string)
	}
	s.got[path] = append(s.got[path], what)
}

func (s *pathLog) of(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.got[path]...)
}

// writeClientCert writes a certificate of ca with common name cn as the
// PEM files cert.pem and key.pem in dir (by rename, so a reload never
// reads half a file).
func writeClientCert(t *testing.T, ca *testcert.CA, cn, dir string) {
	t.Helper()
	c, err := ca.Client(cn)
	require.NoError(t, err)
	key, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	for name, b := range map[string][]byte{
		"cert.pem": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}),
		"key.pem":  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}),
	} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p+".tmp", b, 0o600))
		require.NoError(t, os.Rename(p+".tmp", p))
	}
}

// TestDaemonClientCertificateAndCAFile: an upstream that requires a
// client certificate of its CA, with a certificate of another CA than the
// system's, serves the daemon, which presents certificates[] "edge" and
// trusts the upstream by caFile, on requests and probes; a certificate
// rewritten on disk and reloaded is the one the next connection presents;
// and the same upstream refuses a document without clientCertificate.
func TestDaemonClientCertificateAndCAFile(t *testing.T) {
	servers, clients := mustCA(t, "servers"), mustCA(t, "clients")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ca.pem"), servers.PEM(), 0o600))
	writeClientCert(t, clients, "edge-1", dir)

	cert, err := servers.Server("app.test")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(clients.Cert)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool,
		NextProtos: []string{"h2", "http/1.1"},
	})
	require.NoError(t, err)
	var s pathLog
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.add(r.URL.Path, r.TLS.PeerCertificates[0].Subject.CommonName)
		w.Header().Set("Connection", "close") // every request on a new connection
		fmt.Fprint(w, r.TLS.PeerCertificates[0].Subject.CommonName, " ", r.Proto)
	}), ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	for _, version := range []string{"1.1", "2"} {
		t.Run("HTTP/"+version, func(t *testing.T) {
			writeClientCert(t, clients, "edge-1", dir)
			doc := func(clientCert string) string {
				return fmt.Sprintf(`certificates:
  - {id: edge, certFile: %[1]s/cert.pem, keyFile: %[1]s/key.pem}
hosts:
  - names: [app.test]
    routes: [{path: /, upstream: app}]
upstreams:
  - id: app
    destinations: [{id: one, address: "https://%[2]s"}]
    health: {active: {enabled: true, interval: 50ms, timeout: 5s, path: /health}}
    http:
      version: "%[3]s"
      tls: {trust: caFile, caFile: %[1]s/ca.pem, serverName: app.test%[4]s}
`, dir, ln.Addr(), version, clientCert)
			}
			path := filepath.Join(dir, "paduraksa.yaml")
			require.NoError(t, os.WriteFile(path, []byte(doc(", clientCertificate: edge")), 0o600))
			d := startDaemon(t, "-config", path, "-watch", "0")
			status, body := d.get(t, "app.test", "/")
			require.Equal(t, 200, status, body)
			proto := map[string]string{"1.1": "HTTP/1.1", "2": "HTTP/2.0"}[version]
			assert.Equal(t, "edge-1 "+proto, body)
			waitFor(t, "a probe with the certificate", func() bool { return len(s.of("/health")) > 0 })
			assert.Equal(t, "edge-1", s.of("/health")[0])

			// A renewed certificate, reloaded from its files, is presented
			// by the next connection.
			writeClientCert(t, clients, "edge-2", dir)
			d.reload <- os.Interrupt
			waitFor(t, "the renewed certificate", func() bool { _, body := d.get(t, "app.test", "/"); return body == "edge-2 "+proto })
			waitFor(t, "a probe with the renewed certificate", func() bool {
				h := s.of("/health")
				return h[len(h)-1] == "edge-2"
			})

			// Without the client certificate, the upstream refuses.
			require.NoError(t, os.WriteFile(path, []byte(doc("")), 0o600))
			d.reload <- os.Interrupt
			waitFor(t, "the refusal", func() bool { status, _ := d.get(t, "app.test", "/"); return status == 502 })
		})
	}

	t.Run("another CA's upstream is refused", func(t *testing.T) {
		other, err := mustCA(t, "others").Server("app.test")
		require.NoError(t, err)
		oln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{other}})
		require.NoError(t, err)
		osrv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), ErrorLog: log.New(io.Discard, "", 0)}
		go osrv.Serve(oln)
		t.Cleanup(func() { osrv.Close() })
		path := filepath.Join(dir, "other.yaml")
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`hosts:
  - names: [app.test]
    routes: [{path: /, upstream: app}]
upstreams:
  - id: app
    destinations: [{id: one, address: "https://%s"}]
    http: {tls: {trust: caFile, caFile: %s/ca.pem, serverName: app.test}}
`, oln.Addr(), dir)), 0o600))
		d := startDaemon(t, "-config", path, "-watch", "0")
		status, _ := d.get(t, "app.test", "/")
		assert.Equal(t, 502, status)
	})
}

func mustCA(t *testing.T, name string) *testcert.CA {
	t.Helper()
	ca, err := testcert.NewCA(name)
	require.NoError(t, err)
	return ca
}

type ppKey struct{}

// TestDaemonProxyProtocolToUpstream: an upstream reading PROXY v2 gets
// the real address of each of two clients, as the daemon resolved it
// from a trusted forwarder, on connections of their own, and LOCAL from
// the probes.
func TestDaemonProxyProtocolToUpstream(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pl, err := proxyproto.NewListener(raw, proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	require.NoError(t, err)
	var s pathLog
	srv := &http.Server{
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, ppKey{}, c.(*proxyproto.Conn).Header())
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h := r.Context().Value(ppKey{}).(proxyproto.Header)
			got := h.Command.String()
			if h.Command == proxyproto.Proxy {
				got = h.Source.Addr().String()
			}
			s.add(r.URL.Path, got)
			fmt.Fprint(w, got)
		}),
		ErrorLog: log.New(io.Discard, "", 0), ReadHeaderTimeout: 10 * time.Second,
	}
	go srv.Serve(pl)
	t.Cleanup(func() { srv.Close() })

	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`global: {trustedProxies: [127.0.0.1]}
hosts:
  - names: [app.test]
    routes: [{path: /, upstream: app}]
upstreams:
  - id: app
    destinations: [{id: one, address: "http://%s"}]
    health: {active: {enabled: true, interval: 50ms, timeout: 5s, path: /health}}
    http: {proxyProtocol: v2}
`, raw.Addr())), 0o600))
	d := startDaemon(t, "-config", path, "-watch", "0")
	get := func(xff string) string {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+d.addr+"/", nil)
		require.NoError(t, err)
		req.Host = "app.test"
		req.Header.Set("X-Forwarded-For", xff)
		res, err := (&http.Client{Transport: d.tr, Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		require.Equal(t, 200, res.StatusCode, string(b))
		return string(b)
	}
	for range 3 {
		assert.Equal(t, "203.0.113.7", get("203.0.113.7"))
		assert.Equal(t, "198.51.100.9", get("198.51.100.9"))
	}
	waitFor(t, "a probe", func() bool { return len(s.of("/health")) > 0 })
	assert.Equal(t, "LOCAL", strings.Join(s.of("/health")[:1], ""))
}
