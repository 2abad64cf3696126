package tlsselect

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trap is a loopback listener that counts every connection made to it:
// any fetch during certificate verification would land here.
func trap(t *testing.T) (url string, hits *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	hits = new(atomic.Int64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		if n := hits.Load(); n > 0 {
			t.Errorf("certificate verification connected %d times to %s", n, ln.Addr())
		}
	})
	return "http://" + ln.Addr().String(), hits
}

// TestClientCertificates: one host requires a client certificate, one
// takes it when offered, one asks for none. Verification is offline: the
// client certificates name AIA, OCSP and CRL URLs on a trap listener, and
// a chain without its intermediate fails instead of fetching it.
func TestClientCertificates(t *testing.T) {
	url, _ := trap(t)
	servers := newPKI(t, "server root")
	clients := newPKI(t, "client root")
	inter := clients.sub(t, "client intermediate")
	other := newPKI(t, "other root")

	leaf := inter.issue(t, leafOpts{names: []string{"alice"}, client: true, aia: url})
	withChain := leaf
	withChain.Certificate = [][]byte{leaf.Certificate[0], inter.cert.Raw}
	stranger := other.issue(t, leafOpts{names: []string{"mallory"}, client: true, aia: url})

	cert := servers.issue(t, leafOpts{names: []string{"req.test", "opt.test", "none.test"}})
	roots := []*x509.Certificate{clients.cert}
	sel := NewSelector(mustTable(t, Config{
		Certificates: []Certificate{{ID: "c", Source: source(cert)}},
		Hosts: []Host{
			{Names: []string{"req.test"}, Certificate: "c", TLS: Policy{ClientAuth: ClientAuthRequired, ClientCAs: roots}},
			{Names: []string{"opt.test"}, Certificate: "c", TLS: Policy{ClientAuth: ClientAuthOptional, ClientCAs: roots}},
			{Names: []string{"none.test"}, Certificate: "c"},
		},
	}))
	addr, states := serveTLSStates(t, sel.TLSConfig())

	dial := func(name string, c *tls.Certificate) (*tls.Conn, error) {
		cfg := clientConfig(servers.pool, name)
		if c != nil {
			// Sent whatever the server says it accepts: crypto/tls's
			// own choice would withhold a chain the server's CA list
			// does not name.
			cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c, nil }
		}
		return dialTLS(t, addr, cfg)
	}
	for _, tc := range []struct {
		host     string
		cert     *tls.Certificate
		refusal  string // the alert the client gets, "" if admitted
		verified bool
	}{
		{"req.test", &withChain, "", true},
		{"req.test", nil, "certificate required", false},
		{"req.test", &leaf, "unknown certificate authority", false}, // no intermediate, and none fetched
		{"req.test", &stranger, "unknown certificate authority", false},
		{"opt.test", &withChain, "", true},
		{"opt.test", nil, "", false},
		{"opt.test", &stranger, "unknown certificate authority", false},
		{"none.test", nil, "", false},
		{"none.test", &stranger, "", false}, // not asked for, not sent
	} {
		name := tc.host + "/"
		if tc.cert != nil {
			name += tc.cert.Leaf.Subject.CommonName + "/" + strconv.Itoa(len(tc.cert.Certificate))
		}
		t.Run(name, func(t *testing.T) {
			_, err := dial(tc.host, tc.cert)
			if tc.refusal != "" {
				require.ErrorContains(t, err, "remote error: tls: "+tc.refusal)
				return
			}
			require.NoError(t, err)
			select {
			case st := <-states:
				assert.Equal(t, tc.verified, len(st.VerifiedChains) > 0, "server verified a chain")
				if tc.verified {
					chain := st.VerifiedChains[0]
					assert.True(t, chain[len(chain)-1].Equal(clients.cert), "the chain ends at the configured root")
				}
			case <-time.After(ioTimeout):
				t.Fatal("no server state")
			}
		})
	}
}
