package tlsselect

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/acme"
)

const day = 24 * time.Hour

// fakeCA stands in for the ACME exchange (ACME.obtain), so the scheduling
// around it runs on synctest's clock: it issues certificates valid from
// now for life, after failing the first fail orders with failErr.
type fakeCA struct {
	t       *testing.T
	pki     *pki
	life    time.Duration
	hold    time.Duration // how long an order takes
	fail    int
	failErr error

	mu            sync.Mutex
	calls         []time.Time
	running, most int
}

func newFakeCA(t *testing.T, life time.Duration) *fakeCA {
	return &fakeCA{t: t, pki: newPKI(t, "fake CA"), life: life, failErr: errors.New("fake CA: refused")}
}

func (f *fakeCA) obtain(ctx context.Context, names []string) (*tls.Certificate, error) {
	f.mu.Lock()
	f.calls = append(f.calls, time.Now())
	n := len(f.calls)
	f.running++
	f.most = max(f.most, f.running)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	if f.hold > 0 {
		select {
		case <-time.After(f.hold):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if n <= f.fail {
		return nil, f.failErr
	}
	now := time.Now()
	c := f.pki.issue(f.t, leafOpts{names: names, notBefore: now, notAfter: now.Add(f.life)})
	return &c, nil
}

// since returns the times of the orders, from start.
func (f *fakeCA) since(start time.Time) []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Duration
	for _, c := range f.calls {
		out = append(out, c.Sub(start))
	}
	return out
}

// nopStore is a ChallengeStore that publishes nothing.
type nopStore struct{}

func (nopStore) Set(string, string) {}
func (nopStore) Delete(string)      {}

// fakeACME is an ACME whose orders go to f, without jitter, whose
// OnReady sends on the returned channel.
func fakeACME(t *testing.T, f *fakeCA, mod func(*ACMEConfig)) (*ACME, <-chan ACMEReady) {
	t.Helper()
	ready := make(chan ACMEReady, 16)
	cfg := ACMEConfig{
		DirectoryURL: "https://ca.invalid/directory",
		CacheDir:     t.TempDir(),
		Challenges:   nopStore{},
		OnReady:      func(e ACMEReady) { ready <- e },
	}
	if mod != nil {
		mod(&cfg)
	}
	m, err := NewACME(cfg)
	require.NoError(t, err)
	m.obtain = f.obtain
	m.jitter = func() float64 { return 0 }
	t.Cleanup(func() { m.Close() })
	return m, ready
}

// drain returns what ch holds now.
func drain[T any](ch <-chan T) []T {
	var out []T
	for {
		select {
		case v := <-ch:
			out = append(out, v)
		default:
			return out
		}
	}
}

// TestACMERenewal: a certificate is ordered at once, renewed when a third
// of its lifetime is left (or RenewBefore, at most half), and not before.
func TestACMERenewal(t *testing.T) {
	for _, tc := range []struct {
		name        string
		life        time.Duration
		renewBefore time.Duration
		renewAt     time.Duration
	}{
		{"a third of 90 days", 90 * day, 0, 60 * day},
		{"RenewBefore", 90 * day, 10 * day, 80 * day},
		{"RenewBefore more than half the lifetime", 6 * day, 30 * day, 3 * day},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeCA(t, tc.life)
				m, ready := fakeACME(t, f, func(c *ACMEConfig) { c.RenewBefore = tc.renewBefore })
				req := SourceRequest{ID: "a", Names: []string{"a.test"}}
				start := time.Now()
				_, err := m.Certificate(req)
				require.ErrorIs(t, err, ErrPending)
				require.NoError(t, m.Start(t.Context()))
				synctest.Wait()
				assert.Equal(t, []ACMEReady{{ID: "a", Names: []string{"a.test"}, NotAfter: start.Add(tc.life).UTC()}}, drain(ready))
				cert, err := m.Certificate(req)
				require.NoError(t, err)
				assert.Equal(t, []string{"a.test"}, cert.Leaf.DNSNames)

				time.Sleep(tc.renewAt - time.Second)
				synctest.Wait()
				assert.Equal(t, []time.Duration{0}, f.since(start), "not renewed early")
				time.Sleep(time.Second)
				synctest.Wait()
				assert.Equal(t, []time.Duration{0, tc.renewAt}, f.since(start))
				e := drain(ready)
				require.Len(t, e, 1)
				assert.True(t, e[0].Renewal)
				assert.Equal(t, uint64(2), m.Stats().Obtained)
			})
		})
	}
}

