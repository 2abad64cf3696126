package tlsselect

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneCert is a Config serving cert c for a.test.
func oneCert(c Certificate) Config {
	c.ID = "a"
	return Config{Certificates: []Certificate{c}, Hosts: []Host{{Names: []string{"a.test"}, Certificate: "a"}}}
}

// TestCertificateRefusals: each way a certificate cannot be served is a
// refusal with its own code and the path of the field to fix.
func TestCertificateRefusals(t *testing.T) {
	dir := t.TempDir()
	ca := newPKI(t, "root")
	now := time.Now()
	good := ca.issue(t, leafOpts{names: []string{"a.test"}})
	goodCert, goodKey := writePEM(t, dir, "good", good)
	other := ca.issue(t, leafOpts{names: []string{"a.test"}})
	_, otherKey := writePEM(t, dir, "other", other)
	future := ca.issue(t, leafOpts{names: []string{"a.test"}, notBefore: now.Add(time.Hour), notAfter: now.Add(48 * time.Hour)})
	futureCert, futureKey := writePEM(t, dir, "future", future)
	past := ca.issue(t, leafOpts{names: []string{"a.test"}, notBefore: now.Add(-48 * time.Hour), notAfter: now.Add(-time.Hour)})
	pastCert, pastKey := writePEM(t, dir, "past", past)
	garbage := filepath.Join(dir, "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("-----BEGIN NOTHING-----\nAAAA\n-----END NOTHING-----\n"), 0o600))
	mismatched := good
	mismatched.PrivateKey = other.PrivateKey

	for _, tc := range []struct {
		name string
		cert Certificate
		code string
		path string
	}{
		{"cert file missing", Certificate{CertFile: filepath.Join(dir, "nope.crt"), KeyFile: goodKey}, CodeCertificateFileMissing, "certificates[0].certFile"},
		{"key file missing", Certificate{CertFile: goodCert, KeyFile: filepath.Join(dir, "nope.key")}, CodeCertificateFileMissing, "certificates[0].keyFile"},
		{"cert file unreadable", Certificate{CertFile: filepath.Join(goodKey, "x"), KeyFile: goodKey}, CodeCertificateFileUnreadable, "certificates[0].certFile"},
		{"cert file a directory", Certificate{CertFile: dir, KeyFile: goodKey}, CodeFileNotRegular, "certificates[0].certFile"},
		{"cert not PEM", Certificate{CertFile: garbage, KeyFile: goodKey}, CodeCertificateInvalid, "certificates[0].certFile"},
		{"key not PEM", Certificate{CertFile: goodCert, KeyFile: garbage}, CodeCertificateKeyInvalid, "certificates[0].keyFile"},
		{"key not matching", Certificate{CertFile: goodCert, KeyFile: otherKey}, CodeCertificateKeyMismatch, "certificates[0].keyFile"},
		{"not yet valid", Certificate{CertFile: futureCert, KeyFile: futureKey}, CodeCertificateNotYetValid, "certificates[0].certFile"},
		{"expired", Certificate{CertFile: pastCert, KeyFile: pastKey}, CodeCertificateExpired, "certificates[0].certFile"},
		{"no files", Certificate{}, CodeCertificateFileMissing, "certificates[0].certFile"},
		{"files and source", Certificate{CertFile: goodCert, KeyFile: goodKey, Source: source(good)}, CodeCertificateSourceConflict, "certificates[0].source"},
		{"source fails", Certificate{Source: &staticSource{err: errTest}}, CodeCertificateSourceFailed, "certificates[0].source"},
		{"source returns nothing", Certificate{Source: &staticSource{}}, CodeCertificateInvalid, "certificates[0].source"},
		{"source key not matching", Certificate{Source: source(mismatched)}, CodeCertificateKeyMismatch, "certificates[0].source"},
		{"source expired", Certificate{Source: source(past)}, CodeCertificateExpired, "certificates[0].source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl, err := New(oneCert(tc.cert))
			require.Error(t, err)
			assert.Nil(t, tbl)
			ps := problemsOf(err)
			require.Len(t, ps, 1, "%v", err)
			assert.Equal(t, tc.code, ps[0].Code, "%v", err)
			assert.Equal(t, tc.path, ps[0].Path, "%v", err)
		})
	}

	t.Run("every problem at once", func(t *testing.T) {
		cfg := Config{
			Certificates: []Certificate{
				{ID: "a", CertFile: pastCert, KeyFile: pastKey},
				{ID: "b", CertFile: goodCert, KeyFile: otherKey},
				{ID: "c", CertFile: goodCert, KeyFile: goodKey},
			},
			Hosts: []Host{{Names: []string{"a.test"}, Certificate: "c"}},
		}
		_, err := New(cfg)
		var codes []string
		for _, p := range problemsOf(err) {
			codes = append(codes, p.Code+" "+p.Path)
		}
		assert.Equal(t, []string{
			CodeCertificateExpired + " certificates[0].certFile",
			CodeCertificateKeyMismatch + " certificates[1].keyFile",
		}, codes)
	})

	t.Run("a source's own certificate is not modified", func(t *testing.T) {
		c := good
		c.Leaf = nil
		src := &staticSource{cert: &c}
		cfg := oneCert(Certificate{Source: src})
		cfg.Hosts = append(cfg.Hosts, Host{Names: []string{"*.a.test", "b.test"}, Certificate: "a"})
		tbl := mustTable(t, cfg)
		assert.Nil(t, c.Leaf)
		assert.Equal(t, []SourceRequest{{ID: "a", Names: []string{"a.test", "*.a.test", "b.test"}}}, src.got)
		assert.True(t, tbl.Select("a.test", TCP).Config.Certificates[0].Leaf.Equal(good.Leaf))
	})
}

