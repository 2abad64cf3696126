package gate

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForwardAuth(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var seenHeader http.Header
	seen := func() http.Header { mu.Lock(); defer mu.Unlock(); return seenHeader }
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seenHeader = r.Header.Clone()
		mu.Unlock()
		switch r.Header.Get("Authorization") {
		case "Bearer good":
			w.Header().Set("X-User", "ann")
			w.WriteHeader(http.StatusNoContent)
		case "Bearer slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="x"`)
			w.Header().Set("X-User", "leaked")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte("sign in first\n"))
		}
	}))
	t.Cleanup(auth.Close)
	t.Cleanup(func() { close(release) })

	downURL := "http://" + closingListener(t)

	// The answering service gets the default timeout (5 s, room for a
	// loaded machine); only the one that never answers has a short one.
	fa, err := NewForwardAuth(ForwardAuthConfig{ID: "auth", URL: auth.URL, Client: authClient(t),
		RequestHeaders: []string{"Authorization"}, IdentityHeaders: []string{"x-user"}})
	require.NoError(t, err)
	slow, err := NewForwardAuth(ForwardAuthConfig{ID: "slow", URL: auth.URL, Client: authClient(t), Timeout: 200 * time.Millisecond, RequestHeaders: []string{"Authorization"}})
	require.NoError(t, err)
	down, err := NewForwardAuth(ForwardAuthConfig{ID: "down", URL: downURL, Client: authClient(t)})
	require.NoError(t, err)
	g, err := New(Config{Hosts: []Host{
		{Names: []string{"app.test"}, Policies: []PolicyUse{{Policy: fa}}, Routes: []Route{{Prefix: "/", Target: echoTarget}}},
		{Names: []string{"slow.test"}, Policies: []PolicyUse{{Policy: slow}}, Routes: []Route{{Prefix: "/", Target: echoTarget}}},
		{Names: []string{"down.test"}, Policies: []PolicyUse{{Policy: down}}, Routes: []Route{{Prefix: "/", Target: echoTarget}}},
	}})
	require.NoError(t, err)
	addr := serve(t, g)

	t.Run("allowed", func(t *testing.T) {
		resp := do(t, addr, call{method: "PUT", host: "app.test", target: "/doc?id=1",
			header: http.Header{"Authorization": {"Bearer good"}, "X-User": {"forged"}}})
		assert.Equal(t, 200, resp.StatusCode)
		assert.Equal(t, "ann", resp.Header.Get("X-User"), "identity copied from the auth service")
		assert.Empty(t, resp.Header.Get("X-Client-User"), "the client's identity header removed")
		assert.Equal(t, "PUT", seen().Get("X-Forwarded-Method"))
		assert.Equal(t, "/doc?id=1", seen().Get("X-Forwarded-Uri"))
		assert.Equal(t, "app.test", seen().Get("X-Forwarded-Host"))
		assert.Equal(t, "127.0.0.1", seen().Get("X-Forwarded-For"))
		assert.Empty(t, seen().Get("X-User"), "the client's identity header never reaches the auth service")
	})
	t.Run("denied", func(t *testing.T) {
		resp := do(t, addr, call{host: "app.test", target: "/", header: http.Header{"Authorization": {"Bearer bad"}, "X-User": {"forged"}}})
		assert.Equal(t, 401, resp.StatusCode)
		assert.Equal(t, "sign in first\n", body(t, resp))
		assert.Equal(t, `Bearer realm="x"`, resp.Header.Get("WWW-Authenticate"))
		assert.Empty(t, resp.Header.Get("X-User"))
	})
	t.Run("slow", func(t *testing.T) {
		resp := do(t, addr, call{host: "slow.test", target: "/", header: http.Header{"Authorization": {"Bearer slow"}}})
		assert.Equal(t, 504, resp.StatusCode)
	})
	t.Run("down", func(t *testing.T) {
		resp := do(t, addr, call{host: "down.test", target: "/"})
		assert.Equal(t, 503, resp.StatusCode)
	})
	t.Run("simulated", func(t *testing.T) {
		tr, steps := record()
		w := newNopWriter()
		g.Simulate(w, readRequest(t, "GET / HTTP/1.1\r\nHost: down.test\r\n\r\n", "192.0.2.1:1"), tr)
		var reasons []string
		for _, s := range *steps {
			if s.Kind == StepPolicy {
				reasons = append(reasons, s.Verdict.String()+": "+s.Reason)
			}
		}
		assert.Equal(t, []string{"defer: would call " + downURL}, reasons)
		assert.Equal(t, StepHandOver, (*steps)[len(*steps)-1].Kind)
	})
}

// authClient is a forward-auth client like the default one (no redirects
// followed) on a transport of the test's own.
func authClient(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// closingListener returns the address of a listener that closes every
// connection it accepts at once: a call to it fails without a timeout, and
// the port stays taken while the test runs.
func closingListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}
