package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/stretchr/testify/require"
)

// api is an admin handler on a real loopback listener with its own
// client.
type api struct {
	t   *testing.T
	url string
	pub *snapshot.Publisher
	h   *Handler
	c   *http.Client
}

// newAPI starts a publisher and an admin handler for cfg (its Publisher
// filled in).
func newAPI(t *testing.T, cfg Config) *api {
	t.Helper()
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: new(snapshot.Store)})
	t.Cleanup(func() { pub.Close() })
	cfg.Publisher = pub
	h, err := New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &api{t: t, url: srv.URL, pub: pub, h: h, c: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

// answer is one response, its body read.
type answer struct {
	status int
	header http.Header
	body   string
}

// do sends a request; hdr holds header name and value pairs.
func (a *api) do(method, path, body string, hdr ...string) answer {
	a.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.url+path, r)
	require.NoError(a.t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := a.c.Do(req)
	require.NoError(a.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(a.t, err)
	return answer{status: res.StatusCode, header: res.Header, body: string(b)}
}

// push PUTs a document and decodes the answer.
func (a *api) push(doc string, hdr ...string) (answer, PushResult) {
	a.t.Helper()
	ans := a.do("PUT", "/config", doc, hdr...)
	var res PushResult
	require.NoError(a.t, json.Unmarshal([]byte(ans.body), &res), ans.body)
	return ans, res
}

// errorCode decodes an error answer's code.
func errorCode(t *testing.T, ans answer) string {
	t.Helper()
	var e ErrorBody
	require.NoError(t, json.Unmarshal([]byte(ans.body), &e), ans.body)
	require.Equal(t, "application/json", ans.header.Get("Content-Type"))
	return e.Error.Code
}

// codePaths lists problems as "code path".
func codePaths(ps []Problem) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = strings.TrimSpace(p.Code + " " + p.Path)
	}
	return out
}

// fixedDoc is a YAML document of one fixed host answering body.
func fixedDoc(host, body string) string {
	return fmt.Sprintf("hosts:\n  - names: [%s]\n    kind: fixed\n    fixed: {status: 200, body: %q}\n", host, body)
}

// refusedAddr returns a loopback address nothing listens on and nothing
// can bind while the test runs: the local end of an open connection.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	peer, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { peer.Close() })
	return c.LocalAddr().String()
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var errDisk = errors.New("disk full")

func httptestServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}
