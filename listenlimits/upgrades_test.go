package listenlimits_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaxUpgradedConnections: Handler holds a place for each request that
// asks for an upgrade while it is served, answers 503 when none is left,
// and lets other requests through meanwhile; a place comes back when the
// tunnel ends.
func TestMaxUpgradedConnections(t *testing.T) {
	release := make(chan struct{})
	tunnels := make(chan struct{}, 4)
	h := listenlimits.Limits{MaxUpgradedConnections: 1}.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") == "" && r.Method != http.MethodConnect {
			w.Write([]byte("plain"))
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: test\r\n\r\n")
		brw.Flush()
		tunnels <- struct{}{}
		<-release // the tunnel lives until the test ends it
	}))
	served := make(chan string, 8) // after Handler returned, its place given back
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		served <- r.URL.Path
	}))
	defer srv.Close()

	dial := func() (net.Conn, *bufio.Reader) {
		t.Helper()
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		require.NoError(t, err)
		require.NoError(t, c.SetDeadline(time.Now().Add(20*time.Second)))
		return c, bufio.NewReader(c)
	}
	upgrade := func(req string) (int, net.Conn) {
		t.Helper()
		c, br := dial()
		_, err := c.Write([]byte(req))
		require.NoError(t, err)
		res, err := http.ReadResponse(br, nil)
		require.NoError(t, err)
		return res.StatusCode, c
	}
	const ws = "GET /ws HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, Upgrade\r\nUpgrade: test\r\n\r\n"

	status, first := upgrade(ws)
	require.Equal(t, 101, status)
	recv(t, tunnels)

	status, c := upgrade(ws)
	assert.Equal(t, 503, status, "the one place is held by the first tunnel")
	c.Close()
	assert.Equal(t, "/ws", recv(t, served))
	status, c = upgrade("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	assert.Equal(t, 503, status, "a CONNECT asks for a tunnel too")
	c.Close()
	recv(t, served)

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr, Timeout: 20 * time.Second}).Get(srv.URL + "/plain")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 200, res.StatusCode, "plain requests do not count")
	assert.Equal(t, "/plain", recv(t, served))

	close(release) // the first tunnel ends and gives its place back
	first.Close()
	assert.Equal(t, "/ws", recv(t, served))
	status, c = upgrade(ws)
	c.Close()
	assert.Equal(t, 101, status)
}
