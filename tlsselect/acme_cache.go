package tlsselect

import (
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
	"path/filepath"
	"strings"

	"github.com/paduraksa/paduraksa/internal/namedfile"
)

const (
	accountKeyFile = "account.key"
	certsDir       = "certificates"
)

// cacheDirOf returns the directory of the CA at u in the cache root.
func cacheDirOf(root string, u *url.URL) string {
	return filepath.Join(root, escapeFileName(u.Host+u.Path))
}

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

// certFile returns the cache file of certificate id.
func certFile(dir, id string) string {
	return filepath.Join(dir, certsDir, cachedName(id))
}

// loadAccountKey reads the account key of the CA directory dir, or makes
// one and writes it, creating dir.
func loadAccountKey(dir string) (crypto.Signer, error) {
	if err := os.MkdirAll(filepath.Join(dir, certsDir), 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, accountKeyFile)
	b, err := namedfile.Reader{}.Read(path, MaxFileSize)
	switch {
	case err == nil:
		key, err := parseKey(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
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
	if err := writeAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})); err != nil {
		return nil, err
	}
	return key, nil
}

// readCache reads every certificate file of the CA directory dir, by
// file name, so that Certificate, which runs while a Table is built,
// never reads the disk.
func readCache(dir string) (map[string]namedfile.Result, error) {
	entries, err := os.ReadDir(filepath.Join(dir, certsDir))
	if err != nil {
		return nil, err
	}
	var reqs []namedfile.Request
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".pem") && !strings.HasPrefix(n, ".") {
			reqs = append(reqs, namedfile.Request{Name: filepath.Join(dir, certsDir, n), Max: MaxFileSize})
		}
	}
	res := namedfile.Reader{}.ReadAll(reqs, nil)
	out := make(map[string]namedfile.Result, len(reqs))
	for i, q := range reqs {
		out[filepath.Base(q.Name)] = res[i]
	}
	return out, nil
}

// cachedName is the name of id's file in the cache's certificate
// directory.
func cachedName(id string) string { return escapeFileName(id) + ".pem" }

// loadCached reads and parses the cached certificate of id; see
// parseCached.
func loadCached(dir, id string) (*tls.Certificate, error) {
	b, err := namedfile.Reader{}.Read(certFile(dir, id), MaxFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseCached(b)
}

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

// storeCached writes cert as the cached certificate of id: the private
// key, then the chain.
func storeCached(dir, id string, cert *tls.Certificate) error {
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		return err
	}
	b := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	for _, c := range cert.Certificate {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c})...)
	}
	return writeAtomic(certFile(dir, id), b)
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