// TestCertificateWarnings: a certificate that ends within ExpiryWarning,
// a name its certificate does not cover and an IP literal are served, and
// warned about.
func TestCertificateWarnings(t *testing.T) {
	dir := t.TempDir()
	ca := newPKI(t, "root")
	soon := ca.issue(t, leafOpts{names: []string{"a.test"}, notAfter: time.Now().Add(ExpiryWarning - time.Hour)})
	certFile, keyFile := writePEM(t, dir, "soon", soon)
	cfg := oneCert(Certificate{CertFile: certFile, KeyFile: keyFile})
	cfg.Hosts[0].Names = append(cfg.Hosts[0].Names, "b.test", "*.a.test", "192.0.2.1")
	tbl := mustTable(t, cfg)
	var got []string
	for _, w := range tbl.Warnings() {
		got = append(got, w.Code+" "+w.Path)
	}
	assert.Equal(t, []string{
		CodeCertificateExpiring + " certificates[0].certFile",
		CodeHostNameNotCovered + " hosts[0].names[1]",
		CodeHostNameNotCovered + " hosts[0].names[2]",
	}, got, "an IP literal is no server name and is left to noSni")
	assert.Equal(t, MatchExact, tbl.Select("a.test", TCP).Match)

	long := ca.issue(t, leafOpts{names: []string{"a.test"}, notAfter: time.Now().Add(ExpiryWarning + time.Hour)})
	tbl = mustTable(t, oneCert(Certificate{Source: source(long)}))
	assert.Empty(t, tbl.Warnings())
}

// TestCertificateFileReplaced: a certificate file replaced on disk is
// served by the handshakes after the next Table is built and swapped in;
// a connection made before keeps working.
func TestCertificateFileReplaced(t *testing.T) {
	dir := t.TempDir()
	ca := newPKI(t, "root")
	first := ca.issue(t, leafOpts{names: []string{"a.test"}})
	second := ca.issue(t, leafOpts{names: []string{"a.test"}})
	certFile, keyFile := writePEM(t, dir, "a", first)
	cfg := oneCert(Certificate{CertFile: certFile, KeyFile: keyFile})
	sel := NewSelector(mustTable(t, cfg))
	addr := serveTLS(t, sel.TLSConfig())

	open, err := dialTLS(t, addr, clientConfig(ca.pool, "a.test"))
	require.NoError(t, err)
	require.True(t, leafOf(open).Equal(first.Leaf))

	writePEM(t, dir, "a", second)
	c, err := dialTLS(t, addr, clientConfig(ca.pool, "a.test"))
	require.NoError(t, err)
	assert.True(t, leafOf(c).Equal(first.Leaf), "the published table keeps its certificate until the next one")

	sel.Swap(mustTable(t, cfg))
	c, err = dialTLS(t, addr, clientConfig(ca.pool, "a.test"))
	require.NoError(t, err)
	assert.True(t, leafOf(c).Equal(second.Leaf), "the next table serves the new file")

	require.NoError(t, open.SetDeadline(time.Now().Add(ioTimeout)))
	require.NoError(t, echo(open), "the connection made before still works")
	assert.True(t, leafOf(open).Equal(first.Leaf))
}

