package tlsselect

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/paduraksa/paduraksa/internal/namedfile"
)

const (
	accountKeyFile = "account.key"
	certsDir       = "certificates"
)

// ACMEStorage keeps an [ACME] manager's state: the account key and the
// certificates, each the value of a key shaped like a relative path
// ("<CA>/account.key", "<CA>/certificates/<ID>.pem", segments of
// [A-Za-z0-9._%-]), and a lock per name. Managers that share one storage
// share one account per CA and order each certificate once: see [ACME].
// An ACMEStorage is safe for concurrent use.
type ACMEStorage interface {
	// Load returns the value of key, or an error wrapping
	// fs.ErrNotExist when there is none.
	Load(ctx context.Context, key string) ([]byte, error)
	// Store makes value the value of key, whole: a Load sees the old
	// value or the new one.
	Store(ctx context.Context, key string, value []byte) error
	// List returns the keys under prefix, which ends in "/", one level
	// deep, in any order; none when there is nothing there.
	List(ctx context.Context, prefix string) ([]string, error)
	// Lock waits until the caller holds the lock called name, or ctx is
	// done (then its error), and returns what releases it. A lock held
	// by a process that ended must be freed before long (a lease).
	Lock(ctx context.Context, name string) (unlock func(), err error)
}

// ACMEWatcher is an [ACMEStorage] that tells of values stored, by any
// manager sharing it: with one, a manager takes a certificate another
// stored as soon as it is there, not only when its own order is due.
type ACMEWatcher interface {
	// Watch calls fn with the key of every value stored under prefix
	// (which ends in "/") from now until ctx is done, and then returns.
	// It rides out the storage's outages itself; a value stored
	// meanwhile may be missed.
	Watch(ctx context.Context, prefix string, fn func(key string))
}

// ACMEDir is the directory storage of ACME state, the one
// ACMEConfig.CacheDir makes: the key "<CA>/certificates/<ID>.pem" is the
// file of that path under the directory. Directories are created 0700
// when missing; files are 0600, written to a temporary file and renamed,
// so a crash leaves the old file or the new one. Its locks hold among
// the managers of one process: a directory is one instance's (a fleet
// shares a storage with leased locks instead, such as etcd's).
type ACMEDir string

var _ ACMEStorage = ACMEDir("")

// file returns the file of key, or an error for a key that is not a
// relative path of plain segments.
func (d ACMEDir) file(key string) (string, error) {
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." || strings.ContainsRune(seg, filepath.Separator) {
			return "", fmt.Errorf("tlsselect: acme storage: %q is not a key", key)
		}
	}
	return filepath.Join(string(d), filepath.FromSlash(key)), nil
}

// Load reads the file of key, under the rules of MaxFileSize and
// FileTimeout.
func (d ACMEDir) Load(_ context.Context, key string) ([]byte, error) {
	p, err := d.file(key)
	if err != nil {
		return nil, err
	}
	return namedfile.Reader{}.Read(p, MaxFileSize)
}

// Store writes the file of key.
func (d ACMEDir) Store(_ context.Context, key string, value []byte) error {
	p, err := d.file(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	return writeAtomic(p, value)
}

// List returns the keys of the files in the directory of prefix, but for
// hidden ones (a temporary file of Store).
func (d ACMEDir) List(_ context.Context, prefix string) ([]string, error) {
	p, err := d.file(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && !strings.HasPrefix(n, ".") {
			keys = append(keys, prefix+n)
		}
	}
	return keys, nil
}

// dirLocks are ACMEDir's locks, by absolute file name: a channel holding
// one value while the lock is held.
var dirLocks struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// Lock takes the lock of name in this process.
func (d ACMEDir) Lock(ctx context.Context, name string) (func(), error) {
	p, err := d.file(name)
	if err != nil {
		return nil, err
	}
	if p, err = filepath.Abs(p); err != nil {
		return nil, err
	}
	dirLocks.mu.Lock()
	ch := dirLocks.m[p]
	if ch == nil {
		if dirLocks.m == nil {
			dirLocks.m = make(map[string]chan struct{})
		}
		ch = make(chan struct{}, 1)
		dirLocks.m[p] = ch
	}
	dirLocks.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return sync.OnceFunc(func() { <-ch }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// caKey returns the key prefix of the CA at u: its host and path as one
// segment.
func caKey(u *url.URL) string { return escapeFileName(u.Host + u.Path) }

// escapeFileName makes s one file name: bytes outside [A-Za-z0-9._-], and
// a leading dot, are written %XX, so no name is "." or ".." or hidden, and
// two names are the same file only if they are the same string.
func escapeFileName(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' && i > 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// loadAccountKey reads the account key of the CA ca from st, or makes one
// and stores it, under the key's lock, so that managers sharing st make
// one account.
func loadAccountKey(ctx context.Context, st ACMEStorage, ca string) (crypto.Signer, error) {
	name := ca + "/" + accountKeyFile
	unlock, err := st.Lock(ctx, name)
	if err != nil {
		return nil, err
	}
	defer unlock()
	b, err := st.Load(ctx, name)
	switch {
	case err == nil:
		key, err := parseKey(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return key, nil
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := st.Store(ctx, name, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
		return nil, err
	}
	return key, nil
}

// stored is a value as NewACME read it.
type stored struct {
	data []byte
	err  error
}

// readStored reads every certificate of the CA ca in st, by file name,
// so that Certificate, which runs while a Table is built, never waits on
// the storage.
func readStored(ctx context.Context, st ACMEStorage, ca string) (map[string]stored, error) {
	keys, err := st.List(ctx, ca+"/"+certsDir+"/")
	if err != nil {
		return nil, err
	}
	out := make(map[string]stored, len(keys))
	for _, k := range keys {
		if n := path.Base(k); strings.HasSuffix(n, ".pem") {
			b, err := st.Load(ctx, k)
			out[n] = stored{b, err}
		}
	}
	return out, nil
}

// cachedName is the name of id's file in the cache's certificate
// directory.
func cachedName(id string) string { return escapeFileName(id) + ".pem" }

// parseCached returns the certificate of a cache file, or an error when
// it is not a usable certificate.
func parseCached(b []byte) (*tls.Certificate, error) {
	key, err := parseKey(b)
	if err != nil {
		return nil, err
	}
	chain, leaf, err := parseChain(b)
	if err != nil {
		return nil, err
	}
	if !keyMatches(key, leaf) {
		return nil, errors.New("the private key does not match the certificate")
	}
	return &tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}, nil
}

// encodeCached returns the cache file of cert: the private key, then the
// chain.
func encodeCached(cert *tls.Certificate) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return nil, err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	for _, c := range cert.Certificate {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
	}
	return b, nil
}

// writeAtomic writes b to path with mode 0600 through a temporary file in
// the same directory, synced and renamed over path, so a reader or a
// crash sees the old file or the new one, whole.
func writeAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-*") // 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename itself; not every file system can
		d.Close()
	}
	return nil
}
