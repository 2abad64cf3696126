//go:build unix

package admin

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/namedfile/namedfiletest"
	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// pemFiles writes a certificate for app.test and its key as PEM files.
func pemFiles(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	c, err := testcert.New("app.test")
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600))
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	return certFile, keyFile
}

// tlsDoc is a YAML document of one TLS host requiring client
// certificates of cas.
func tlsDoc(certFile, keyFile, cas string) string {
	return fmt.Sprintf(`certificates:
  - {id: main, certFile: %q, keyFile: %q}
hosts:
  - names: [app.test]
    certificate: main
    kind: fixed
    fixed: {status: 200, body: app}
    tls: {clientAuth: required, clientCAs: %q}
`, certFile, keyFile, cas)
}

// TestPushNamingSpecialFiles: a push whose certFile, keyFile or clientCAs
// names a device, a FIFO, a directory, a socket, a symlink to /dev/zero
// or a file over the cap is refused (422) with the file's code at the
// field's path, at once.
func TestPushNamingSpecialFiles(t *testing.T) {
	a := newAPI(t, Config{})
	certFile, keyFile := pemFiles(t)
	ans, res := a.push(tlsDoc(certFile, keyFile, certFile))
	require.Equal(t, 200, ans.status, ans.body)
	require.Equal(t, "applied", res.Status)
	for _, f := range namedfiletest.Special(t) {
		for _, tc := range []struct{ field, doc string }{
			{"certificates[0].certFile", tlsDoc(f.Path, keyFile, certFile)},
			{"certificates[0].keyFile", tlsDoc(certFile, f.Path, certFile)},
			{"hosts[0].tls.clientCAs", tlsDoc(certFile, keyFile, f.Path)},
		} {
			start := time.Now()
			ans, res := a.push(tc.doc)
			assert.Less(t, time.Since(start), 2*time.Second, "%s at %s", f.What, tc.field)
			assert.Equal(t, 422, ans.status, ans.body)
			assert.Equal(t, []string{f.Code + " " + tc.field}, codePaths(res.Errors), f.What)
		}
	}
}

// TestPushWithASlowFileHoldsUpNoOther: while a push's file hangs, another
// push is applied and every other endpoint answers; the hanging push is
// refused with the timeout code at its deadline.
func TestPushWithASlowFileHoldsUpNoOther(t *testing.T) {
	const deadline = 2 * time.Second
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: new(snapshot.Store), Compiler: snapshot.Compiler{FileTimeout: deadline}})
	t.Cleanup(func() { pub.Close() })
	h, err := New(Config{Publisher: pub})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	a := &api{t: t, url: srv.URL, pub: pub, c: &http.Client{Transport: tr, Timeout: 10 * time.Second}}

	certFile, keyFile := pemFiles(t)
	slow := filepath.Join(t.TempDir(), "slow.pem")
	cert, err := os.ReadFile(certFile)
	require.NoError(t, err)
	opened, _ := namedfiletest.Hang(t, slow, cert)

	type result struct {
		status int
		res    PushResult
		err    error
	}
	start := time.Now()
	stuck := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest("PUT", srv.URL+"/config", strings.NewReader(tlsDoc(slow, keyFile, certFile)))
		res, err := a.c.Do(req)
		if err != nil {
			stuck <- result{err: err}
			return
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var pr PushResult
		err = json.Unmarshal(b, &pr)
		stuck <- result{status: res.StatusCode, res: pr, err: err}
	}()
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("the push never read its file")
	}

	b := fixedDoc("b.test", "b")
	ans, res := a.push(b)
	assert.Equal(t, 200, ans.status, "another push, while the first one's file hangs")
	assert.Equal(t, "applied", res.Status)
	assert.Equal(t, b, a.do("GET", "/config", "").body)
	assert.Equal(t, 200, a.do("GET", "/healthz", "").status)
	assert.Equal(t, 200, a.do("GET", "/revisions", "").status)
	select {
	case r := <-stuck:
		t.Fatalf("the hanging push answered %d before the other push and requests were answered: they waited for its file, or it did not hang", r.status)
	default:
	}
	require.Less(t, time.Since(start), deadline, "the other requests took past the deadline: the test proves nothing")

	var r result
	select {
	case r = <-stuck:
	case <-time.After(10 * time.Second):
		t.Fatal("the hanging push got no answer")
	}
	require.NoError(t, r.err)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, deadline)
	assert.Less(t, took, deadline+time.Second, "the push's deadline is the compiler's FileTimeout")
	assert.Equal(t, 422, r.status)
	assert.Equal(t, []string{tlsselect.CodeFileTimeout + " certificates[0].certFile"}, codePaths(r.res.Errors))
	assert.Equal(t, b, a.do("GET", "/config", "").body, "the other push keeps serving")
}

// TestReadTokenFile: a token file is read under the file rules: a FIFO,
// a device or a directory is refused at once with its code.
func TestReadTokenFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(name, []byte("  s3cret\n"), 0o600))
	tok, err := ReadTokenFile(name)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", tok)

	require.NoError(t, os.WriteFile(name, []byte(" \n"), 0o600))
	_, err = ReadTokenFile(name)
	assert.ErrorContains(t, err, "is empty")

	require.NoError(t, os.WriteFile(name, make([]byte, MaxTokenFileSize+1), 0o600))
	_, err = ReadTokenFile(name)
	assert.Equal(t, []string{tlsselect.CodeFileTooLarge}, problemCodes(err))

	for _, f := range namedfiletest.Special(t) {
		start := time.Now()
		_, err := ReadTokenFile(f.Path)
		assert.Less(t, time.Since(start), 2*time.Second, f.What)
		assert.Equal(t, []string{f.Code}, problemCodes(err), f.What)
	}
}

func problemCodes(err error) []string {
	var out []string
	for _, p := range snapshot.Problems(err) {
		out = append(out, p.Code)
	}
	return out
}
