package gate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/problem"
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

// clientPKI is two client CAs, X and Y, and a certificate of each.
type clientPKI struct {
	x, y         *testcert.CA
	xLeaf, yLeaf *x509.Certificate
}

func newClientPKI(t testing.TB) clientPKI {
	t.Helper()
	var p clientPKI
	var err error
	p.x, err = testcert.NewCA("client CA X")
	require.NoError(t, err)
	p.y, err = testcert.NewCA("client CA Y")
	require.NoError(t, err)
	xc, err := p.x.Client("alice")
	require.NoError(t, err)
	yc, err := p.y.Client("bob")
	require.NoError(t, err)
	p.xLeaf, p.yLeaf = xc.Leaf, yc.Leaf
	return p
}

// reparsed returns c parsed again from its DER: the same certificate in
// another value, as a session resumed from a ticket or a CA file read
// again by a publish holds it.
func reparsed(t testing.TB, c *x509.Certificate) *x509.Certificate {
	t.Helper()
	out, err := x509.ParseCertificate(c.Raw)
	require.NoError(t, err)
	return out
}

// TestTLSPolicyClientCertificates: the per-request rule for client
// certificates, on handcrafted connection states. A request is served
// when the connection satisfies the host's own requirement against the
// host's own roots, whatever the handshake was for: b requires a
// certificate of CA X, c one of CA Y, d takes one of CA X when given, e
// requires one of CA X and redirects plain HTTP to HTTPS, a asks nothing.
func TestTLSPolicyClientCertificates(t *testing.T) {
	p := newClientPKI(t)
	xRoots := []*x509.Certificate{reparsed(t, p.x.Cert)}
	var steps []Step
	tgt := &forwarded{}
	g, err := New(Config{
		TrustedProxies:      mustPrefix("10.0.0.1/32"),
		TrustForwardedProto: true,
		Tracer:              &Tracer{OnStep: func(s Step) { steps = append(steps, s) }},
		Hosts: []Host{
			{Names: []string{"a.test"}, Routes: []Route{{Prefix: "/", Target: tgt}}},
			{Names: []string{"b.test"}, TLS: TLSPolicy{RequireClientCert: true, ClientCAs: xRoots, HTTP3: true}, Routes: []Route{{Prefix: "/", Target: tgt}}},
			{Names: []string{"c.test"}, TLS: TLSPolicy{RequireClientCert: true, ClientCAs: []*x509.Certificate{p.y.Cert}}, Routes: []Route{{Prefix: "/", Target: tgt}}},
			{Names: []string{"d.test"}, TLS: TLSPolicy{ClientCAs: xRoots, HTTP3: true}, Routes: []Route{{Prefix: "/", Target: tgt}}},
			{Names: []string{"e.test"}, TLS: TLSPolicy{RequireClientCert: true, ClientCAs: xRoots}, HTTPSRedirect: HTTPSRedirect{Enabled: true},
				Routes: []Route{{Prefix: "/", Target: tgt}}},
		},
	})
	require.NoError(t, err)

	other, err := testcert.NewCA("client CA X") // the same name, another key
	require.NoError(t, err)
	none := &tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true}
	state := func(chains ...[]*x509.Certificate) *tls.ConnectionState {
		cs := *none
		cs.PeerCertificates = []*x509.Certificate{p.xLeaf}
		cs.VerifiedChains = chains
		return &cs
	}
	chainX := []*x509.Certificate{p.xLeaf, p.x.Cert}
	viaX := state(chainX)
	// Resumed: the chain as crypto/tls rebuilds it from the ticket.
	resumedX := state([]*x509.Certificate{reparsed(t, p.xLeaf), reparsed(t, p.x.Cert)})
	viaY := state([]*x509.Certificate{p.yLeaf, p.y.Cert})
	unverified := state()                                                 // presented, the handshake did not verify it (no pool asked)
	secondX := state([]*x509.Certificate{p.xLeaf, other.Cert}, chainX)    // X's root is on the second chain
	xNotRoot := state([]*x509.Certificate{p.xLeaf, p.x.Cert, other.Cert}) // X inside a chain that ends elsewhere
	emptyChain := state([]*x509.Certificate{})                            // no root at all
	nameOnly := state([]*x509.Certificate{p.xLeaf, other.Cert})           // a root with X's name and another key

	const (
		required    = "client certificate required by host"
		notVerified = "client certificate not verified for host"
	)
	tests := []struct {
		name   string
		host   string
		tls    *tls.ConnectionState
		h3     bool
		remote string
		header string
		status int
		reason string
	}{
		{name: "no requirement, no certificate", host: "a.test", tls: none, status: 200},
		{name: "no requirement, a certificate of another pool", host: "a.test", tls: viaY, status: 200},
		{name: "no requirement, an unverified certificate", host: "a.test", tls: unverified, status: 200},
		{name: "required, none", host: "b.test", tls: none, status: 421, reason: required},
		{name: "required, verified against X", host: "b.test", tls: viaX, status: 200},
		{name: "required, verified against X, resumed", host: "b.test", tls: resumedX, status: 200},
		{name: "required, a spelling of the name", host: "B.TEST.:443", tls: none, status: 421, reason: required},
		{name: "required, verified against Y", host: "b.test", tls: viaY, status: 421, reason: notVerified},
		{name: "required, presented, unverified", host: "b.test", tls: unverified, status: 421, reason: notVerified},
		{name: "required, X on the second chain", host: "b.test", tls: secondX, status: 200},
		{name: "required, X not the root", host: "b.test", tls: xNotRoot, status: 421, reason: notVerified},
		{name: "required, an empty chain", host: "b.test", tls: emptyChain, status: 421, reason: notVerified},
		{name: "required, a root named like X", host: "b.test", tls: nameOnly, status: 421, reason: notVerified},
		{name: "required of Y, verified against X", host: "c.test", tls: viaX, status: 421, reason: notVerified},
		{name: "required of Y, verified against Y", host: "c.test", tls: viaY, status: 200},
		{name: "optional, none", host: "d.test", tls: none, status: 200},
		{name: "optional, verified against X", host: "d.test", tls: viaX, status: 200},
		{name: "optional, verified against Y", host: "d.test", tls: viaY, status: 421, reason: notVerified},
		{name: "optional, presented, unverified", host: "d.test", tls: unverified, status: 421, reason: notVerified},
		{name: "HTTP/3 without r.TLS, required", host: "b.test", h3: true, status: 421, reason: required},
		{name: "HTTP/3, required, verified against X", host: "b.test", h3: true, tls: viaX, status: 200},
		{name: "HTTP/3 without r.TLS, optional", host: "d.test", h3: true, status: 200},
		{name: "plain HTTP, required", host: "b.test", status: 421, reason: required},
		{name: "plain HTTP, optional", host: "d.test", status: 200},
		{name: "plain HTTP, required, HTTPS redirect", host: "e.test", status: 308},
		{name: "plain HTTP, required, HTTPS redirect, proxy says https", host: "e.test", remote: "10.0.0.1:5000", header: "X-Forwarded-Proto: https\r\n", status: 421, reason: required},
		{name: "plain HTTP, required, proxy says https", host: "b.test", remote: "10.0.0.1:5000", header: "X-Forwarded-Proto: https\r\n", status: 421, reason: required},
	}
	w := newNopWriter()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			remote := cmpOr(tt.remote, "192.0.2.10:5000")
			r := readRequest(t, "GET / HTTP/1.1\r\nHost: "+tt.host+"\r\n"+tt.header+"\r\n", remote)
			r.TLS = tt.tls
			if tt.h3 {
				r.ProtoMajor, r.ProtoMinor = 3, 0
				r = r.WithContext(WithConnInfo(r.Context(), &ConnInfo{HTTP3: true, TLSVersion: tls.VersionTLS13, ALPN: "h3"}))
			}
			w.reset()
			steps, tgt.n = steps[:0], 0
			g.ServeHTTP(w, r)
			assert.Equal(t, tt.status, w.status)
			assert.Equal(t, tt.status == 200, tgt.n == 1, "forwarded")
			var tlsStep *Step
			for i := range steps {
				if steps[i].Kind == StepTLS {
					tlsStep = &steps[i]
				}
			}
			if tt.status == 421 {
				require.NotNil(t, tlsStep, "a TLS step")
				assert.Equal(t, tt.reason, tlsStep.Reason)
				assert.Equal(t, 421, tlsStep.Status)
			} else if tlsStep != nil {
				assert.Equal(t, "ok", tlsStep.Reason)
			}
		})
	}
}

