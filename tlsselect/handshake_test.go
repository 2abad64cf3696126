package tlsselect

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixture is a set of hosts with certificates of their own from one CA.
type fixture struct {
	ca                    *pki
	a, b, wild, idn, dflt tls.Certificate
	tls13, h1, h3         tls.Certificate
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	ca := newPKI(t, "test root")
	f := &fixture{ca: ca}
	f.a = ca.issue(t, leafOpts{names: []string{"a.test"}})
	f.b = ca.issue(t, leafOpts{names: []string{"b.test"}})
	f.wild = ca.issue(t, leafOpts{names: []string{"*.wild.test"}})
	f.idn = ca.issue(t, leafOpts{names: []string{"xn--bcher-kva.test"}})
	f.dflt = ca.issue(t, leafOpts{names: []string{"default.test"}})
	f.tls13 = ca.issue(t, leafOpts{names: []string{"tls13.test"}})
	f.h1 = ca.issue(t, leafOpts{names: []string{"h1.test"}})
	f.h3 = ca.issue(t, leafOpts{names: []string{"h3.test", "h3b.test"}})
	return f
}

// config returns the fixture's Config with the given fallbacks.
func (f *fixture) config(unknown, noSNI Fallback) Config {
	return Config{
		Certificates: []Certificate{
			{ID: "a", Source: source(f.a)},
			{ID: "b", Source: source(f.b)},
			{ID: "wild", Source: source(f.wild)},
			{ID: "idn", Source: source(f.idn)},
			{ID: "default", Source: source(f.dflt)},
			{ID: "tls13", Source: source(f.tls13)},
			{ID: "h1", Source: source(f.h1)},
			{ID: "h3", Source: source(f.h3)},
		},
		Hosts: []Host{
			{Names: []string{"a.test"}, Certificate: "a"},
			{Names: []string{"B.Test."}, Certificate: "b"},
			{Names: []string{"*.wild.test"}, Certificate: "wild"},
			{Names: []string{"bücher.test"}, Certificate: "idn"},
			{Names: []string{"tls13.test"}, Certificate: "tls13", TLS: Policy{MinVersion: VersionTLS13}},
			{Names: []string{"h1.test"}, Certificate: "h1", TLS: Policy{HTTP1Only: true}},
			{Names: []string{"h3.test"}, Certificate: "h3", TLS: Policy{HTTP3: true}},
			{Names: []string{"h3b.test"}, Certificate: "h3"},
		},
		DefaultCertificate: "default",
		UnknownSNI:         unknown,
		NoSNI:              noSNI,
	}
}

func leafOf(c *tls.Conn) *x509.Certificate {
	return c.ConnectionState().PeerCertificates[0]
}

// TestHandshakeByName: a real crypto/tls client gets each host's
// certificate by SNI, whatever the case, a wildcard's for one label under
// it, the punycode host's for its A-label, and the default certificate for
// no SNI and unknown names.
func TestHandshakeByName(t *testing.T) {
	f := newFixture(t)
	sel := NewSelector(mustTable(t, f.config("", "")))
	addr := serveTLS(t, sel.TLSConfig())
	for _, tc := range []struct {
		sni  string
		want tls.Certificate
	}{
		{"a.test", f.a},
		{"A.TEST", f.a},
		{"b.test", f.b},
		{"x.wild.test", f.wild},
		{"X.Wild.Test", f.wild},
		{"xn--bcher-kva.test", f.idn},
		{"wild.test", f.dflt},     // a wildcard does not match its parent
		{"x.y.wild.test", f.dflt}, // nor two labels under it
		{"nobody.test", f.dflt},
	} {
		t.Run(tc.sni, func(t *testing.T) {
			cfg := clientConfig(f.ca.pool, tc.sni)
			// The default certificate does not cover the name asked for.
			cfg.InsecureSkipVerify = tc.want.Leaf == f.dflt.Leaf
			c, err := dialTLS(t, addr, cfg)
			require.NoError(t, err)
			assert.True(t, leafOf(c).Equal(tc.want.Leaf), "got %v", leafOf(c).Subject)
		})
	}
	t.Run("no SNI", func(t *testing.T) {
		// A client dialling an IP address sends no server name.
		c, err := dialTLS(t, addr, &tls.Config{InsecureSkipVerify: true})
		require.NoError(t, err)
		assert.True(t, leafOf(c).Equal(f.dflt.Leaf))
	})
	st := sel.Stats()
	assert.Equal(t, Reasons{NoSNI: 1, UnknownSNI: 3}, st.Defaulted)
	assert.Equal(t, Reasons{}, st.Refused)
}

// alertRecorder keeps what the server sent.
type alertRecorder struct {
	net.Conn
	mu  sync.Mutex
	got []byte
}

func (r *alertRecorder) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.mu.Lock()
	r.got = append(r.got, p[:n]...)
	r.mu.Unlock()
	return n, err
}

