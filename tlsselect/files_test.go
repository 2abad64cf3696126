//go:build unix

package tlsselect

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/namedfile/namedfiletest"
)

// within runs f on a goroutine and fails the test unless it returns
// within limit: a read that waits on a FIFO or a device fails the test
// instead of hanging it.
func within(t *testing.T, limit time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("still waiting after %v", limit)
	}
}

// TestNamedFilesRefused: a certFile or keyFile that is a device, a FIFO, a
// directory, a socket, a symlink to /dev/zero or a file over MaxFileSize
// is refused with its file code at the field's path, at once: nothing
// waits for the FIFO's writer or reads the device.
func TestNamedFilesRefused(t *testing.T) {
	dir := t.TempDir()
	good := newPKI(t, "root").issue(t, leafOpts{names: []string{"a.test"}})
	goodCert, goodKey := writePEM(t, dir, "good", good)
	for _, f := range namedfiletest.Special(t) {
		for _, field := range []string{"certFile", "keyFile"} {
			t.Run(f.What+"/"+field, func(t *testing.T) {
				ct := Certificate{CertFile: f.Path, KeyFile: goodKey}
				if field == "keyFile" {
					ct = Certificate{CertFile: goodCert, KeyFile: f.Path}
				}
				var err error
				within(t, 2*time.Second, func() { _, err = New(oneCert(ct)) })
				ps := problemsOf(err)
				require.Len(t, ps, 1, "%v", err)
				assert.Equal(t, f.Code, ps[0].Code, "%v", err)
				assert.Equal(t, "certificates[0]."+field, ps[0].Path)
				assert.Contains(t, ps[0].Msg, f.Path)
			})
		}
	}
}

// TestReadFileTakesThePlaceOfTheFiles: with Config.ReadFile, New reads
// nothing itself: names that are no file serve, and ReadFile's errors
// refuse as missing or unreadable.
func TestReadFileTakesThePlaceOfTheFiles(t *testing.T) {
	dir := t.TempDir()
	good := newPKI(t, "root").issue(t, leafOpts{names: []string{"a.test"}})
	certFile, keyFile := writePEM(t, dir, "good", good)
	files := map[string][]byte{}
	for name, path := range map[string]string{"mem:cert": certFile, "mem:key": keyFile} {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		files[name] = b
	}
	var asked []string
	read := func(name string) ([]byte, error) {
		asked = append(asked, name)
		if b, ok := files[name]; ok {
			return b, nil
		}
		if name == "gone" {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return nil, errors.New("disk on fire")
	}
	cfg := oneCert(Certificate{CertFile: "mem:cert", KeyFile: "mem:key"})
	cfg.ReadFile = read
	tbl := mustTable(t, cfg)
	assert.True(t, tbl.Select("a.test", TCP).Config.Certificates[0].Leaf.Equal(good.Leaf))
	assert.Equal(t, []string{"mem:cert", "mem:key"}, asked)

	cfg = oneCert(Certificate{CertFile: "gone", KeyFile: "broken"})
	cfg.ReadFile = read
	_, err := New(cfg)
	var got []string
	for _, p := range problemsOf(err) {
		got = append(got, p.Code+" "+p.Path+" "+p.Msg)
	}
	assert.Equal(t, []string{
		CodeCertificateFileMissing + " certificates[0].certFile gone does not exist",
		CodeCertificateFileUnreadable + " certificates[0].keyFile disk on fire",
	}, got)
}

// TestACMECacheReadByTheRules: the ACME cache is read under the same
// rules, once, by NewACME: an account key linked to /dev/zero refuses
// NewACME at once, and a FIFO among the cached certificates is refused
// (logged, ordered again) without waiting for a writer.
func TestACMECacheReadByTheRules(t *testing.T) {
	const url = "https://ca.invalid/directory"
	caDir := func(root string) string {
		d := filepath.Join(root, "ca.invalid%2Fdirectory")
		require.NoError(t, os.MkdirAll(filepath.Join(d, "certificates"), 0o700))
		return d
	}
	root := t.TempDir()
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(caDir(root), "account.key")))
	var err error
	within(t, 2*time.Second, func() {
		_, err = NewACME(ACMEConfig{DirectoryURL: url, CacheDir: root, Challenges: nopStore{}})
	})
	ps := problemsOf(err)
	require.Len(t, ps, 1, "%v", err)
	assert.Equal(t, CodeACMECacheDirUnusable, ps[0].Code)
	assert.Contains(t, ps[0].Msg, "(a link to /dev/zero) is a character device")

	root = t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(caDir(root), "certificates", "shop.pem"), 0o600))
	logs := make(chan slog.Record, 4)
	var m *ACME
	within(t, 2*time.Second, func() {
		m, err = NewACME(ACMEConfig{DirectoryURL: url, CacheDir: root, Challenges: nopStore{}, Logger: slog.New(recordHandler{logs})})
	})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	_, err = m.Certificate(SourceRequest{ID: "shop", Names: []string{"a.test"}})
	require.ErrorIs(t, err, ErrPending)
	rs := drain(logs)
	require.Len(t, rs, 1)
	assert.Equal(t, "tlsselect: acme: cached certificate not used", rs[0].Message)
	rs[0].Attrs(func(a slog.Attr) bool {
		if a.Key == "err" {
			assert.Contains(t, a.Value.String(), "is a FIFO")
		}
		return true
	})
}

// TestACMECertificateReadsNoFile: Certificate, which runs while a Table
// is built, serves from what NewACME read and never reads the cache
// itself: a cache file written after NewACME is not seen.
func TestACMECertificateReadsNoFile(t *testing.T) {
	root := t.TempDir()
	m, err := NewACME(ACMEConfig{DirectoryURL: "https://ca.invalid/directory", CacheDir: root, Challenges: nopStore{}})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	good := newPKI(t, "root").issue(t, leafOpts{names: []string{"a.test"}})
	require.NoError(t, m.store(t.Context(), "shop", &good))
	cached, err := m.loadStored(t.Context(), "shop")
	require.NoError(t, err)
	require.NotNil(t, cached, "the file is there and usable")
	_, err = m.Certificate(SourceRequest{ID: "shop", Names: []string{"a.test"}})
	assert.ErrorIs(t, err, ErrPending, "Certificate read the cache file written after NewACME")
}
