package tlsselect

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/pebbletest"
)

// orderTimeout bounds the wait for one order against pebble: ten times
// what a loaded machine needs.
const orderTimeout = 60 * time.Second

// acmeRig is a pebble and a real gate that answers its HTTP-01 requests
// from a ChallengeStore, on the loopback port pebble validates.
type acmeRig struct {
	pebble *pebbletest.Server
	store  *gate.ChallengeStore
	mu     sync.Mutex
	served []string // tokens the gate answered, in order
}

func newACMERig(t *testing.T) *acmeRig {
	t.Helper()
	r := &acmeRig{store: &gate.ChallengeStore{}}
	g, err := gate.New(gate.Config{Challenges: r.store, Tracer: &gate.Tracer{OnStep: func(s gate.Step) {
		if s.Kind == gate.StepACME && s.Status == http.StatusOK {
			r.mu.Lock()
			r.served = append(r.served, s.Name)
			r.mu.Unlock()
		}
	}}})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: g, ReadHeaderTimeout: ioTimeout}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	r.pebble = pebbletest.Start(t, pebbletest.Options{HTTPPort: ln.Addr().(*net.TCPAddr).Port})
	return r
}

// servedTokens returns the tokens the gate answered.
func (r *acmeRig) servedTokens() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.served)
}

// recordingStore passes Set and Delete to the gate's store and records
// them; with drop, it records Sets without passing them on, so the CA
// finds nothing.
type recordingStore struct {
	inner ChallengeStore
	drop  bool

	mu                               sync.Mutex
	events                           []string // "set TOKEN", "delete TOKEN"
	published                        map[string]bool
	outstanding, most                int
	badDelete, doubleSet, badKeyAuth bool
}

var _ ChallengeStore = (*gate.ChallengeStore)(nil)

func (s *recordingStore) Set(token, keyAuth string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.published == nil {
		s.published = map[string]bool{}
	}
	if s.published[token] {
		s.doubleSet = true
	}
	s.published[token] = true
	s.events = append(s.events, "set "+token)
	s.outstanding++
	s.most = max(s.most, s.outstanding)
	if !strings.HasPrefix(keyAuth, token+".") { // RFC 8555 section 8.1
		s.badKeyAuth = true
	}
	if !s.drop {
		s.inner.Set(token, keyAuth)
	}
}

func (s *recordingStore) Delete(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.published[token] {
		s.badDelete = true
	}
	delete(s.published, token)
	s.events = append(s.events, "delete "+token)
	s.outstanding--
	s.inner.Delete(token)
}

// check asserts that every token set was deleted once, after it was set,
// and returns the tokens set.
func (s *recordingStore) check(t *testing.T) []string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.False(t, s.badDelete, "a token deleted that was not set: %v", s.events)
	assert.False(t, s.doubleSet, "a token set twice: %v", s.events)
	assert.Empty(t, s.published, "tokens left published: %v", s.events)
	assert.False(t, s.badKeyAuth, "key authorizations are token.thumbprint")
	var tokens []string
	for _, e := range s.events {
		if tok, ok := strings.CutPrefix(e, "set "); ok {
			tokens = append(tokens, tok)
		}
	}
	return tokens
}