// TestACMERetry: a failed order is retried after a wait that doubles from
// acmeRetryMin, and one the CA rate-limits after its Retry-After when
// that is longer; the failures show in Stats and in the pending error.
func TestACMERetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCA(t, 90*day)
		f.fail = 3
		m, ready := fakeACME(t, f, nil)
		req := SourceRequest{ID: "a", Names: []string{"a.test"}}
		start := time.Now()
		m.Certificate(req)
		require.NoError(t, m.Start(t.Context()))
		synctest.Wait()
		st := m.Stats()
		assert.Equal(t, uint64(1), st.Failed)
		c := st.Certificates[0]
		assert.Equal(t, 1, c.Failures)
		assert.Equal(t, "fake CA: refused", c.LastError)
		assert.Equal(t, start, c.LastErrorAt)
		assert.Equal(t, start.Add(acmeRetryMin/2), c.NextOrder, "no jitter: half of the first wait")
		_, err := m.Certificate(req)
		require.ErrorIs(t, err, ErrPending)
		assert.Contains(t, err.Error(), "failed 1 time(s) in a row")
		assert.Contains(t, err.Error(), "fake CA: refused")
		assert.Equal(t, uint64(1), m.Stats().Orders, "asking again does not order before the retry")

		time.Sleep(time.Hour)
		synctest.Wait()
		base := acmeRetryMin / 2
		assert.Equal(t, []time.Duration{0, base, 3 * base, 7 * base}, f.since(start))
		assert.Len(t, drain(ready), 1)
		st = m.Stats()
		assert.Equal(t, ACMEStats{Orders: 4, Obtained: 1, Failed: 3, Certificates: st.Certificates}, st)
		assert.Equal(t, 0, st.Certificates[0].Failures)
		assert.Empty(t, st.Certificates[0].LastError)
	})

	t.Run("rate limited", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			f := newFakeCA(t, 90*day)
			f.fail = 1
			f.failErr = fmt.Errorf("acme: new order: %w", &acme.Error{
				StatusCode:  http.StatusTooManyRequests,
				ProblemType: "urn:ietf:params:acme:error:rateLimited",
				Header:      http.Header{"Retry-After": {"7200"}},
			})
			m, _ := fakeACME(t, f, nil)
			start := time.Now()
			m.Certificate(SourceRequest{ID: "a", Names: []string{"a.test"}})
			require.NoError(t, m.Start(t.Context()))
			synctest.Wait()
			assert.Equal(t, start.Add(2*time.Hour), m.Stats().Certificates[0].NextOrder)
		})
	})
}

// TestACMEBackoff: the wait doubles to acmeRetryMax and is jittered
// between half of it and all of it.
func TestACMEBackoff(t *testing.T) {
	for _, tc := range []struct {
		n      int
		jitter float64
		want   time.Duration
	}{
		{1, 0, time.Minute},
		{1, 0.5, 90 * time.Second},
		{2, 0, 2 * time.Minute},
		{8, 0, 128 * time.Minute},
		{9, 0, 3 * time.Hour},
		{9, 0.999999, 6 * time.Hour},
		{1000, 0, 3 * time.Hour},
	} {
		assert.InDelta(t, float64(tc.want), float64(backoff(tc.n, tc.jitter)), float64(time.Second), "n %d jitter %v", tc.n, tc.jitter)
	}
}

// TestACMEMaxOrders: no more than MaxOrders orders run at once, and the
// others wait their turn.
func TestACMEMaxOrders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCA(t, 90*day)
		f.hold = 10 * time.Second
		m, ready := fakeACME(t, f, func(c *ACMEConfig) { c.MaxOrders = 2 })
		start := time.Now()
		for _, id := range []string{"a", "b", "c", "d", "e"} {
			_, err := m.Certificate(SourceRequest{ID: id, Names: []string{id + ".test"}})
			require.ErrorIs(t, err, ErrPending)
		}
		require.NoError(t, m.Start(t.Context()))
		synctest.Wait()
		var ordering []string
		for _, c := range m.Stats().Certificates {
			if c.Ordering {
				ordering = append(ordering, c.ID)
			}
		}
		assert.Equal(t, []string{"a", "b"}, ordering, "the first two by ID; the others wait")
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Len(t, drain(ready), 5)
		assert.Equal(t, 2, f.most)
		assert.Equal(t, []time.Duration{0, 0, 10 * time.Second, 10 * time.Second, 20 * time.Second}, f.since(start))
	})
}

