package proxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// echoUpstream answers every request with its method and body.
func echoUpstream(t *testing.T) string {
	return listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+string(b))
	}))
}

// notSent returns the NotSent flags of the recorded observations.
func (r *recorder) notSent() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	var k []bool
	for _, o := range r.obs {
		k = append(k, o.NotSent)
	}
	return k
}

// TestRefusedConnectionIsRetriedForAnyMethod: with no retry block, a POST
// whose first destination refuses the connection goes to the next one,
// body and all, on both HTTP/1.1 clients (a body of unknown length goes
// through net/http's even on the direct one); the refusal is reported as
// a request that never left, and counted as a connect retry.
func TestRefusedConnectionIsRetriedForAnyMethod(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length int64 // -1: chunked
	}{{"known length", 5}, {"chunked", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			obs, stats := new(recorder), new(proxy.Stats)
			addr, _ := setup{observer: obs, stats: stats}.start(t, refusedAddr(t), echoUpstream(t))
			req := mustReq("POST", "/")
			req.Body = io.NopCloser(strings.NewReader("hello"))
			req.ContentLength = tc.length
			res, body := do(t, addr, req)
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.Equal(t, "POST hello", body)
			assert.Equal(t, []upstream.Outcome{upstream.ConnectError, upstream.Success}, obs.outcomes())
			assert.Equal(t, []bool{true, false}, obs.notSent())
			assert.Equal(t, uint64(1), stats.ConnectRetries())
			assert.Equal(t, uint64(1), stats.Retries())
		})
	}
}

// TestRefusedConnectionIsRetriedOverHTTP2: toward an h2c upstream,
// net/http's HTTP/2 client took no connection for the refused attempt,
// so the PUT never left and goes to the next destination.
func TestRefusedConnectionIsRetriedOverHTTP2(t *testing.T) {
	obs, stats := new(recorder), new(proxy.Stats)
	h2 := listenH2C(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Proto+" "+r.Method+" "+string(b))
	}))
	addr, _ := setup{observer: obs, stats: stats, client: proxy.ClientConfig{Version: proxy.HTTP2, VersionPolicy: proxy.VersionExact}}.
		start(t, refusedAddr(t), h2)
	req := mustReq("PUT", "/")
	req.Body = io.NopCloser(strings.NewReader("v=2"))
	req.ContentLength = 3
	res, body := do(t, addr, req)
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "HTTP/2.0 PUT v=2", body)
	assert.Equal(t, []bool{true, false}, obs.notSent())
	assert.Equal(t, uint64(1), stats.ConnectRetries())
}

// TestFailedUpstreamHandshakeIsRetried: a TLS handshake that fails (the
// destination speaks plain HTTP) never sent the request either.
func TestFailedUpstreamHandshakeIsRetried(t *testing.T) {
	obs, stats := new(recorder), new(proxy.Stats)
	good, _, _ := tlsUpstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "tls") }), "localhost")
	addr, _ := setup{observer: obs, stats: stats, scheme: "https", client: proxy.ClientConfig{Trust: proxy.TrustAny}}.start(t, echoUpstream(t), good)
	res, body := do(t, addr, mustReq("DELETE", "/"))
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "tls", body)
	assert.Equal(t, []upstream.Outcome{upstream.TLSError, upstream.Success}, obs.outcomes())
	assert.Equal(t, []bool{true, false}, obs.notSent())
	assert.Equal(t, uint64(1), stats.ConnectRetries())
}

// TestConnectFailuresOff: a route that turns the retry off answers the
// refusal 502, and a request that left (its destination hung up after
// reading it) is never retried as one that did not.
func TestConnectFailuresOff(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		obs, stats := new(recorder), new(proxy.Stats)
		addr, _ := setup{observer: obs, stats: stats, route: proxy.RouteConfig{Retry: proxy.Retry{ConnectFailures: proxy.ConnectFailuresOff}}}.
			start(t, refusedAddr(t), echoUpstream(t))
		res, _ := do(t, addr, mustReq("POST", "/"))
		assert.Equal(t, http.StatusBadGateway, res.StatusCode)
		assert.Equal(t, []bool{true}, obs.notSent(), "still reported as never sent, for health")
		assert.Zero(t, stats.Retries())
	})
	t.Run("the request left", func(t *testing.T) {
		obs, stats := new(recorder), new(proxy.Stats)
		addr, _ := setup{observer: obs, stats: stats}.start(t, hangUpAddr(t), echoUpstream(t))
		res, _ := do(t, addr, mustReq("POST", "/"))
		assert.Equal(t, http.StatusBadGateway, res.StatusCode)
		assert.Equal(t, []upstream.Outcome{upstream.ResponseHeaderError}, obs.outcomes())
		assert.Equal(t, []bool{false}, obs.notSent())
		assert.Zero(t, stats.Retries())
	})
}