// acmeManager makes an ACME for the rig's pebble whose OnReady sends on
// the returned channel; mod adjusts its config first.
func (r *acmeRig) manager(t *testing.T, cacheDir string, store ChallengeStore, mod func(*ACMEConfig)) (*ACME, <-chan ACMEReady) {
	t.Helper()
	ready := make(chan ACMEReady, 16)
	cfg := ACMEConfig{
		DirectoryURL: r.pebble.Directory,
		RootCAs:      r.pebble.TLSRoots,
		Email:        "hostmaster@acme.test",
		CacheDir:     cacheDir,
		Challenges:   store,
		OnReady:      func(e ACMEReady) { ready <- e },
		OrderTimeout: orderTimeout,
	}
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewACME(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	return m, ready
}

// acmeTableConfig is a Config with the ACME certificates ids (each for the
// names given) and a default certificate for what is pending.
func acmeTableConfig(m *ACME, dflt tls.Certificate, hosts map[string][]string) Config {
	cfg := Config{
		Certificates:       []Certificate{{ID: "default", Source: source(dflt)}},
		DefaultCertificate: "default",
	}
	for _, id := range slices.Sorted(maps.Keys(hosts)) {
		cfg.Certificates = append(cfg.Certificates, Certificate{ID: id, Source: m})
		cfg.Hosts = append(cfg.Hosts, Host{Names: hosts[id], Certificate: id})
	}
	return cfg
}

// codesOf returns the code and path of each problem.
func codesOf(ws []*ValidationError) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Code+" "+w.Path)
	}
	return out
}