// TestRefusalIsUnrecognizedName: with the refuse fallbacks, the server's
// only answer to an unknown or absent server name is one plaintext TLS
// alert record, fatal, unrecognized_name (112), and it is counted.
func TestRefusalIsUnrecognizedName(t *testing.T) {
	f := newFixture(t)
	sel := NewSelector(mustTable(t, f.config(FallbackRefuse, FallbackRefuse)))
	addr := serveTLS(t, sel.TLSConfig())
	for _, tc := range []struct {
		name string
		cfg  *tls.Config
	}{
		{"unknown SNI", clientConfig(f.ca.pool, "nobody.test")},
		{"no SNI", &tls.Config{InsecureSkipVerify: true}},
		{"unknown SNI TLS 1.2", &tls.Config{RootCAs: f.ca.pool, ServerName: "nobody.test", MaxVersion: tls.VersionTLS12}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := net.DialTimeout("tcp", addr, ioTimeout)
			require.NoError(t, err)
			rec := &alertRecorder{Conn: raw}
			c := tls.Client(rec, tc.cfg)
			defer c.Close()
			require.NoError(t, c.SetDeadline(time.Now().Add(ioTimeout)))
			err = c.Handshake()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "remote error: tls: unrecognized name")
			rec.mu.Lock()
			defer rec.mu.Unlock()
			// type alert (21), any record version, length 2, fatal (2),
			// unrecognized_name (112), and nothing else.
			require.Len(t, rec.got, 7, "server sent % x", rec.got)
			assert.Equal(t, byte(21), rec.got[0])
			assert.Equal(t, []byte{0, 2, 2, 112}, rec.got[3:])
		})
	}
	assert.Equal(t, Reasons{NoSNI: 1, UnknownSNI: 2}, sel.Stats().Refused)
	assert.Equal(t, Reasons{}, sel.Stats().Defaulted)

	// A known name is still served.
	_, err := dialTLS(t, addr, clientConfig(f.ca.pool, "a.test"))
	require.NoError(t, err)
}

// TestNoDefaultCertificateRefuses: the default fallback without a default
// certificate refuses too.
func TestNoDefaultCertificateRefuses(t *testing.T) {
	f := newFixture(t)
	sel := NewSelector(mustTable(t, Config{
		Certificates: []Certificate{{ID: "a", Source: source(f.a)}},
		Hosts:        []Host{{Names: []string{"a.test"}, Certificate: "a"}},
	}))
	addr := serveTLS(t, sel.TLSConfig())
	_, err := dialTLS(t, addr, clientConfig(f.ca.pool, "nobody.test"))
	require.ErrorContains(t, err, "unrecognized name")
	assert.Equal(t, uint64(1), sel.Stats().Refused.UnknownSNI)
}

// TestNoTable: a Selector without a Table ends handshakes with an
// internal error and counts them.
func TestNoTable(t *testing.T) {
	var sel Selector
	addr := serveTLS(t, sel.TLSConfig())
	_, err := dialTLS(t, addr, &tls.Config{InsecureSkipVerify: true})
	require.ErrorContains(t, err, "internal error")
	assert.Equal(t, uint64(1), sel.Stats().NoTable)
}

// TestMinVersion: a TLS 1.2 client is refused by a TLS-1.3-only host and
// served by the others.
func TestMinVersion(t *testing.T) {
	f := newFixture(t)
	sel := NewSelector(mustTable(t, f.config("", "")))
	addr := serveTLS(t, sel.TLSConfig())
	old := func(name string) *tls.Config {
		c := clientConfig(f.ca.pool, name)
		c.MaxVersion = tls.VersionTLS12
		return c
	}
	_, err := dialTLS(t, addr, old("tls13.test"))
	require.ErrorContains(t, err, "protocol version not supported")

	c, err := dialTLS(t, addr, old("a.test"))
	require.NoError(t, err)
	assert.Equal(t, uint16(tls.VersionTLS12), c.ConnectionState().Version)

	c, err = dialTLS(t, addr, clientConfig(f.ca.pool, "tls13.test"))
	require.NoError(t, err)
	assert.Equal(t, uint16(tls.VersionTLS13), c.ConnectionState().Version)
}

// TestALPN: an HTTP/1.1-only host negotiates http/1.1 with a client that
// offers h2 first; other hosts negotiate h2; h3 is never offered on TCP,
// not even for an HTTP/3 host.
func TestALPN(t *testing.T) {
	f := newFixture(t)
	sel := NewSelector(mustTable(t, f.config("", "")))
	addr := serveTLS(t, sel.TLSConfig())
	for _, tc := range []struct {
		sni  string
		want string
	}{
		{"h1.test", "http/1.1"},
		{"a.test", "h2"},
		{"h3.test", "h2"},
	} {
		c, err := dialTLS(t, addr, clientConfig(f.ca.pool, tc.sni, "h2", "http/1.1"))
		require.NoError(t, err, tc.sni)
		assert.Equal(t, tc.want, c.ConnectionState().NegotiatedProtocol, tc.sni)
	}
	_, err := dialTLS(t, addr, clientConfig(f.ca.pool, "h3.test", "h3"))
	require.ErrorContains(t, err, "no application protocol")
}

// TestSwapKeepsOpenConnections: a new Table serves the next handshake; a
// connection made on the old one keeps working.
func TestSwapKeepsOpenConnections(t *testing.T) {
	f := newFixture(t)
	sel := NewSelector(mustTable(t, f.config("", "")))
	addr := serveTLS(t, sel.TLSConfig())
	old, err := dialTLS(t, addr, clientConfig(f.ca.pool, "a.test"))
	require.NoError(t, err)

	cfg := f.config("", "")
	cfg.Certificates[0].Source = source(f.b) // "a" is now b's certificate
	cfg.Hosts[0].Names = []string{"b.test"}
	cfg.Hosts[1].Names = []string{"a.test"}
	prev := sel.Swap(mustTable(t, cfg))
	require.NotNil(t, prev)

	c, err := dialTLS(t, addr, clientConfig(f.ca.pool, "b.test"))
	require.NoError(t, err)
	assert.True(t, leafOf(c).Equal(f.b.Leaf))
	require.NoError(t, echo(old))
	assert.True(t, leafOf(old).Equal(f.a.Leaf))
}

var errTest = errors.New("test source failure")
