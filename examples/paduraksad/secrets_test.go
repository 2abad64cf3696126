package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/secrets"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// stickyDoc writes a document serving a.test over HTTPS from eight
// destinations behind a cookie affinity, and returns its path and the
// pool that trusts its certificate.
func stickyDoc(t *testing.T) (string, *x509.CertPool) {
	t.Helper()
	dir := t.TempDir()
	c, err := tlsselect.SelfSigned(time.Hour, "a.test")
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(c.Leaf)
	certFile, keyFile := writeKeyPair(t, dir, "a.test", c)
	var dests strings.Builder
	for i := range 8 {
		fmt.Fprintf(&dests, "      - {id: d%d, address: \"http://%s\"}\n", i, upstreamServer(t, fmt.Sprint("d", i)))
	}
	cfg := filepath.Join(dir, "paduraksa.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
certificates:
  - {id: one, certFile: `+certFile+`, keyFile: `+keyFile+`}
hosts:
  - {names: [a.test], certificate: one, routes: [{upstream: u}]}
upstreams:
  - id: u
    affinity: {enabled: true}
    destinations:
`+dests.String()), 0o600))
	return cfg, pool
}

// stickyClient is one browser: its cookie, and its TLS session cache.
type stickyClient struct {
	cookie string
	dest   string
	cache  tls.ClientSessionCache
}

// visit sends one request over a new TLS connection to addr with the
// client's cookie, and returns the destination that answered and whether
// the TLS session resumed. It takes the cookie the answer sets.
func (c *stickyClient) visit(t *testing.T, addr string, pool *x509.CertPool) (dest string, resumed bool) {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: wireTimeout}, "tcp", addr,
		&tls.Config{ServerName: "a.test", RootCAs: pool, ClientSessionCache: c.cache, NextProtos: []string{"http/1.1"}})
	require.NoError(t, err)
	defer conn.Close()
	resumed = conn.ConnectionState().DidResume
	tr := &http.Transport{DialTLSContext: func(context.Context, string, string) (net.Conn, error) { return conn, nil }}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequest("GET", "https://a.test/", nil)
	require.NoError(t, err)
	if c.cookie != "" {
		req.Header.Set("Cookie", c.cookie)
	}
	res, err := (&http.Client{Transport: tr, Timeout: wireTimeout}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode, string(b))
	for _, ck := range res.Cookies() {
		c.cookie = ck.Name + "=" + ck.Value
	}
	return string(b), resumed
}

// TestSecretsKeepStickyAndTicketsAcrossRestart: a daemon started on the
// same -secrets file as one before it sends every sticky client to the
// destination it had and resumes every client's TLS session; without the
// file, neither holds.
func TestSecretsKeepStickyAndTicketsAcrossRestart(t *testing.T) {
	cfg, pool := stickyDoc(t)
	path := filepath.Join(t.TempDir(), "secrets.json")
	clients := make([]*stickyClient, 6)

	first := startDaemon(t, "-config", cfg, "-https", "127.0.0.1:0", "-watch", "0", "-secrets", path)
	for i := range clients {
		clients[i] = &stickyClient{cache: tls.NewLRUClientSessionCache(4)}
		clients[i].dest, _ = clients[i].visit(t, first.tlsAddr, pool)
		require.NotEmpty(t, clients[i].cookie, "the first answer sets the affinity cookie")
	}
	st, err := os.Stat(path)
	require.NoError(t, err, "the file is created")
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	assert.Contains(t, first.logs.String(), "secrets read")
	first.stop(t)

	second := startDaemon(t, "-config", cfg, "-https", "127.0.0.1:0", "-watch", "0", "-secrets", path)
	for i, c := range clients {
		dest, resumed := c.visit(t, second.tlsAddr, pool)
		assert.Equal(t, c.dest, dest, "client %d: its cookie leads where it did before the restart", i)
		assert.True(t, resumed, "client %d: its ticket opens after the restart", i)
	}

	// Without the file, a new process has new keys: the control that
	// shows the test can tell.
	third := startDaemon(t, "-config", cfg, "-https", "127.0.0.1:0", "-watch", "0")
	moved, resumedAny := 0, false
	for _, c := range clients {
		dest, resumed := c.visit(t, third.tlsAddr, pool)
		if dest != c.dest {
			moved++
		}
		resumedAny = resumedAny || resumed
	}
	assert.False(t, resumedAny, "no ticket opens under a random secret")
	assert.NotZero(t, moved, "a random affinity key moves some of %d clients", len(clients))
}

// TestSecretsRefusedFileStopsTheStart: a -secrets file that is refused
// stops the daemon before it serves, with the file's code, and is left as
// it was.
func TestSecretsRefusedFileStopsTheStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.json")
	require.NoError(t, os.WriteFile(path, secrets.New().Marshal(), 0o600))
	require.NoError(t, os.Chmod(path, 0o644))
	err := run(context.Background(), []string{"-listen", "127.0.0.1:0", "-https", "off", "-admin", "off", "-secrets", path}, options{stdout: io.Discard, stderr: io.Discard})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "-secrets: "+path+": mode 0644")
	assert.Contains(t, err.Error(), secrets.CodePermissions)
}

// TestSecretsAcrossProcesses: the same over two processes of the daemon's
// binary, the second started after the first exited.
func TestSecretsAcrossProcesses(t *testing.T) {
	cfg, pool := stickyDoc(t)
	path := filepath.Join(t.TempDir(), "secrets.json")
	args := []string{"-config", cfg, "-watch", "0", "-http", "127.0.0.1:0", "-https", "127.0.0.1:0", "-admin", "off", "-access-log", "off", "-secrets", path}
	clients := make([]*stickyClient, 6)

	first := startProc(t, args, nil, "")
	s, _ := first.ready(0)
	for i := range clients {
		clients[i] = &stickyClient{cache: tls.NewLRUClientSessionCache(4)}
		clients[i].dest, _ = clients[i].visit(t, s.https, pool)
	}
	require.NoError(t, first.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, first.cmd.Wait())

	second := startProc(t, args, nil, "")
	s, _ = second.ready(0)
	for i, c := range clients {
		dest, resumed := c.visit(t, s.https, pool)
		assert.Equal(t, c.dest, dest, "client %d: its cookie leads where it did in the first process", i)
		assert.True(t, resumed, "client %d: its ticket opens in the second process", i)
	}
}