// TestACMEPebble obtains certificates from a real ACME server over
// HTTP-01 answered by a real gate, serves them, restarts from the cache
// without ordering, renews when the clock says so, and retries a failed
// order later.
func TestACMEPebble(t *testing.T) {
	rig := newACMERig(t)
	cacheDir := t.TempDir()
	ca := newPKI(t, "default root")
	dflt := ca.issue(t, leafOpts{names: []string{"default.acme.test"}, notAfter: time.Now().Add(30 * 24 * time.Hour)})
	hosts := map[string][]string{
		"shop": {"shop.acme.test", "www.shop.acme.test"},
		"api":  {"api.acme.test"},
	}
	var shop *x509.Certificate // what the first manager obtained
	var accountKey []byte

	t.Run("obtain and serve", func(t *testing.T) {
		store := &recordingStore{inner: rig.store}
		m, ready := rig.manager(t, cacheDir, store, func(c *ACMEConfig) { c.MaxOrders = 1 })
		cfg := acmeTableConfig(m, dflt, hosts)

		// Before any order: the table is built, the hosts get the
		// default certificate, and the pending ones are warned about.
		tbl := mustTable(t, cfg)
		assert.Equal(t, []string{
			CodeCertificatePending + " certificates[1].source",
			CodeCertificatePending + " certificates[2].source",
		}, codesOf(tbl.Warnings()))
		s := tbl.Select("shop.acme.test", TCP)
		assert.Equal(t, ReasonPending, s.Reason)
		assert.True(t, s.Config.Certificates[0].Leaf.Equal(dflt.Leaf))

		start := time.Now()
		require.NoError(t, m.Start(context.Background()))
		got := map[string]ACMEReady{}
		for range 2 {
			e := waitFor(t, ready, orderTimeout, "OnReady")
			got[e.ID] = e
		}
		t.Logf("two orders, one at a time, in %v", time.Since(start))
		assert.Equal(t, hosts["shop"], got["shop"].Names)
		assert.Equal(t, hosts["api"], got["api"].Names)
		assert.False(t, got["shop"].Renewal)

		tbl = mustTable(t, cfg)
		assert.Empty(t, tbl.Warnings())
		sel := NewSelector(tbl)
		addr := serveTLS(t, sel.TLSConfig())
		for id, names := range hosts {
			for _, name := range names {
				c, err := dialTLS(t, addr, clientConfig(rig.pebble.Issuer, name))
				require.NoError(t, err, "%s: a client that trusts pebble's root", name)
				leaf := leafOf(c)
				assert.Equal(t, names, leaf.DNSNames, id)
				assert.True(t, got[id].NotAfter.Equal(leaf.NotAfter))
				assert.Len(t, c.ConnectionState().VerifiedChains[0], 3, "leaf, pebble's intermediate, its root")
				if id == "shop" {
					shop = leaf
				}
			}
		}
		assert.Equal(t, Stats{}, sel.Stats(), "nothing fell back")

		// Every challenge went through the gate's store: set, fetched
		// by pebble through the gate, deleted.
		tokens := store.check(t)
		assert.Len(t, tokens, 3, "one HTTP-01 challenge per name")
		assert.Equal(t, 0, rig.store.Len())
		assert.ElementsMatch(t, tokens, slices.Compact(slices.Sorted(slices.Values(rig.servedTokens()))),
			"pebble fetched each token through the gate (from several perspectives, so more than once)")
		assert.Equal(t, 2, store.most, "two names of one order at once, never two orders (MaxOrders 1)")

		st := m.Stats()
		assert.Equal(t, uint64(2), st.Orders)
		assert.Equal(t, uint64(2), st.Obtained)
		assert.Equal(t, 2, rig.pebble.NewOrders())
		for _, c := range st.Certificates {
			assert.False(t, c.Ordering)
			assert.Empty(t, c.LastError)
			// Pebble's certificates last 5 years: renewal 2/3 in.
			life := c.NotAfter.Sub(start)
			assert.WithinDuration(t, c.NotAfter.Add(-life/3), c.RenewAt, time.Minute, c.ID)
			assert.Equal(t, c.RenewAt, c.NextOrder)
		}

		// The cache: 0600 files, a directory per CA.
		var files []string
		require.NoError(t, filepath.WalkDir(cacheDir, func(path string, d os.DirEntry, err error) error {
			require.NoError(t, err)
			info, err := d.Info()
			require.NoError(t, err)
			rel, _ := filepath.Rel(cacheDir, path)
			if rel == "." {
				return nil // the test's
			}
			if d.IsDir() {
				assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), rel)
				return nil
			}
			assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), rel)
			files = append(files, filepath.ToSlash(rel))
			return nil
		}))
		caDir := escapeFileName(strings.TrimPrefix(rig.pebble.Directory, "https://"))
		assert.Equal(t, []string{caDir + "/account.key", caDir + "/certificates/api.pem", caDir + "/certificates/shop.pem"}, files)
		var err error
		accountKey, err = os.ReadFile(filepath.Join(cacheDir, caDir, "account.key"))
		require.NoError(t, err)
	})
	require.NotNil(t, shop)

	t.Run("restart from the cache", func(t *testing.T) {
		store := &recordingStore{inner: rig.store}
		m, _ := rig.manager(t, cacheDir, store, nil)
		cert, err := m.Certificate(SourceRequest{ID: "shop", Names: hosts["shop"]})
		require.NoError(t, err, "served from the cache before Start")
		assert.True(t, cert.Leaf.Equal(shop))
		require.NoError(t, m.Start(context.Background()))
		tbl := mustTable(t, acmeTableConfig(m, dflt, hosts))
		assert.Empty(t, tbl.Warnings())
		assert.True(t, tbl.Select("www.shop.acme.test", TCP).Config.Certificates[0].Leaf.Equal(shop))
		for _, c := range m.Stats().Certificates {
			assert.False(t, c.Ordering, c.ID)
			assert.True(t, c.NextOrder.After(time.Now().Add(365*24*time.Hour)), "%s: next order at %v, the renewal", c.ID, c.NextOrder)
		}
		require.NoError(t, m.Close())
		assert.Equal(t, uint64(0), m.Stats().Orders)
		assert.Equal(t, 2, rig.pebble.NewOrders(), "pebble was asked for no order")
		assert.Empty(t, store.check(t))
		b, err := m.cfg.Storage.Load(t.Context(), m.ca+"/"+accountKeyFile)
		require.NoError(t, err)
		assert.Equal(t, accountKey, b, "the account key is kept")
	})

	t.Run("renewal near expiry", func(t *testing.T) {
		var ahead atomic.Int64 // how far the manager's clock is ahead
		clock := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
		store := &recordingStore{inner: rig.store}
		renewed := make(chan ACMEReady, 1)
		m, _ := rig.manager(t, cacheDir, store, func(c *ACMEConfig) {
			c.Clock = clock
			c.OnReady = func(e ACMEReady) {
				ahead.Store(0) // before the manager looks at the clock again
				renewed <- e
			}
		})
		require.NoError(t, m.Start(context.Background()))
		cfg := acmeTableConfig(m, dflt, map[string][]string{"shop": hosts["shop"]})
		mustTable(t, cfg)
		renewAt := m.Stats().Certificates[0].RenewAt
		require.True(t, renewAt.After(time.Now()))

		ahead.Store(int64(time.Until(renewAt) + time.Second))
		tbl := mustTable(t, cfg) // the next build sees the clock and orders
		assert.True(t, tbl.Select("shop.acme.test", TCP).Config.Certificates[0].Leaf.Equal(shop), "the old certificate until the new one is there")
		e := waitFor(t, renewed, orderTimeout, "OnReady for the renewal")
		assert.Equal(t, "shop", e.ID)
		assert.True(t, e.Renewal)

		tbl = mustTable(t, cfg)
		c, err := dialTLS(t, serveTLS(t, NewSelector(tbl).TLSConfig()), clientConfig(rig.pebble.Issuer, "shop.acme.test"))
		require.NoError(t, err)
		renewedLeaf := leafOf(c)
		assert.False(t, renewedLeaf.Equal(shop), "a new certificate")
		assert.True(t, e.NotAfter.Equal(renewedLeaf.NotAfter))
		assert.Len(t, store.check(t), 2, "validated again")
		assert.Equal(t, 3, rig.pebble.NewOrders())
		st := m.Stats()
		assert.Equal(t, uint64(1), st.Orders)
		life := renewedLeaf.NotAfter.Sub(renewedLeaf.NotBefore)
		assert.Equal(t, renewedLeaf.NotAfter.Add(-life/3), st.Certificates[0].RenewAt, "the new certificate's renewal")
		assert.Equal(t, st.Certificates[0].RenewAt, st.Certificates[0].NextOrder)
		assert.False(t, st.Certificates[0].Ordering, "no second renewal once the clock is back")

		cached, err := m.loadStored(t.Context(), "shop")
		require.NoError(t, err)
		assert.True(t, cached.Leaf.Equal(renewedLeaf), "the cache has the new certificate")
	})

	t.Run("a failed order is retried later", func(t *testing.T) {
		store := &recordingStore{inner: rig.store, drop: true}
		logs := make(chan slog.Record, 16)
		m, _ := rig.manager(t, t.TempDir(), store, func(c *ACMEConfig) {
			c.Logger = slog.New(recordHandler{logs})
		})
		_, err := m.Certificate(SourceRequest{ID: "lost", Names: []string{"lost.acme.test"}})
		require.ErrorIs(t, err, ErrPending)
		start := time.Now()
		require.NoError(t, m.Start(context.Background()))
		var failed slog.Record
		for failed.Level != slog.LevelError {
			failed = waitFor(t, logs, orderTimeout, "the failure's log record")
		}
		assert.Equal(t, "tlsselect: acme: order failed", failed.Message)

		st := m.Stats()
		assert.Equal(t, uint64(1), st.Failed)
		c := st.Certificates[0]
		assert.Equal(t, 1, c.Failures)
		assert.Contains(t, c.LastError, "404", "pebble's reason: the gate had no such token")
		assert.False(t, c.Ordering)
		wait := c.NextOrder.Sub(start)
		assert.True(t, wait >= acmeRetryMin/2 && wait < acmeRetryMin+orderTimeout, "retry in %v", wait)
		assert.Len(t, store.check(t), 1, "the challenge was withdrawn")

		_, err = m.Certificate(SourceRequest{ID: "lost", Names: []string{"lost.acme.test"}})
		require.ErrorIs(t, err, ErrPending)
		assert.Contains(t, err.Error(), "failed 1 time")
		assert.Equal(t, uint64(1), m.Stats().Orders, "asking again does not order before the retry")
	})
}

// recordHandler is a slog.Handler that sends every record on a channel.
type recordHandler struct{ ch chan<- slog.Record }

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	select {
	case h.ch <- r:
	default: // the test reads the first few
	}
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }
