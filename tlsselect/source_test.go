package tlsselect

import (
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
		{"cert file unreadable", Certificate{CertFile: dir, KeyFile: goodKey}, CodeCertificateFileUnreadable, "certificates[0].certFile"},
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
		CodeHostNameIPLiteral + " hosts[0].names[3]",
	}, got)
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