// TestChainSent: a chain file's intermediates are sent, so a client that
// trusts only the root verifies the leaf.
func TestChainSent(t *testing.T) {
	dir := t.TempDir()
	root := newPKI(t, "root")
	inter := root.sub(t, "intermediate")
	leaf := inter.issue(t, leafOpts{names: []string{"a.test"}})
	leaf.Certificate = append(leaf.Certificate, inter.cert.Raw)
	certFile, keyFile := writePEM(t, dir, "a", leaf)
	sel := NewSelector(mustTable(t, oneCert(Certificate{CertFile: certFile, KeyFile: keyFile})))
	c, err := dialTLS(t, serveTLS(t, sel.TLSConfig()), clientConfig(root.pool, "a.test"))
	require.NoError(t, err)
	assert.Len(t, c.ConnectionState().PeerCertificates, 2)
	assert.Len(t, c.ConnectionState().VerifiedChains[0], 3)
}

// TestCertificatePending: a Source that returns ErrPending does not refuse
// the Config. Its hosts get the default certificate under their own
// policy, or a refusal when unknown names are refused or there is no
// default to serve, with ReasonPending; the warning names the
// certificate.
func TestCertificatePending(t *testing.T) {
	ca := newPKI(t, "root")
	month := time.Now().Add(30 * 24 * time.Hour)
	dflt := ca.issue(t, leafOpts{names: []string{"default.test"}, notAfter: month})
	served := ca.issue(t, leafOpts{names: []string{"b.test"}, notAfter: month})
	pending := &staticSource{err: fmt.Errorf("%w: an order is under way", ErrPending)}
	config := func(unknown Fallback, defaultID string) Config {
		return Config{
			Certificates: []Certificate{
				{ID: "a", Source: pending},
				{ID: "b", Source: source(served)},
				{ID: "d", Source: source(dflt)},
			},
			Hosts: []Host{
				{Names: []string{"a.test"}, Certificate: "a", TLS: Policy{HTTP1Only: true, HTTP3: true}},
				{Names: []string{"b.test"}, Certificate: "b"},
			},
			DefaultCertificate: defaultID,
			UnknownSNI:         unknown,
		}
	}

	t.Run("default certificate, host policy", func(t *testing.T) {
		tbl := mustTable(t, config(FallbackDefault, "d"))
		ws := tbl.Warnings()
		require.Len(t, ws, 1, "only the pending warning: no name is said to be uncovered")
		assert.Equal(t, CodeCertificatePending, ws[0].Code)
		assert.Equal(t, "certificates[0].source", ws[0].Path)
		assert.Contains(t, ws[0].Msg, "an order is under way")

		s := tbl.Select("A.test", TCP)
		assert.Equal(t, 0, s.Host)
		assert.Equal(t, MatchDefault, s.Match)
		assert.Equal(t, ReasonPending, s.Reason)
		require.Len(t, s.Config.Certificates, 1)
		assert.True(t, s.Config.Certificates[0].Leaf.Equal(dflt.Leaf))
		assert.Equal(t, []string{"http/1.1"}, s.Config.NextProtos, "the host's policy, not DefaultTLS")
		q := tbl.Select("a.test", QUIC)
		assert.Equal(t, ReasonPending, q.Reason)
		assert.Equal(t, []string{"h3"}, q.Config.NextProtos)

		b := tbl.Select("b.test", TCP)
		assert.Equal(t, MatchExact, b.Match, "other hosts are untouched")
		assert.True(t, b.Config.Certificates[0].Leaf.Equal(served.Leaf))

		sel := NewSelector(tbl)
		c, err := dialTLS(t, serveTLS(t, sel.TLSConfig()), clientConfig(ca.pool, "default.test", "h2", "http/1.1"))
		require.NoError(t, err)
		assert.True(t, leafOf(c).Equal(dflt.Leaf))
		assert.Equal(t, uint64(0), sel.Stats().Defaulted.Pending, "default.test is an unknown name, not a pending one")
		c, err = dialTLS(t, serveTLS(t, sel.TLSConfig()), &tls.Config{ServerName: "a.test", InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
		require.NoError(t, err)
		assert.True(t, leafOf(c).Equal(dflt.Leaf))
		assert.Equal(t, "http/1.1", c.ConnectionState().NegotiatedProtocol)
		assert.Equal(t, Reasons{UnknownSNI: 1, Pending: 1}, sel.Stats().Defaulted)
	})

	for _, tc := range []struct {
		name      string
		unknown   Fallback
		defaultID string
	}{
		{"unknown names refused", FallbackRefuse, "d"},
		{"no default certificate", FallbackDefault, ""},
		{"the default certificate pending", FallbackDefault, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := mustTable(t, config(tc.unknown, tc.defaultID))
			for _, tr := range []Transport{TCP, QUIC} {
				s := tbl.Select("a.test", tr)
				assert.Equal(t, 0, s.Host)
				assert.Equal(t, MatchRefused, s.Match)
				assert.Equal(t, ReasonPending, s.Reason)
				assert.Empty(t, s.Config.Certificates)
			}
			assert.Equal(t, MatchExact, tbl.Select("b.test", TCP).Match)

			sel := NewSelector(tbl)
			_, err := dialTLS(t, serveTLS(t, sel.TLSConfig()), clientConfig(ca.pool, "a.test"))
			require.ErrorContains(t, err, "unrecognized name")
			assert.Equal(t, uint64(1), sel.Stats().Refused.Pending)
		})
	}

	t.Run("a host on the pending default certificate", func(t *testing.T) {
		cfg := config(FallbackDefault, "a")
		cfg.Hosts = append(cfg.Hosts, Host{Names: []string{"c.test"}})
		tbl := mustTable(t, cfg)
		s := tbl.Select("c.test", TCP)
		assert.Equal(t, MatchRefused, s.Match)
		assert.Equal(t, ReasonPending, s.Reason)
		assert.Equal(t, ReasonUnknownSNI, tbl.Select("x.test", TCP).Reason)
		assert.Equal(t, MatchRefused, tbl.Select("", TCP).Match)
	})

	t.Run("other errors still refuse", func(t *testing.T) {
		_, err := New(oneCert(Certificate{Source: &staticSource{err: errors.New("pending, but not ErrPending")}}))
		require.Error(t, err)
		assert.Equal(t, CodeCertificateSourceFailed, problemsOf(err)[0].Code)
	})
}

func TestStaticSelfSigned(t *testing.T) {
	c, err := SelfSigned(time.Hour, "localhost", "127.0.0.1")
	require.NoError(t, err)
	assert.Equal(t, []string{"localhost"}, c.Leaf.DNSNames)
	assert.Len(t, c.Leaf.IPAddresses, 1)
	assert.WithinDuration(t, time.Now().Add(time.Hour), c.Leaf.NotAfter, time.Minute)
	table, err := New(Config{
		Certificates: []Certificate{{ID: "self", Source: Static(c)}},
		Hosts:        []Host{{Names: []string{"localhost"}, Certificate: "self"}},
	})
	require.NoError(t, err)
	sel := table.Select("localhost", TCP)
	require.NotNil(t, sel.Config)
	assert.Equal(t, c.Leaf.Raw, sel.Config.Certificates[0].Leaf.Raw)
}
