package snapshot

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCompileForwarding compiles every forwarding block of the document and
// checks what reaches the upstream and the client through a real socket.
func TestCompileForwarding(t *testing.T) {
	got := make(chan *http.Request, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r
		w.Header().Set("Location", "/v1/next")
		w.Header().Set("X-Powered-By", "x")
		w.WriteHeader(302)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	no := false
	doc := &config.Document{
		Hosts: []config.Host{{
			Names:     []string{"app.test"},
			RequestID: "generate",
			Headers:   config.Headers{Response: []config.HeaderRule{{Name: "X-Frame-Options", Value: "DENY"}}},
			Routes: []config.Route{
				{Path: "/app", Upstream: "u", HostHeader: "custom", HostName: "internal.test",
					Rewrite: config.Rewrite{StripPrefix: true, AddPrefix: "/v1"},
					Headers: config.Headers{Request: []config.HeaderRule{{Name: "X-Env", Value: "prod"}}, Response: []config.HeaderRule{{Name: "X-Powered-By", Operation: "remove"}}},
					Retry:   config.RouteRetry{Attempts: 1}},
				{Path: "/keep", Upstream: "u", Rewrite: config.Rewrite{StripPrefix: true, RewriteLocation: &no}},
			},
		}},
		Upstreams: []config.Upstream{{ID: "u", Destinations: []config.Destination{{ID: "d", Address: "http://" + ln.Addr().String()}},
			HTTP: config.UpstreamHTTP{IdleTimeout: "30s"}}},
	}
	require.Empty(t, Validate(doc))
	var c Compiler
	s, err := c.compileDocument(doc)
	require.NoError(t, err)
	s.commit()
	front := serve(t, s)
	client := newClient(t)

	res := roundTrip(t, client, front, "/app/x?q=1")
	r := receive(t, got, 10*time.Second)
	assert.Equal(t, "/v1/x?q=1", r.RequestURI)
	assert.Equal(t, "internal.test", r.Host)
	assert.Equal(t, "prod", r.Header.Get("X-Env"))
	assert.Equal(t, "/app", r.Header.Get("X-Forwarded-Prefix"))
	assert.Len(t, r.Header.Get("X-Request-Id"), 32)
	assert.Equal(t, "/app/next", res.Header.Get("Location"))
	assert.Equal(t, "DENY", res.Header.Get("X-Frame-Options"))
	assert.Empty(t, res.Header.Get("X-Powered-By"))
	assert.Equal(t, r.Header.Get("X-Request-Id"), res.Header.Get("X-Request-Id"))

	res = roundTrip(t, client, front, "/keep/x")
	receive(t, got, 10*time.Second)
	assert.Equal(t, "/v1/next", res.Header.Get("Location"), "rewriteLocation false keeps the upstream's")

	cl := s.Cluster("u")
	assert.Equal(t, 30*time.Second, cl.IdleTimeout)
	assert.Equal(t, 30*time.Second, cl.Transport.(*proxy.Transport).Config().ResponseHeaderTimeout)
	assert.NotNil(t, cl.Policy)
	assert.Equal(t, uint64(2), c.Stats("u").Count(upstream.Success))
}

// TestPublishKeepsLiveTunnels upgrades a connection, publishes a document
// that changes the route and the upstream's client settings, and checks
// the tunnel still carries data.
func TestPublishKeepsLiveTunnels(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			brw.WriteString("echo " + line)
			brw.Flush()
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	doc := &config.Document{
		Hosts:     []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{Path: "/", Upstream: "u"}}}},
		Upstreams: []config.Upstream{{ID: "u", Destinations: []config.Destination{{ID: "d", Address: "http://" + ln.Addr().String()}}}},
	}
	store := new(Store)
	var c Compiler
	s, err := c.compileDocument(doc)
	require.NoError(t, err)
	s.commit()
	store.cur.Store(s)
	front := serve(t, store)

	conn, err := net.Dial("tcp", front)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: app.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, 101, res.StatusCode)

	next := clone(doc)
	next.Hosts[0].Routes[0].Rewrite.AddPrefix = "/v2"
	next.Upstreams[0].HTTP.ConnectTimeout = "3s"
	s2, err := c.compileDocument(next)
	require.NoError(t, err)
	s2.commit()
	store.cur.Store(s2)

	io.WriteString(conn, "still there\n")
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "echo still there\n", line)
}

// roundTrip sends a request for app.test through the proxy at addr and
// returns the response, redirects not followed, with its body read.
func roundTrip(t *testing.T, c *http.Client, addr, target string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+target, nil)
	require.NoError(t, err)
	req.Host = "app.test"
	res, err := c.Transport.RoundTrip(req)
	require.NoError(t, err)
	_, err = io.Copy(io.Discard, res.Body)
	require.NoError(t, err)
	res.Body.Close()
	return res
}