// TestACMEClose: Close cancels an order under way, which is not counted
// a failure, and ends every goroutine (synctest.Test fails otherwise);
// Certificate still answers after it and orders nothing.
func TestACMEClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCA(t, 90*day)
		f.hold = time.Hour
		m, _ := fakeACME(t, f, nil)
		m.Certificate(SourceRequest{ID: "a", Names: []string{"a.test"}})
		require.NoError(t, m.Start(t.Context()))
		synctest.Wait()
		assert.True(t, m.Stats().Certificates[0].Ordering)
		require.NoError(t, m.Close())
		require.NoError(t, m.Close(), "idempotent")
		st := m.Stats()
		assert.Equal(t, uint64(0), st.Failed)
		assert.False(t, st.Certificates[0].Ordering)
		assert.Empty(t, st.Certificates[0].LastError)
		_, err := m.Certificate(SourceRequest{ID: "b", Names: []string{"b.test"}})
		require.ErrorIs(t, err, ErrPending)
		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Equal(t, uint64(1), m.Stats().Orders)
		assert.Error(t, m.Start(t.Context()), "no Start after Close")
	})
}

// TestACMENames: new names are ordered while the certificate there stays
// served; wildcards are an error, IP literals and repeats are left out.
func TestACMENames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCA(t, 90*day)
		m, ready := fakeACME(t, f, nil)
		require.NoError(t, m.Start(t.Context()))
		_, err := m.Certificate(SourceRequest{ID: "a", Names: []string{"a.test", "192.0.2.1", "a.test"}})
		require.ErrorIs(t, err, ErrPending)
		synctest.Wait()
		first, err := m.Certificate(SourceRequest{ID: "a", Names: []string{"a.test"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"a.test"}, first.Leaf.DNSNames)
		require.Len(t, drain(ready), 1)

		cert, err := m.Certificate(SourceRequest{ID: "a", Names: []string{"a.test", "b.test"}})
		require.NoError(t, err)
		assert.Same(t, first, cert, "the certificate there, while the new one is ordered")
		synctest.Wait()
		e := drain(ready)
		require.Len(t, e, 1)
		assert.Equal(t, ACMEReady{ID: "a", Names: []string{"a.test", "b.test"}, NotAfter: e[0].NotAfter, Renewal: true}, e[0])
		cert, err = m.Certificate(SourceRequest{ID: "a", Names: []string{"a.test", "b.test"}})
		require.NoError(t, err)
		assert.Equal(t, []string{"a.test", "b.test"}, cert.Leaf.DNSNames)

		again, err := m.Certificate(SourceRequest{ID: "a", Names: []string{"b.test"}})
		require.NoError(t, err, "fewer names: the certificate covers them")
		assert.Same(t, cert, again)
		synctest.Wait()
		assert.Len(t, f.since(time.Time{}), 2, "and nothing is ordered")

		for _, names := range [][]string{{"*.a.test"}, {"192.0.2.1"}, nil} {
			_, err := m.Certificate(SourceRequest{ID: "x", Names: names})
			require.Error(t, err, "%v", names)
			assert.NotErrorIs(t, err, ErrPending, "%v", names)
		}
		_, err = New(oneCert(Certificate{Source: m}))
		require.NoError(t, err, "the hosts' names are asked for")
		cfg := oneCert(Certificate{Source: m})
		cfg.Hosts[0].Names = []string{"*.a.test"}
		_, err = New(cfg)
		require.Error(t, err)
		assert.Equal(t, CodeCertificateSourceFailed, problemsOf(err)[0].Code)
		assert.Contains(t, err.Error(), "DNS-01")
	})
}