// TestTLSPolicyClientCAsChecked: a requirement without roots, and a root
// that is nil or was never parsed, are refused at their paths.
func TestTLSPolicyClientCAsChecked(t *testing.T) {
	ok := new(forwarded)
	_, err := New(Config{Hosts: []Host{
		{Names: []string{"a.test"}, TLS: TLSPolicy{RequireClientCert: true}, Routes: []Route{{Prefix: "/", Target: ok}}},
		{Names: []string{"b.test"}, TLS: TLSPolicy{ClientCAs: []*x509.Certificate{nil, {}}}, Routes: []Route{{Prefix: "/", Target: ok}}},
	}})
	assert.Equal(t, []string{
		CodeHostTLSClientCAsMissing + " hosts[0].tls.clientCAs",
		CodeHostTLSClientCAsMissing + " hosts[1].tls.clientCAs[0]",
		CodeHostTLSClientCAsMissing + " hosts[1].tls.clientCAs[1]",
	}, problem.CodePaths(err))
}

// TestClientCertificateAllocations: the client certificate check
// allocates nothing, served or refused.
func TestClientCertificateAllocations(t *testing.T) {
	p := newClientPKI(t)
	g, err := New(Config{Hosts: []Host{
		{Names: []string{"b.test"}, TLS: TLSPolicy{RequireClientCert: true, ClientCAs: []*x509.Certificate{p.x.Cert}}, Routes: []Route{{Prefix: "/", Target: &forwarded{}}}},
	}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		chain  []*x509.Certificate
		status int
	}{{"verified", []*x509.Certificate{p.xLeaf, reparsed(t, p.x.Cert)}, 200}, {"another pool", []*x509.Certificate{p.yLeaf, p.y.Cert}, 421}} {
		t.Run(tc.name, func(t *testing.T) {
			r := readRequest(t, "GET / HTTP/1.1\r\nHost: b.test\r\n\r\n", "192.0.2.10:5000")
			r.TLS = &tls.ConnectionState{Version: tls.VersionTLS13, PeerCertificates: tc.chain[:1], VerifiedChains: [][]*x509.Certificate{tc.chain}}
			w := newNopWriter()
			g.ServeHTTP(w, r)
			require.Equal(t, tc.status, w.status)
			allocs := testing.AllocsPerRun(200, func() {
				w.reset()
				g.ServeHTTP(w, r)
			})
			assert.Zero(t, allocs)
			assert.Equal(t, tc.status, w.status)
		})
	}
}

// BenchmarkGateDecideClientCert is a forwarded HTTPS request through a
// host with client CAs: "none" is a host without them (the one branch
// every host pays), "verified" a connection whose chain ends in the
// host's root, "refused" one verified against another pool (421).
func BenchmarkGateDecideClientCert(b *testing.B) {
	p := newClientPKI(b)
	tgt := TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {})
	g, err := New(Config{Hosts: []Host{
		{Names: []string{"a.test"}, Routes: []Route{{Prefix: "/", Target: tgt}}},
		{Names: []string{"b.test"}, TLS: TLSPolicy{RequireClientCert: true, ClientCAs: []*x509.Certificate{p.y.Cert, p.x.Cert}}, Routes: []Route{{Prefix: "/", Target: tgt}}},
	}})
	require.NoError(b, err)
	for _, bc := range []struct {
		name, host string
		chain      []*x509.Certificate
		status     int
	}{
		{"none", "a.test", nil, 0},
		{"verified", "b.test", []*x509.Certificate{p.xLeaf, reparsed(b, p.x.Cert)}, 0},
		{"refused", "b.test", []*x509.Certificate{p.xLeaf, p.xLeaf}, 421},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := readRequest(b, "GET / HTTP/1.1\r\nHost: "+bc.host+"\r\n\r\n", "192.0.2.10:5000")
			r.TLS = &tls.ConnectionState{Version: tls.VersionTLS13, HandshakeComplete: true}
			if bc.chain != nil {
				r.TLS.PeerCertificates, r.TLS.VerifiedChains = bc.chain[:1], [][]*x509.Certificate{bc.chain}
			}
			r = r.WithContext(WithConnInfo(r.Context(), &ConnInfo{Peer: netip.MustParseAddrPort(r.RemoteAddr)}))
			w := newNopWriter()
			b.ReportAllocs()
			for b.Loop() {
				w.reset()
				g.ServeHTTP(w, r)
			}
			if w.status != bc.status {
				b.Fatalf("status %d, want %d", w.status, bc.status)
			}
		})
	}
}
