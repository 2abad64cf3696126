package edge_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/listenlimits"
)

// shutdownWait is what a Shutdown with only idle connections may take:
// far less than the context's 2 s. An idle HTTP/2 connection may take
// the second the HTTP/2 server waits after its GOAWAY for the client to
// close, and not much more.
const (
	shutdownWait      = 500 * time.Millisecond
	shutdownWaitHTTP2 = time.Second + shutdownWait
)

// TestShutdownClosesIdleConnectionsAtOnce: Shutdown with an idle
// keep-alive client returns as soon as it ended the connection, long
// before its context ends: HTTP/1.1 on both TCP listeners (parked or
// not) and HTTP/3; HTTP/2 after the GOAWAY's second.
func TestShutdownClosesIdleConnectionsAtOnce(t *testing.T) {
	tlsCfg, pool := tlsFor(t)
	clientTLS := &tls.Config{RootCAs: pool, ServerName: "localhost"}
	const release = 20 * time.Millisecond
	for _, tc := range []struct {
		name  string
		https bool
		park  bool
		wait  time.Duration
		tr    func() http.RoundTripper
	}{
		{"HTTP/1.1", false, false, shutdownWait, func() http.RoundTripper { return &http.Transport{} }},
		{"HTTP/1.1 parked", false, true, shutdownWait, func() http.RoundTripper { return &http.Transport{} }},
		{"HTTP/1.1 over TLS", true, false, shutdownWait, func() http.RoundTripper { return &http.Transport{TLSClientConfig: clientTLS} }},
		{"HTTP/2", true, false, shutdownWaitHTTP2, func() http.RoundTripper {
			return &http.Transport{TLSClientConfig: clientTLS, ForceAttemptHTTP2: true}
		}},
		{"HTTP/3", true, false, shutdownWait, func() http.RoundTripper { return &http3.Transport{TLSClientConfig: clientTLS} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := edge.Start(edge.Config{HTTP: "127.0.0.1:0", HTTPS: "127.0.0.1:0", HTTP3: true, TLS: tlsCfg, Handler: whoAmI,
				Limits: listenlimits.Limits{IdleRelease: release}})
			require.NoError(t, err)
			t.Cleanup(func() { srv.Close() })
			tr := tc.tr()
			t.Cleanup(func() { closeIdle(tr) })
			url := "http://" + srv.Addr(edge.ListenerHTTP).String() + "/"
			if tc.https {
				url = "https://" + srv.Addr(edge.ListenerHTTPS).String() + "/"
			}
			_, err = get(t, tr, url)
			require.NoError(t, err)
			if tc.park {
				deadline := time.Now().Add(patience)
				for srv.Stats().Parked != 1 {
					require.True(t, time.Now().Before(deadline), "the idle connection was never parked")
					time.Sleep(release / 4) // polling a state: parking has no event to wait on
				}
			}
			assert.Less(t, shutdownTook(t, srv), tc.wait, "idle connections end at once")
		})
	}
}

// TestShutdownLetsHTTP2AnswersEnd: an HTTP/2 request in flight when
// Shutdown begins gets its whole answer, and Shutdown returns once it
// was given.
func TestShutdownLetsHTTP2AnswersEnd(t *testing.T) {
	tlsCfg, pool := tlsFor(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	body := bytes.Repeat([]byte("x"), 1<<20)
	srv, err := edge.Start(edge.Config{HTTPS: "127.0.0.1:0", TLS: tlsCfg, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		w.Write(body)
	})})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}, ForceAttemptHTTP2: true}
	t.Cleanup(tr.CloseIdleConnections)
	type answer struct {
		proto string
		n     int
		err   error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := (&http.Client{Transport: tr, Timeout: patience}).Get("https://" + srv.Addr(edge.ListenerHTTPS).String() + "/")
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		got <- answer{res.Proto, len(b), err}
	}()
	<-arrived
	done := make(chan time.Duration, 1)
	go func() { done <- shutdownTook(t, srv) }()
	// Shutdown has begun once the listener refuses connections.
	deadline := time.Now().Add(patience)
	for {
		c, err := net.DialTimeout("tcp", srv.Addr(edge.ListenerHTTPS).String(), patience)
		if err != nil {
			break
		}
		c.Close()
		require.True(t, time.Now().Before(deadline), "the listener still accepts after Shutdown began")
	}
	close(release)
	a := <-got
	require.NoError(t, a.err)
	assert.Equal(t, "HTTP/2.0", a.proto)
	assert.Equal(t, len(body), a.n, "the whole answer")
	select {
	case <-done:
	case <-time.After(patience):
		t.Fatal("Shutdown did not return")
	}
}

// shutdownTook returns how long srv's Shutdown took, with a context of 2 s
// it must not need.
func shutdownTook(t *testing.T, srv *edge.Server) time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	assert.NoError(t, srv.Shutdown(ctx))
	return time.Since(start)
}

func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// TestShutdownUnderHTTP2LoadLosesNoRequest: Shutdown while HTTP/2
// clients keep one connection busy costs no request. A request the
// server took is answered; one it did not take is told so by the GOAWAY,
// and its client retries it on a new connection, which the closed
// listener refuses. No client sees its request cut (an EOF or a reset on
// a request it sent): a connection that looks idle an instant before
// Shutdown may carry a request already on its way.
func TestShutdownUnderHTTP2LoadLosesNoRequest(t *testing.T) {
	tlsCfg, pool := tlsFor(t)
	for round := range 5 {
		srv, err := edge.Start(edge.Config{HTTPS: "127.0.0.1:0", TLS: tlsCfg, Handler: whoAmI})
		require.NoError(t, err)
		url := "https://" + srv.Addr(edge.ListenerHTTPS).String() + "/"
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "localhost"}, ForceAttemptHTTP2: true}
		var ok atomic.Int64
		var mu sync.Mutex
		var lost []string
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					body, err := get(t, tr, url)
					var op *net.OpError
					switch {
					case err == nil && strings.HasPrefix(body, "HTTP/2.0"):
						ok.Add(1)
					case errors.As(err, &op) && op.Op == "dial":
						// Refused by the closed listener: never sent.
					default:
						mu.Lock()
						lost = append(lost, fmt.Sprintf("%q %v", body, err))
						mu.Unlock()
					}
				}
			})
		}
		deadline := time.Now().Add(patience)
		for ok.Load() < 200 {
			require.True(t, time.Now().Before(deadline), "the load did not get going")
			time.Sleep(time.Millisecond) // the load's own progress, counted
		}
		ctx, cancel := context.WithTimeout(context.Background(), patience)
		assert.NoError(t, srv.Shutdown(ctx), "round %d", round)
		cancel()
		close(stop)
		wg.Wait()
		tr.CloseIdleConnections()
		srv.Close()
		require.Empty(t, lost, "round %d: requests cut by Shutdown, with %d answered", round, ok.Load())
	}
}
