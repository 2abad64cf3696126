package tlsselect

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPreviousMatchesFresh: a Table built with Previous is the one built
// without it, through renamed and swapped hosts, certificates changed on
// disk under the same file names, hosts moved to another certificate, and
// a clock that passes a certificate's end.
func TestPreviousMatchesFresh(t *testing.T) {
	p := newPKI(t, "root")
	dir := t.TempDir()
	now := time.Now()
	soon := p.issue(t, leafOpts{names: []string{"a.test", "*.w.test"}, notBefore: now.Add(-time.Hour), notAfter: now.Add(24 * time.Hour)})
	other := p.issue(t, leafOpts{names: []string{"b.test"}, notBefore: now.Add(-time.Hour), notAfter: now.Add(365 * 24 * time.Hour)})
	aCert, aKey := writePEM(t, dir, "a", soon)
	bCert, bKey := writePEM(t, dir, "b", other)
	clock := now
	cfg := Config{
		Certificates:       []Certificate{{ID: "a", CertFile: aCert, KeyFile: aKey}, {ID: "b", CertFile: bCert, KeyFile: bKey}},
		Hosts:              []Host{{Names: []string{"a.test", "x.test"}}, {Names: []string{"b.test"}, Certificate: "b"}, {Names: []string{"*.w.test", "c.test", "10.0.0.1"}}},
		DefaultCertificate: "a",
		TicketSecret:       make([]byte, MinTicketSecretLen),
		Clock:              func() time.Time { return clock },
	}
	steps := []struct {
		name   string
		change func()
	}{
		{"first", func() {}},
		{"same", func() {}},
		{"renamed", func() { cfg.Hosts[0].Names = []string{"a.test", "y.test"} }},
		{"swapped", func() { cfg.Hosts[0], cfg.Hosts[2] = cfg.Hosts[2], cfg.Hosts[0] }},
		{"other certificate", func() { cfg.Hosts[1].Certificate = "a" }},
		{"files rewritten", func() { writePEM(t, dir, "a", other) }},
		{"files back", func() { writePEM(t, dir, "a", soon) }},
		{"host added", func() { cfg.Hosts = append(cfg.Hosts, Host{Names: []string{"d.test"}}) }},
		{"expired", func() { clock = now.Add(48 * time.Hour) }},
		{"valid again", func() { clock = now }},
	}
	var prev *Table
	for _, s := range steps {
		s.change()
		cfg.Hosts = slices.Clone(cfg.Hosts)
		fresh, errFresh := New(cfg)
		with := cfg
		with.Previous = prev
		got, err := New(with)
		assert.Equal(t, problemsOf(errFresh), problemsOf(err), s.name)
		if errFresh != nil {
			require.Nil(t, got, s.name)
			continue
		}
		require.NotNil(t, got, s.name)
		assert.Equal(t, fresh.Warnings(), got.Warnings(), s.name)
		if prev != nil {
			rewritten := s.name == "files rewritten" || s.name == "files back"
			assert.Equal(t, !rewritten, prev.Certificate("a") == got.Certificate("a"), "%s: a reused", s.name)
		}
		for _, id := range []string{"a", "b"} {
			assert.Equal(t, fresh.Certificate(id).Leaf.Raw, got.Certificate(id).Leaf.Raw, "%s: certificate %s", s.name, id)
		}
		for _, n := range []string{"a.test", "x.test", "y.test", "b.test", "q.w.test", "c.test", "d.test", "none.test", ""} {
			f, g := fresh.Select(n, TCP), got.Select(n, TCP)
			assert.Equal(t, [3]any{f.Host, f.Match, f.Reason}, [3]any{g.Host, g.Match, g.Reason}, "%s: %s", s.name, n)
			assert.Equal(t, f.Config.Certificates[0].Leaf.Raw, g.Config.Certificates[0].Leaf.Raw, "%s: %s", s.name, n)
		}
		prev = got
	}
	assert.Len(t, prev.Warnings(), 5, "a's expiry, and the names a does not cover (c.test, b.test, y.test, d.test)")
}