// TestACMECache: certificates persist per CA; an unusable cache file is
// logged and ordered again; a cache directory that cannot be used
// refuses NewACME.
func TestACMECache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCA(t, 90*day)
		dir := t.TempDir()
		m, _ := fakeACME(t, f, func(c *ACMEConfig) { c.CacheDir = dir })
		require.NoError(t, m.Start(t.Context()))
		m.Certificate(SourceRequest{ID: "shop/../x", Names: []string{"a.test"}})
		synctest.Wait()
		file := filepath.Join(dir, "ca.invalid%2Fdirectory", "certificates", "shop%2F..%2Fx.pem")
		info, err := os.Stat(file)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
		m.Close()

		// Another CA does not see it.
		other, _ := fakeACME(t, f, func(c *ACMEConfig) { c.CacheDir = dir; c.DirectoryURL = "https://other.invalid/directory" })
		_, err = other.Certificate(SourceRequest{ID: "shop/../x", Names: []string{"a.test"}})
		require.ErrorIs(t, err, ErrPending)

		// A damaged file is not served.
		require.NoError(t, os.WriteFile(file, []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), 0o600))
		logs := make(chan slog.Record, 4)
		again, _ := fakeACME(t, f, func(c *ACMEConfig) { c.CacheDir = dir; c.Logger = slog.New(recordHandler{logs}) })
		_, err = again.Certificate(SourceRequest{ID: "shop/../x", Names: []string{"a.test"}})
		require.ErrorIs(t, err, ErrPending)
		rs := drain(logs)
		require.Len(t, rs, 1)
		assert.Equal(t, "tlsselect: acme: cached certificate not used", rs[0].Message)
	})

	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, nil, 0o600))
	_, err := NewACME(ACMEConfig{DirectoryURL: "https://ca.invalid/", CacheDir: notDir, Challenges: nopStore{}})
	require.Error(t, err)
	assert.Equal(t, CodeACMECacheDirUnusable, problemsOf(err)[0].Code)
	assert.Equal(t, "cacheDir", problemsOf(err)[0].Path)
}

// TestACMEConfigValidate: every problem at once, with its code and path.
func TestACMEConfigValidate(t *testing.T) {
	err := ACMEConfig{
		DirectoryURL:   "http://ca.invalid/directory",
		Email:          "Ops <ops@example.com>",
		MaxOrders:      -1,
		OrderTimeout:   -time.Second,
		RenewBefore:    -time.Second,
		StorageTimeout: -time.Second,
	}.Validate()
	assert.Equal(t, []string{
		CodeACMEDirectoryURLInvalid + " directoryUrl",
		CodeACMEEmailInvalid + " email",
		CodeACMECacheDirMissing + " cacheDir",
		CodeACMEChallengesMissing + " challenges",
		CodeACMEMaxOrdersInvalid + " maxOrders",
		CodeACMEOrderTimeoutInvalid + " orderTimeout",
		CodeACMEStorageTimeoutInvalid + " storageTimeout",
		CodeACMERenewBeforeInvalid + " renewBefore",
	}, codesOf(problemsOf(err)))
	_, nerr := NewACME(ACMEConfig{})
	assert.Len(t, problemsOf(nerr), 3, "NewACME reports the same: URL, cache, store")
	assert.NoError(t, ACMEConfig{DirectoryURL: acme.LetsEncryptURL, Email: "ops@example.com", CacheDir: "x", Challenges: nopStore{}}.Validate())
	assert.NoError(t, ACMEConfig{DirectoryURL: acme.LetsEncryptURL, Storage: ACMEDir("x"), Challenges: nopStore{}}.Validate(), "a Storage instead of CacheDir")
}

// TestACMEErrorSaysACMEOnce: an order's error around one of
// golang.org/x/crypto/acme's, which begin with "acme: " themselves, says
// it once, and errors.As still finds the CA's.
func TestACMEErrorSaysACMEOnce(t *testing.T) {
	inner := &acme.OrderError{OrderURL: "https://ca.test/order/1", Status: acme.StatusInvalid}
	err := acmeError("the order failed", inner)
	assert.Equal(t, "acme: the order failed: order https://ca.test/order/1 status: invalid", err.Error())
	var oe *acme.OrderError
	assert.True(t, errors.As(err, &oe))
	assert.Equal(t, "acme: new order: boom", acmeError("new order", errors.New("boom")).Error())
}