// exitingAddr is a destination that exits on the first request it
// reads, as a process does: its listener closes and the connection is
// reset, unanswered. It reports how many requests it read.
func exitingAddr(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	read := new(atomic.Int64)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(patience))
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
		}
		read.Add(1)
		ln.Close()
		c.(*net.TCPConn).SetLinger(0)
	}()
	return ln.Addr().String(), read
}

// TestExitingDestinationCostsAGETNothing: with no retry block, a GET
// whose destination read it and exited (listener closed, connection
// reset, no answer) is sent again once on a new connection by the direct
// client, which the exited destination refuses, so it goes to the next
// destination and is answered. net/http's client sends again only what a
// pooled connection dropped, so there the GET is answered 502. A POST is
// not sent again (it may have taken effect): 502 on both.
func TestExitingDestinationCostsAGETNothing(t *testing.T) {
	for _, c := range []proxy.HTTP1Client{proxy.HTTP1Direct, proxy.HTTP1NetHTTP} {
		t.Run(c.String()+"/GET", func(t *testing.T) {
			obs, stats := new(recorder), new(proxy.Stats)
			exiting, read := exitingAddr(t)
			addr, _ := setup{observer: obs, stats: stats, client: proxy.ClientConfig{HTTP1: c}}.start(t, exiting, echoUpstream(t))
			res, body := do(t, addr, mustReq("GET", "/"))
			assert.EqualValues(t, 1, read.Load())
			if c == proxy.HTTP1NetHTTP {
				assert.Equal(t, http.StatusBadGateway, res.StatusCode)
				assert.Equal(t, []upstream.Outcome{upstream.ResponseHeaderError}, obs.outcomes())
				return
			}
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.Equal(t, "GET ", body)
			assert.Equal(t, []upstream.Outcome{upstream.ConnectError, upstream.Success}, obs.outcomes())
			assert.Equal(t, uint64(1), stats.ConnectRetries())
		})
		t.Run(c.String()+"/POST", func(t *testing.T) {
			obs, stats := new(recorder), new(proxy.Stats)
			exiting, read := exitingAddr(t)
			addr, _ := setup{observer: obs, stats: stats, client: proxy.ClientConfig{HTTP1: c}}.start(t, exiting, echoUpstream(t))
			res, _ := do(t, addr, mustReq("POST", "/"))
			assert.Equal(t, http.StatusBadGateway, res.StatusCode)
			assert.EqualValues(t, 1, read.Load())
			assert.Equal(t, []upstream.Outcome{upstream.ResponseHeaderError}, obs.outcomes())
			assert.Zero(t, stats.Retries())
		})
	}
}

// TestTimeoutAfterTheRequestLeftIsNotRetried: a POST that reached a
// destination which never answers times out (504) and is not sent
// elsewhere: its connection was taken and the request written, on both
// clients (a chunked body goes through net/http's).
func TestTimeoutAfterTheRequestLeftIsNotRetried(t *testing.T) {
	for _, length := range []int64{5, -1} {
		t.Run(fmt.Sprint("length ", length), func(t *testing.T) {
			obs, stats := new(recorder), new(proxy.Stats)
			addr, _ := setup{observer: obs, stats: stats, client: proxy.ClientConfig{ResponseHeaderTimeout: 200 * time.Millisecond}}.
				start(t, silentListener(t), echoUpstream(t))
			req := mustReq("POST", "/")
			req.Body = io.NopCloser(strings.NewReader("hello"))
			req.ContentLength = length
			res, _ := do(t, addr, req)
			assert.Equal(t, http.StatusGatewayTimeout, res.StatusCode)
			assert.Equal(t, []upstream.Outcome{upstream.Timeout}, obs.outcomes())
			assert.Equal(t, []bool{false}, obs.notSent())
			assert.Zero(t, stats.Retries())
		})
	}
}

// TestConnectRetriesAreBounded: a cluster that refuses everything costs a
// request at most 1 + MaxConnectRetries attempts, each on another
// destination, and the client a 502.
func TestConnectRetriesAreBounded(t *testing.T) {
	obs, stats := new(recorder), new(proxy.Stats)
	addr, _ := setup{observer: obs, stats: stats}.start(t, refusedAddr(t), refusedAddr(t), refusedAddr(t), refusedAddr(t), refusedAddr(t))
	res, _ := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, http.StatusBadGateway, res.StatusCode)
	require.Len(t, obs.obs, 1+proxy.MaxConnectRetries)
	seen := map[*upstream.Destination]bool{}
	for _, o := range obs.obs {
		assert.False(t, seen[o.Destination], "%s tried twice", o.Destination.ID())
		seen[o.Destination] = true
		assert.True(t, o.NotSent)
	}
	assert.Equal(t, uint64(proxy.MaxConnectRetries), stats.ConnectRetries())
}

