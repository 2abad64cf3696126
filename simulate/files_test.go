//go:build unix

package simulate

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
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

// draftFiles writes a certificate for app.test and its key as PEM
// files, and returns a function making the JSON of a draft of one TLS
// host requiring client certificates with its files.
func draftFiles(t *testing.T) (certFile, keyFile string, draft func(certFile, keyFile, cas string) string) {
	t.Helper()
	c, err := testcert.New("app.test")
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600))
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	return certFile, keyFile, func(certFile, keyFile, cas string) string {
		b, err := json.Marshal(map[string]any{
			"certificates": []any{map[string]any{"id": "main", "certFile": certFile, "keyFile": keyFile}},
			"hosts": []any{map[string]any{"names": []string{"app.test"}, "certificate": "main", "kind": "fixed",
				"fixed": map[string]any{"body": "app"}, "tls": map[string]any{"clientAuth": "required", "clientCAs": cas}}},
		})
		require.NoError(t, err)
		return string(b)
	}
}

// TestDraftNamingSpecialFiles: a draft given to POST /simulate and
// /simulate/diff whose certFile, keyFile or clientCAs names a device, a
// FIFO, a directory, a socket, a symlink to /dev/zero or a file over the
// cap is refused (422) with the file's code at the field's path, at once.
func TestDraftNamingSpecialFiles(t *testing.T) {
	store := publish(t, diffBase, snapshot.Compiler{})
	post := serveHandler(t, NewHandler(HandlerConfig{Store: store}))
	certFile, keyFile, draft := draftFiles(t)
	status, body := post("POST", "/simulate", `{"draft": `+draft(certFile, keyFile, certFile)+`, "probe": {"url": "https://app.test/"}}`)
	require.Equal(t, http.StatusOK, status, body)
	for _, f := range namedfiletest.Special(t) {
		for _, tc := range []struct{ path, draft string }{
			{"certificates[0].certFile", draft(f.Path, keyFile, certFile)},
			{"certificates[0].keyFile", draft(certFile, f.Path, certFile)},
			{"hosts[0].tls.clientCAs", draft(certFile, keyFile, f.Path)},
		} {
			for _, req := range []struct{ path, body string }{
				{"/simulate", `{"draft": ` + tc.draft + `, "probe": {"url": "https://app.test/"}}`},
				{"/simulate/diff", `{"draft": ` + tc.draft + `, "probes": [{"url": "https://app.test/"}]}`},
			} {
				start := time.Now()
				status, body := post("POST", req.path, req.body)
				assert.Less(t, time.Since(start), 2*time.Second, "%s at %s", f.What, tc.path)
				assert.Equal(t, http.StatusUnprocessableEntity, status, body)
				assert.Equal(t, []string{f.Code + " " + tc.path}, errorCodes(t, body), "%s %s", req.path, f.What)
			}
		}
	}
}

// TestDraftWithASlowFileHoldsUpNoPublish: while a draft's file hangs, a
// publish through the same compiler is applied and other simulations are
// answered; the draft is refused with the timeout code at its deadline.
func TestDraftWithASlowFileHoldsUpNoPublish(t *testing.T) {
	const deadline = 2 * time.Second
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store, Compiler: snapshot.Compiler{FileTimeout: deadline}})
	t.Cleanup(func() { pub.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), patienceTest)
	defer cancel()
	_, err := pub.Apply(ctx, decode(t, diffBase))
	require.NoError(t, err)
	compiler := &snapshot.Compiler{FileTimeout: deadline}
	srv := httptest.NewServer(NewHandler(HandlerConfig{Store: store, Compiler: compiler}))
	t.Cleanup(srv.Close)
	client := &http.Client{Timeout: patienceTest}
	t.Cleanup(client.CloseIdleConnections)
	post := func(body string) (int, string, error) {
		res, err := client.Post(srv.URL+"/simulate", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, string(b), err
	}

	certFile, keyFile, draft := draftFiles(t)
	slow := filepath.Join(t.TempDir(), "slow.pem")
	opened, _ := namedfiletest.Hang(t, slow, nil)
	start := time.Now()
	type answer struct {
		status int
		body   string
		err    error
	}
	stuck := make(chan answer, 1)
	go func() {
		status, body, err := post(`{"draft": ` + draft(certFile, keyFile, slow) + `, "probe": {"url": "https://app.test/"}}`)
		stuck <- answer{status, body, err}
	}()
	select {
	case <-opened:
	case <-time.After(patienceTest):
		t.Fatal("the draft never read its file")
	}

	next := decode(t, diffBase)
	next.Hosts[0].Names = append(next.Hosts[0].Names, "more.example.com")
	o, err := pub.Apply(ctx, next)
	require.NoError(t, err)
	assert.Equal(t, snapshot.Applied, o.Status, "a publish, while the draft's file hangs")
	status, body, err := post(`{"probe": {"url": "http://more.example.com/v2/x"}}`)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status, body)
	select {
	case a := <-stuck:
		t.Fatalf("the draft answered %d before the publish and the live simulation: they waited for it, or its file did not hang", a.status)
	default:
	}
	require.Less(t, time.Since(start), deadline, "the publish took past the deadline: the test proves nothing")

	var a answer
	select {
	case a = <-stuck:
	case <-time.After(patienceTest):
		t.Fatal("the draft got no answer")
	}
	require.NoError(t, a.err)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, deadline)
	assert.Less(t, took, deadline+time.Second, "the draft's deadline is the compiler's FileTimeout")
	assert.Equal(t, http.StatusUnprocessableEntity, a.status, a.body)
	assert.Equal(t, []string{tlsselect.CodeFileTimeout + " hosts[0].tls.clientCAs"}, errorCodes(t, a.body))
}
