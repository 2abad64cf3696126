package tlsselect

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestACMESharedStorage: three managers sharing a storage, all asked for
// the same certificate at once, order it once: the one holding the lock
// orders, the others wait for the lock, find the stored certificate and
// take it, each calling OnReady; they share one account key.
func TestACMESharedStorage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCA(t, 90*day)
		f.hold = 10 * time.Second
		st := ACMEDir(t.TempDir())
		req := SourceRequest{ID: "shop", Names: []string{"shop.test", "www.shop.test"}}
		var ms []*ACME
		var readies []<-chan ACMEReady
		for range 3 {
			m, ready := fakeACME(t, f, func(c *ACMEConfig) { c.CacheDir, c.Storage = "", st })
			_, err := m.Certificate(req)
			require.ErrorIs(t, err, ErrPending)
			require.NoError(t, m.Start(t.Context()))
			ms, readies = append(ms, m), append(readies, ready)
		}
		time.Sleep(f.hold + time.Second)
		synctest.Wait()
		require.Len(t, f.since(time.Now()), 1, "one order for the three")
		var orders, adopted uint64
		var first *ACMEReady
		for i, m := range ms {
			e := drain(readies[i])
			require.Len(t, e, 1, "manager %d: OnReady", i)
			if first == nil {
				first = &e[0]
			}
			assert.Equal(t, *first, e[0], "manager %d", i)
			cert, err := m.Certificate(req)
			require.NoError(t, err, "manager %d serves it", i)
			assert.Equal(t, first.NotAfter, cert.Leaf.NotAfter)
			s := m.Stats()
			orders, adopted = orders+s.Orders, adopted+s.Adopted
			assert.Equal(t, ms[0].client.Key, m.client.Key, "one account")
		}
		assert.Equal(t, uint64(1), orders)
		assert.Equal(t, uint64(2), adopted)

		// The renewal, due at the same time on every manager, is ordered
		// once too.
		time.Sleep(60*day + 2*f.hold)
		synctest.Wait()
		assert.Len(t, f.since(time.Now()), 2, "one renewal for the three")
		for i := range ms {
			e := drain(readies[i])
			require.Len(t, e, 1, "manager %d: OnReady for the renewal", i)
			assert.True(t, e[0].Renewal)
		}
	})
}

// watchedDir is an ACMEDir that tells its watchers of every Store.
type watchedDir struct {
	ACMEDir
	mu  sync.Mutex
	fns []func(string)
}

func (w *watchedDir) Store(ctx context.Context, key string, value []byte) error {
	if err := w.ACMEDir.Store(ctx, key, value); err != nil {
		return err
	}
	w.mu.Lock()
	fns := w.fns
	w.mu.Unlock()
	for _, fn := range fns {
		fn(key)
	}
	return nil
}

func (w *watchedDir) Watch(ctx context.Context, prefix string, fn func(string)) {
	w.mu.Lock()
	w.fns = append(w.fns, fn)
	w.mu.Unlock()
	<-ctx.Done()
}

// TestACMEWatcher: a manager waiting to retry a failed order takes the
// certificate another manager stored as soon as its storage's watch
// tells of it, without ordering again.
func TestACMEWatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &watchedDir{ACMEDir: ACMEDir(t.TempDir())}
		req := SourceRequest{ID: "shop", Names: []string{"shop.test"}}
		failing := newFakeCA(t, 90*day)
		failing.fail = 1
		b, readyB := fakeACME(t, failing, func(c *ACMEConfig) { c.CacheDir, c.Storage = "", st })
		b.Certificate(req)
		require.NoError(t, b.Start(t.Context()))
		synctest.Wait()
		require.Equal(t, uint64(1), b.Stats().Failed)
		retry := b.Stats().Certificates[0].NextOrder

		time.Sleep(time.Second)
		a, readyA := fakeACME(t, newFakeCA(t, 90*day), func(c *ACMEConfig) { c.CacheDir, c.Storage = "", st })
		a.Certificate(req)
		require.NoError(t, a.Start(t.Context()))
		synctest.Wait()
		require.Len(t, drain(readyA), 1)
		require.Len(t, drain(readyB), 1, "B took A's certificate")
		assert.True(t, time.Now().Before(retry), "before its retry")
		s := b.Stats()
		assert.Equal(t, uint64(1), s.Orders, "B's failed order only")
		assert.Equal(t, uint64(1), s.Adopted)
		_, err := b.Certificate(req)
		assert.NoError(t, err)
		assert.Equal(t, uint64(0), a.Stats().Adopted, "A does not take its own certificate again")
	})
}

// TestACMEDir: keys are relative paths of plain segments; a missing key
// is fs.ErrNotExist; List lists one level; a lock waits for its holder,
// or for the caller's ctx.
func TestACMEDir(t *testing.T) {
	d := ACMEDir(t.TempDir())
	ctx := t.Context()
	for _, k := range []string{"", "/abs", "a/../b", "a//b", "./a", "a/"} {
		assert.Error(t, d.Store(ctx, k, []byte("x")), "%q", k)
		_, err := d.Load(ctx, k)
		assert.Error(t, err, "%q", k)
	}
	_, err := d.Load(ctx, "ca/account.key")
	assert.ErrorIs(t, err, fs.ErrNotExist)
	keys, err := d.List(ctx, "ca/certificates/")
	require.NoError(t, err)
	assert.Empty(t, keys)
	require.NoError(t, d.Store(ctx, "ca/certificates/a.pem", []byte("a")))
	require.NoError(t, d.Store(ctx, "ca/certificates/b.pem", []byte("b")))
	keys, err = d.List(ctx, "ca/certificates/")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"ca/certificates/a.pem", "ca/certificates/b.pem"}, keys)
	b, err := d.Load(ctx, "ca/certificates/b.pem")
	require.NoError(t, err)
	assert.Equal(t, "b", string(b))

	unlock, err := d.Lock(ctx, "ca/certificates/a.pem")
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = d.Lock(short, "ca/certificates/a.pem")
	assert.ErrorIs(t, err, context.DeadlineExceeded, "held")
	other, err := d.Lock(ctx, "ca/certificates/b.pem")
	require.NoError(t, err, "another name")
	other()
	got := make(chan struct{})
	go func() {
		u, err := d.Lock(ctx, "ca/certificates/a.pem")
		if err == nil {
			u()
		}
		close(got)
	}()
	unlock()
	unlock() // idempotent
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the lock was not handed on")
	}
}

// failingStorage is a storage that cannot be read.
type failingStorage struct{ ACMEDir }

func (failingStorage) Load(context.Context, string) ([]byte, error) {
	return nil, errors.New("storage on fire")
}

// TestACMEStorageUnusable: a Storage NewACME cannot read the account key
// from refuses it, at "storage".
func TestACMEStorageUnusable(t *testing.T) {
	_, err := NewACME(ACMEConfig{DirectoryURL: "https://ca.invalid/directory", Storage: failingStorage{ACMEDir(t.TempDir())}, Challenges: nopStore{}})
	ps := problemsOf(err)
	require.Len(t, ps, 1, "%v", err)
	assert.Equal(t, CodeACMEStorageUnusable+" storage", ps[0].Code+" "+ps[0].Path)
	assert.Contains(t, ps[0].Msg, "storage on fire")
}