// TestRefusingDestinationLeavesRotation: with a health.Monitor as the
// observer and no health config at all, the destination that refused is
// ejected at once (an event says why), so the next requests go straight
// to the live one.
func TestRefusingDestinationLeavesRotation(t *testing.T) {
	m := health.New(health.Options{})
	t.Cleanup(func() { m.Close() })
	require.NoError(t, m.Start(context.Background()))
	changes := make(chan health.Change, 8)
	t.Cleanup(m.Subscribe(func(c health.Change) { changes <- c }))
	stats := new(proxy.Stats)
	addr, cl := setup{observer: m, stats: stats}.start(t, refusedAddr(t), echoUpstream(t))

	res, body := do(t, addr, mustReq("PATCH", "/"))
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "PATCH ", body)
	ev := recv(t, changes)
	assert.Equal(t, "a", ev.DestinationID)
	assert.Equal(t, health.CheckEjection, ev.Check)
	assert.Equal(t, upstream.EjectConnectFailure, ev.EjectReason)
	assert.Equal(t, health.ConnectFailureEjectionTime, ev.EjectedFor)
	assert.Equal(t, []string{"b"}, available(cl.Upstream))
	e, ok := m.Ejection(cl.Upstream.Destination("a"))
	require.True(t, ok)
	assert.Equal(t, health.ConnectFailureEjectionTime, e.Until.Sub(e.Since))

	for range 5 {
		res, _ := do(t, addr, mustReq("GET", "/"))
		assert.Equal(t, http.StatusOK, res.StatusCode)
	}
	assert.Equal(t, uint64(1), stats.ConnectRetries(), "only the first request met the refusal")
}

// TestConnectTimeoutsStopAtPanic: a connect that timed out is retried
// elsewhere while the cluster has destinations in rotation, never once
// every one is out (panic mode), where each retry would cost the client
// another connect timeout.
func TestConnectTimeoutsStopAtPanic(t *testing.T) {
	m := health.New(health.Options{})
	t.Cleanup(func() { m.Close() })
	obs := &fanOut{m, new(recorder)}
	addr, cl := setup{observer: obs, client: proxy.ClientConfig{ConnectTimeout: 150 * time.Millisecond}}.
		start(t, blackholeAddr(t), blackholeAddr(t))
	res, _ := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, http.StatusGatewayTimeout, res.StatusCode)
	assert.Equal(t, []upstream.Outcome{upstream.Timeout, upstream.Timeout}, obs.r.outcomes(), "the second destination was still in rotation")
	assert.Equal(t, []bool{true, true}, obs.r.notSent())
	require.True(t, cl.Upstream.Members().Panic)

	res, _ = do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, http.StatusGatewayTimeout, res.StatusCode)
	assert.Len(t, obs.r.outcomes(), 3, "in panic mode, one connect timeout and no retry")
}

// fanOut tells a monitor and a recorder.
type fanOut struct {
	m *health.Monitor
	r *recorder
}

func (f *fanOut) Observe(o upstream.Observation) {
	f.m.Observe(o)
	f.r.Observe(o)
}

// TestConnectsShareOneWindow: the connects of one request, its retries
// included, end within ConnectWindow connect timeouts of its first
// attempt, on both HTTP/1.1 clients: a cluster of dark destinations with
// retries to spare costs a request no more than that, not a connect
// timeout per destination (four here).
func TestConnectsShareOneWindow(t *testing.T) {
	const ct = 200 * time.Millisecond
	for _, c := range []proxy.HTTP1Client{proxy.HTTP1Direct, proxy.HTTP1NetHTTP} {
		t.Run(c.String(), func(t *testing.T) {
			obs := new(recorder)
			addr, _ := setup{observer: obs, route: proxy.RouteConfig{Retry: proxy.Retry{Attempts: 5}},
				client: proxy.ClientConfig{ConnectTimeout: ct, HTTP1: c}}.
				start(t, blackholeAddr(t), blackholeAddr(t), blackholeAddr(t), blackholeAddr(t))
			start := time.Now()
			res, _ := do(t, addr, mustReq("GET", "/"))
			took := time.Since(start)
			assert.Equal(t, http.StatusGatewayTimeout, res.StatusCode)
			assert.LessOrEqual(t, len(obs.outcomes()), proxy.ConnectWindow, "attempts")
			assert.Less(t, took, (proxy.ConnectWindow+1)*ct, "the window, and less than a connect timeout more")
			for _, o := range obs.outcomes() {
				assert.Equal(t, upstream.Timeout, o)
			}
		})
	}
}
