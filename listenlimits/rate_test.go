package listenlimits_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recv waits for a value from ch, failing the test after 20 s.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatal("nothing arrived in 20 s")
		var zero T
		return zero
	}
}

// wait waits for wg, failing the test after 20 s.
func wait(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	recv(t, done)
}

// trickle writes 10 bytes to c every 10 ms (1 000 B/s) until the returned
// stop is called, which waits for it to end.
func trickle(t *testing.T, c net.Conn) (stop func()) {
	t.Helper()
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			if _, err := io.WriteString(c, "0123456789"); err != nil {
				return
			}
		}
	})
	return func() { close(quit); wait(t, &wg) }
}

// A request that asks for an upgrade, or is CONNECT, is judged like any
// other until it becomes one: an Upgrade header does not lift the rates
// from a slow body.
func TestUpgradeAskedIsJudged(t *testing.T) {
	for _, head := range []string{
		"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n",
		"POST / HTTP/1.1\r\nHost: x\r\nUpgrade: x\r\n",
		"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n",
	} {
		t.Run(strings.Fields(head)[0], func(t *testing.T) {
			bodyErr := make(chan error, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, err := io.Copy(io.Discard, r.Body)
				bodyErr <- err
			})
			// 1 000 B/s is a tenth of the minimum.
			limits := listenlimits.Limits{MinRequestBodyRate: 10_000, MinRequestBodyGrace: 50 * time.Millisecond}
			addr := serve(t, &http.Server{Handler: limits.Handler(h)}, nil)
			c := dial(t, addr)
			_, err := io.WriteString(c, head+"Content-Length: 1000000\r\n\r\n")
			require.NoError(t, err)
			stop := trickle(t, c)
			defer stop()
			require.ErrorIs(t, recv(t, bodyErr), listenlimits.ErrTooSlow)
		})
	}
}

// A real upgrade is not judged: the handler reads some of the body (the
// rate's deadline is set), hijacks, writes the 101, and the tunnel then
// idles ten times the grace before data flows.
func TestUpgradeIsNotJudged(t *testing.T) {
	const grace = 50 * time.Millisecond
	for _, hijack := range []struct {
		name string
		do   func(http.ResponseWriter) (net.Conn, *bufio.ReadWriter, error)
	}{
		{"http.Hijacker", func(w http.ResponseWriter) (net.Conn, *bufio.ReadWriter, error) {
			hj, ok := w.(http.Hijacker)
			if !ok {
				return nil, nil, errors.New("not an http.Hijacker")
			}
			return hj.Hijack()
		}},
		{"ResponseController", func(w http.ResponseWriter) (net.Conn, *bufio.ReadWriter, error) {
			return http.NewResponseController(w).Hijack()
		}},
	} {
		t.Run(hijack.name, func(t *testing.T) {
			echoed := make(chan error, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer r.Body.Close()
				// One byte of five: the reader's deadline is set at the hijack.
				if _, err := io.ReadFull(r.Body, make([]byte, 1)); err != nil {
					echoed <- err
					return
				}
				c, brw, err := hijack.do(w)
				if err != nil {
					echoed <- err
					return
				}
				defer c.Close()
				_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: raw\r\nConnection: Upgrade\r\n\r\n")
				_ = brw.Flush()
				line, err := brw.ReadString('\n')
				if err == nil {
					_, _ = brw.WriteString(line)
					err = brw.Flush()
				}
				echoed <- err
			})
			limits := listenlimits.Limits{
				MinRequestBodyRate: 10_000, MinRequestBodyGrace: grace,
				MinResponseRate: 10_000, MinResponseGrace: grace,
			}
			srv := &http.Server{Handler: limits.Handler(h)}
			addr := serve(t, srv, func(raw net.Listener) net.Listener { return limits.Listener(raw) })
			c, br := upgraded(t, addr, "Content-Length: 5\r\n\r\na")

			<-time.After(10 * grace) // the tunnel idles
			_, err := io.WriteString(c, "ping\n")
			require.NoError(t, err)
			require.NoError(t, recv(t, echoed))
			line, err := br.ReadString('\n')
			require.NoError(t, err)
			assert.Equal(t, "ping\n", line)
		})
	}
}

// A CONNECT answered 2xx over HTTP/2 is a tunnel on its stream: it idles
// ten times the grace and is not cut. The ResponseWriter is not an
// http.Hijacker there, as net/http's HTTP/2 writer is not.
func TestConnectTunnelIsNotJudged(t *testing.T) {
	const grace = 50 * time.Millisecond
	hijacker := make(chan bool, 1)
	tunnelErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ok := w.(http.Hijacker)
		hijacker <- ok
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		_ = rc.Flush()
		buf := make([]byte, 64)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				_, _ = w.Write(buf[:n])
				_ = rc.Flush()
			}
			if err != nil {
				tunnelErr <- err
				return
			}
		}
	})
	limits := listenlimits.Limits{
		MinRequestBodyRate: 10_000, MinRequestBodyGrace: grace,
		MinResponseRate: 10_000, MinResponseGrace: grace,
	}
	srv := &http.Server{Handler: limits.Handler(h)}
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"h2"}}
	addr := serve(t, srv, func(raw net.Listener) net.Listener { return tls.NewListener(limits.Listener(raw), cfg) })

	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	up, upw := io.Pipe()
	defer upw.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodConnect, "https://"+addr, up)
	require.NoError(t, err)
	req.Host = "tunnel.test:1"
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, 2, resp.ProtoMajor)
	assert.False(t, recv(t, hijacker))

	<-time.After(10 * grace) // the tunnel idles
	_, err = io.WriteString(upw, "ping\n")
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err, "the tunnel was cut")
	assert.Equal(t, "ping\n", line)
	require.NoError(t, upw.Close())
	assert.ErrorIs(t, recv(t, tunnelErr), io.EOF)
}

