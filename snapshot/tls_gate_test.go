package snapshot

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTLSClientCAsReadAgainReachTheGate: a client CA file rewritten under
// the same name is read again by the next publish, for the handshake and
// for the gate's per-request re-check alike, even though the document
// did not change: a connection verified against the old roots is refused
// (421) for the hosts whose roots no longer hold them, on the connection
// that was already open.
func TestTLSClientCAsReadAgainReachTheGate(t *testing.T) {
	b := startBackend(t, "web")
	caFile := filepath.Join(t.TempDir(), "clients.pem")
	write := func(from string) {
		t.Helper()
		data, err := os.ReadFile(from)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(caFile+".tmp", data, 0o600))
		require.NoError(t, os.Rename(caFile+".tmp", caFile))
	}
	write("testdata/tls/cert2.pem")
	doc := twoCertificates(b.addr)
	doc.Hosts[0].TLS = &config.HostTLS{ClientAuth: "optional", ClientCAs: caFile}
	doc.Hosts[1].TLS = &config.HostTLS{ClientAuth: "required", ClientCAs: caFile}
	addr, pub, store := tlsEdge(t, doc)

	client, err := tls.LoadX509KeyPair("testdata/tls/cert2.pem", "testdata/tls/key2.pem")
	require.NoError(t, err)
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr,
		&tls.Config{ServerName: "app.test", RootCAs: tlsRoots(t), Certificates: []tls.Certificate{client}, NextProtos: []string{"http/1.1"}})
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	br := bufio.NewReader(c)
	status := func(host string) int {
		t.Helper()
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		require.NoError(t, err)
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, res.Body)
		require.NoError(t, err)
		res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, 200, status("app.test"), "the handshake's host, its certificate verified")
	assert.Equal(t, 200, status("other.test"), "verified against the same roots")

	gen := store.Load()
	write("testdata/tls/cert.pem")
	later := time.Now().Add(time.Second)
	require.NoError(t, os.Chtimes(caFile, later, later))
	o, err := pub.Apply(testContext(t), clone(doc))
	require.NoError(t, err)
	require.Equal(t, Applied, o.Status)
	require.NotSame(t, gen, store.Load())

	assert.Equal(t, 421, status("other.test"), "the roots read again no longer hold the connection's")
	assert.Equal(t, 421, status("app.test"), "nor those of the handshake's own host")
}
