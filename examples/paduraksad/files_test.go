//go:build unix

package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/internal/namedfile/namedfiletest"
	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// runQuickly runs the daemon with args and returns its error, failing
// the test unless it returns within two seconds: a flag file that is a
// FIFO or a device must be refused, not waited on or read.
func runQuickly(t *testing.T, args ...string) error {
	t.Helper()
	done := make(chan error, 1)
	var out, logs syncBuffer
	go func() { done <- run(context.Background(), args, options{stdout: &out, stderr: &logs}) }()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Second):
		t.Fatalf("%v: still running\n%s", args, logs.String())
		return nil
	}
}

// TestDaemonFlagFilesReadByTheRules: -config, -admin-token-file and
// the PEM files of -etcd-ca, -etcd-cert, -etcd-key and -acme-ca naming a
// device, a FIFO no one writes to, a directory, a socket or a
// symlink to /dev/zero stop the daemon at once with the file's code; so
// does a file over the cap (the admin API's document cap for -config).
func TestDaemonFlagFilesReadByTheRules(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(token, []byte("s3cret\n"), 0o600))
	huge := filepath.Join(t.TempDir(), "huge.yaml")
	f, err := os.Create(huge)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(admin.DefaultMaxDocumentBytes+1)) // sparse: nothing is written
	require.NoError(t, f.Close())

	for _, f := range append(namedfiletest.Special(t), namedfiletest.Refused{What: "config over the cap", Path: huge, Code: tlsselect.CodeFileTooLarge}) {
		if f.What != "over the cap" { // 1 MiB is a fine config
			t.Run("-config/"+f.What, func(t *testing.T) {
				err := runQuickly(t, "-config", f.Path, "-listen", "127.0.0.1:0", "-admin", "off")
				require.Error(t, err)
				assert.Contains(t, err.Error(), "("+f.Code+")")
			})
		}
		if f.What != "config over the cap" {
			// The PEM files flags name: etcd's client TLS and the ACME
			// directory's roots, read before anything is dialled.
			for _, flagArgs := range [][]string{
				{"-etcd-ca", f.Path, "-etcd", "https://127.0.0.1:1"},
				{"-etcd-cert", f.Path, "-etcd-key", token, "-etcd", "https://127.0.0.1:1"},
				{"-etcd-key", f.Path, "-etcd-cert", token, "-etcd", "https://127.0.0.1:1"},
				{"-acme-ca", f.Path, "-acme-directory", "https://127.0.0.1:1/dir", "-http", "127.0.0.1:0", "-https", "off"},
			} {
				t.Run(flagArgs[0]+"/"+f.What, func(t *testing.T) {
					err := runQuickly(t, append([]string{"-listen", "127.0.0.1:0", "-admin", "off"}, flagArgs...)...)
					require.Error(t, err)
					assert.Contains(t, err.Error(), flagArgs[0]+": ")
					assert.Contains(t, err.Error(), "("+f.Code+")")
				})
			}
			t.Run("-admin-token-file/"+f.What, func(t *testing.T) {
				err := runQuickly(t, "-admin-token-file", f.Path, "-listen", "127.0.0.1:0")
				require.Error(t, err)
				assert.Contains(t, err.Error(), "-admin-token-file: ")
				assert.Contains(t, err.Error(), "("+f.Code+")")
			})
		}
	}
}

// pemPair writes a certificate for app.test and its key as PEM files.
func pemPair(t *testing.T) (certFile, keyFile string) {
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

// certDoc is a document of one TLS host of the given files.
func certDoc(certFile, keyFile, cas string) string {
	return fmt.Sprintf(`{"certificates": [{"id": "main", "certFile": %q, "keyFile": %q}],
 "hosts": [{"names": ["app.test"], "certificate": "main", "kind": "fixed", "fixed": {"body": "app"},
   "tls": {"clientAuth": "required", "clientCAs": %q}}]}`, certFile, keyFile, cas)
}

// TestDaemonPushAndDraftNamingSpecialFiles: through the daemon's admin
// API, a push and a simulated draft naming such files are refused (422)
// with the file's code at the field's path, at once, and the daemon
// goes on serving and taking pushes.
func TestDaemonPushAndDraftNamingSpecialFiles(t *testing.T) {
	d := startDaemon(t)
	certFile, keyFile := pemPair(t)
	for _, f := range namedfiletest.Special(t) {
		for _, tc := range []struct{ path, doc string }{
			{"certificates[0].certFile", certDoc(f.Path, keyFile, certFile)},
			{"certificates[0].keyFile", certDoc(certFile, f.Path, certFile)},
			{"hosts[0].tls.clientCAs", certDoc(certFile, keyFile, f.Path)},
		} {
			start := time.Now()
			status, res := d.push(t, tc.doc)
			assert.Equal(t, 422, status, f.What)
			var got []string
			for _, p := range res.Errors {
				got = append(got, p.Code+" "+p.Path)
			}
			assert.Equal(t, []string{f.Code + " " + tc.path}, got, "push: %s", f.What)

			status, _, body := d.adminDo(t, "POST", "/simulate", `{"draft": `+tc.doc+`, "probe": {"url": "https://app.test/"}}`)
			assert.Equal(t, 422, status, body)
			var errs struct {
				Errors []struct{ Code, Path string }
			}
			require.NoError(t, json.Unmarshal([]byte(body), &errs), body)
			require.Len(t, errs.Errors, 1, body)
			assert.Equal(t, f.Code+" "+tc.path, errs.Errors[0].Code+" "+errs.Errors[0].Path, "draft: %s", f.What)
			assert.Less(t, time.Since(start), 2*time.Second, "%s at %s", f.What, tc.path)
		}
	}
	status, res := d.push(t, certDoc(certFile, keyFile, certFile))
	assert.Equal(t, 200, status)
	assert.Equal(t, "applied", res.Status)
}

// TestDaemonReloadOfAFIFO: a config file replaced by a FIFO is refused by
// the reload at once (logged with its code), the old config keeps
// serving, and the next push and reload are taken: nothing waits for a
// writer.
func TestDaemonReloadOfAFIFO(t *testing.T) {
	a := upstreamServer(t, "A")
	dir := t.TempDir()
	path := filepath.Join(dir, "paduraksa.yaml")
	writeConfig(t, path, a, "app.test")
	d := startDaemon(t, "-config", path)
	status, body := d.get(t, "app.test", "/")
	require.Equal(t, 200, status)
	require.Equal(t, "A", body)

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	require.NoError(t, os.Rename(fifo, path))
	d.reload <- os.Interrupt
	waitFor(t, "the refusal in the log", func() bool { return strings.Contains(d.logs.String(), "config unreadable") })
	assert.Contains(t, d.logs.String(), tlsselect.CodeFileNotRegular)
	status, body = d.get(t, "app.test", "/")
	assert.Equal(t, 200, status)
	assert.Equal(t, "A", body)

	status, res := d.push(t, twoHosts(a, a))
	assert.Equal(t, 200, status, "a push after the reload of a FIFO")
	assert.Equal(t, "applied", res.Status)
	waitFor(t, "the pushed config", func() bool { s, _ := d.get(t, "new.test", "/"); return s == 200 })
}