// nopWriter is a ResponseWriter that keeps nothing and, like net/http's,
// takes deadlines.
type nopWriter struct{ h http.Header }

func (w *nopWriter) Header() http.Header              { return w.h }
func (w *nopWriter) Write(p []byte) (int, error)      { return len(p), nil }
func (w *nopWriter) WriteHeader(int)                  {}
func (w *nopWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *nopWriter) SetWriteDeadline(time.Time) error { return nil }

type nopHijacker struct{ nopWriter }

func (w *nopHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, http.ErrNotSupported
}

// Handler costs one allocation per request, for both wrappers.
func TestHandlerAllocs(t *testing.T) {
	h := listenlimits.Limits{}.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = r.Body.Read(nil)
		_, _ = w.Write(nil)
	}))
	req := httptest.NewRequest(http.MethodPost, "/", nil)
	body := io.NopCloser(strings.NewReader("x"))
	for _, w := range []http.ResponseWriter{&nopWriter{h: http.Header{}}, &nopHijacker{nopWriter{h: http.Header{}}}} {
		allocs := testing.AllocsPerRun(100, func() {
			req.Body = body
			h.ServeHTTP(w, req)
		})
		assert.Equal(t, 1.0, allocs, "%T", w)
	}
}

// deadlineCounter is a nopWriter that counts the write deadlines set on
// it (clearing ones included) and its flushes.
type deadlineCounter struct {
	nopWriter
	deadlines, flushes int
}

func (w *deadlineCounter) SetWriteDeadline(time.Time) error { w.deadlines++; return nil }
func (w *deadlineCounter) FlushError() error                { w.flushes++; return nil }

// Writes that stay within net/http's response buffer since the last flush
// set no deadline; a write past it and every flush do, and a flush starts
// the count again.
func TestHandlerSmallWritesSetNoDeadline(t *testing.T) {
	limits := listenlimits.Limits{MinResponseRate: 1000, MinResponseGrace: 2 * time.Second}
	var cw *deadlineCounter
	var steps []int
	h := limits.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_, _ = w.Write(make([]byte, 1000))
		_, _ = w.Write(make([]byte, 1048)) // 2 KiB in all: still buffered
		steps = append(steps, cw.deadlines)
		_, _ = w.Write(make([]byte, 1)) // past the buffer
		steps = append(steps, cw.deadlines)
		_, _ = w.Write(make([]byte, 1)) // still judged until a flush
		steps = append(steps, cw.deadlines)
		require.NoError(t, rc.Flush())
		steps = append(steps, cw.deadlines)
		_, _ = w.Write(make([]byte, 100)) // buffered again
		steps = append(steps, cw.deadlines)
	}))
	for _, proto := range []int{1, 2} {
		cw = &deadlineCounter{nopWriter: nopWriter{h: http.Header{}}}
		steps = nil
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.ProtoMajor = proto
		h.ServeHTTP(cw, req)
		assert.Equal(t, []int{0, 2, 4, 6, 6}, steps, "HTTP/%d", proto)
		assert.Equal(t, 1, cw.flushes)
	}

	// HTTP/3's writer sends once its headers are out: every write is judged.
	cw = &deadlineCounter{nopWriter: nopWriter{h: http.Header{}}}
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.ProtoMajor = 3
	limits.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("small"))
	})).ServeHTTP(cw, req)
	assert.Equal(t, 2, cw.deadlines)
}

// A client that stops reading is cut even when the answer comes in small
// writes: over HTTP/2 the stream's flow-control window fills, a write
// waits for it past its time.
func TestMinResponseRateSmallWritesHTTP2(t *testing.T) {
	writeErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 100)
		for range 1 << 20 { // 100 MiB: far past the client's window
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	})
	limits := listenlimits.Limits{MinResponseRate: 100 << 20, MinResponseGrace: 1500 * time.Millisecond}
	srv := &http.Server{Handler: limits.Handler(h)}
	require.NoError(t, limits.Apply(srv))
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"h2"}}
	addr := serve(t, srv, func(raw net.Listener) net.Listener { return tls.NewListener(limits.Listener(raw), cfg) })

	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr, nil)
	require.NoError(t, err)
	resp, err := tr.RoundTrip(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 2, resp.ProtoMajor)
	// The client reads nothing more.
	require.ErrorIs(t, recv(t, writeErr), listenlimits.ErrTooSlow)
}

// BenchmarkHandlerSmallAnswer is one small answer (13 bytes, one Write)
// through Limits.Handler on 127.0.0.1, over HTTP/1.1 (4 keep-alive
// connections) and over HTTP/2 with TLS (streams of one connection);
// client and server costs both count.
func BenchmarkHandlerSmallAnswer(b *testing.B) {
	body := []byte("hello, world\n")
	limits := listenlimits.Limits{}
	h := limits.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/plain"}
		_, _ = w.Write(body)
	}))
	for _, proto := range []string{"http1", "http2"} {
		b.Run(proto, func(b *testing.B) {
			srv := &http.Server{Handler: h}
			require.NoError(b, limits.Apply(srv))
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			var ln net.Listener = limits.Listener(raw)
			url := "http://" + raw.Addr().String() + "/"
			tr := &http.Transport{MaxIdleConnsPerHost: 4}
			if proto == "http2" {
				cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(b)}, NextProtos: []string{"h2"}}
				ln, url = tls.NewListener(ln, cfg), "https://"+raw.Addr().String()+"/"
				tr = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}
			}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			defer tr.CloseIdleConnections()
			get := func() error {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					return err
				}
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return err
			}
			require.NoError(b, get()) // a connection made before the clock runs
			b.ReportAllocs()
			b.SetParallelism(2)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := get(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
