package listenlimits_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestApplyDefaults(t *testing.T) {
	shared := &http.HTTP2Config{MaxReadFrameSize: 1 << 20}
	srv := &http.Server{HTTP2: shared}
	require.NoError(t, listenlimits.Limits{}.Apply(srv))
	assert.Equal(t, 15*time.Second, srv.ReadHeaderTimeout)
	assert.Equal(t, 120*time.Second, srv.IdleTimeout)
	assert.Equal(t, 32<<10, srv.MaxHeaderBytes)
	assert.Equal(t, 100, srv.HTTP2.MaxConcurrentStreams)
	assert.Equal(t, 1<<20, srv.HTTP2.MaxReadFrameSize, "other HTTP/2 settings are kept")
	assert.Equal(t, 0, shared.MaxConcurrentStreams, "a shared HTTP2Config is not modified")
	assert.Zero(t, srv.ReadTimeout)
	assert.Zero(t, srv.WriteTimeout)

	off := &http.Server{}
	require.NoError(t, listenlimits.Limits{
		RequestHeaderTimeout: listenlimits.Off, IdleTimeout: -1,
		MaxHeaderBytes: listenlimits.Off, HTTP2MaxConcurrentStreams: listenlimits.Off,
	}.Apply(off))
	assert.Zero(t, off.ReadHeaderTimeout)
	assert.Zero(t, off.IdleTimeout)
	assert.Zero(t, off.MaxHeaderBytes)
	assert.Equal(t, 1<<31-1, off.HTTP2.MaxConcurrentStreams)
}

func TestValidate(t *testing.T) {
	err := listenlimits.Limits{
		MinRequestBodyGrace: time.Second,
		MinResponseGrace:    500 * time.Millisecond,
		MaxHeaderBytes:      64 << 20,
	}.Validate()
	var codes []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ve *listenlimits.ValidationError
		require.True(t, errors.As(e, &ve))
		codes = append(codes, ve.Code)
	}
	assert.Equal(t, []string{
		listenlimits.CodeMinRequestBodyGraceInvalid,
		listenlimits.CodeMinResponseGraceInvalid,
		listenlimits.CodeMaxHeaderBytesInvalid,
	}, codes)
	assert.Error(t, listenlimits.Limits{MinRequestBodyGrace: time.Second}.Apply(&http.Server{}))
	// A rate that is off needs no grace.
	assert.NoError(t, listenlimits.Limits{MinRequestBodyRate: listenlimits.Off, MinRequestBodyGrace: time.Second}.Validate())
}

// serve runs srv on a loopback listener (wrapped by wrap when not nil) and
// returns its address.
func serve(t *testing.T, srv *http.Server, wrap func(net.Listener) net.Listener) string {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var ln net.Listener = raw
	if wrap != nil {
		ln = wrap(raw)
	}
	srv.ErrorLog = log.New(io.Discard, "", 0)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return raw.Addr().String()
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })

// readUntilClosed reads c until it fails and returns what it read.
func readUntilClosed(t *testing.T, c net.Conn) string {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
	b, err := io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server did not close the connection")
	}
	return string(b)
}

func TestSlowlorisIsClosed(t *testing.T) {
	srv := &http.Server{Handler: ok}
	require.NoError(t, listenlimits.Limits{RequestHeaderTimeout: 50 * time.Millisecond}.Apply(srv))
	addr := serve(t, srv, nil)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	start := time.Now()
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	require.NoError(t, err)
	got := readUntilClosed(t, c) // headers never finish
	// net/http closes without an answer; a 408 would do as well.
	assert.True(t, got == "" || strings.HasPrefix(got, "HTTP/1.1 408"), "got %q", got)
	assert.Less(t, time.Since(start), 5*time.Second)
}

// A slowloris is cut through a Listener too, on a connection's first
// request and on a keep-alive connection's next one, after the requests
// before it had net/http clear its deadlines (which the Listener's
// connection no longer repeats once they are none).
func TestSlowlorisIsClosedThroughListener(t *testing.T) {
	limits := listenlimits.Limits{RequestHeaderTimeout: 50 * time.Millisecond}
	for _, before := range []int{0, 1, 3} {
		t.Run(fmt.Sprint(before, " requests before"), func(t *testing.T) {
			srv := &http.Server{Handler: ok}
			require.NoError(t, limits.Apply(srv))
			addr := serve(t, srv, func(raw net.Listener) net.Listener { return limits.Listener(raw) })

			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer c.Close()
			br := bufio.NewReader(c)
			for range before {
				_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				require.NoError(t, err)
				res, err := http.ReadResponse(br, nil)
				require.NoError(t, err)
				body, err := io.ReadAll(res.Body)
				require.NoError(t, err)
				require.Equal(t, "ok", string(body))
			}
			start := time.Now()
			_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
			require.NoError(t, err)
			got := readUntilClosed(t, &bufferedConn{c, br}) // headers never finish
			assert.True(t, got == "" || strings.HasPrefix(got, "HTTP/1.1 408"), "got %q", got)
			assert.Less(t, time.Since(start), 5*time.Second)
		})
	}
}

// bufferedConn reads c through r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestHeaderDribbleIsCut(t *testing.T) {
	srv := &http.Server{Handler: ok}
	require.NoError(t, listenlimits.Limits{RequestHeaderTimeout: 50 * time.Millisecond}.Apply(srv))
	addr := serve(t, srv, nil)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		// One byte every 5 ms: every byte is in time, the whole is not.
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		msg := "GET / HTTP/1.1\r\nHost: x\r\nX-Dribble: " + strings.Repeat("a", 1<<16)
		for i := 0; i < len(msg); i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := c.Write([]byte{msg[i]}); err != nil {
				return
			}
		}
	})
	got := readUntilClosed(t, c)
	close(stop)
	wait(t, &wg)
	// Cut mid request line, net/http answers 400 before it closes.
	assert.True(t, got == "" || strings.HasPrefix(got, "HTTP/1.1 4"), "got %q", got)
}

func TestSlowUploadIsCut(t *testing.T) {
	bodyErr := make(chan error, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, err := io.Copy(io.Discard, r.Body)
		bodyErr <- err
		if errors.Is(err, listenlimits.ErrTooSlow) {
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusRequestTimeout)
			return
		}
		_, _ = io.WriteString(w, "ok")
	})
	// The grace gives the fast upload ten times the room it needs on a
	// loaded machine.
	limits := listenlimits.Limits{MinRequestBodyRate: 10_000, MinRequestBodyGrace: 500 * time.Millisecond}
	srv := &http.Server{Handler: limits.Handler(h)}
	addr := serve(t, srv, nil)

	// A fast upload passes.
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	resp, err := client.Post("http://"+addr+"/", "text/plain", strings.NewReader(strings.Repeat("x", 100_000)))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	require.NoError(t, recv(t, bodyErr))

	// 1 000 B/s is a tenth of the minimum.
	c := dial(t, addr)
	_, err = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
	require.NoError(t, err)
	stop := trickle(t, c)
	require.ErrorIs(t, recv(t, bodyErr), listenlimits.ErrTooSlow)
	got := readUntilClosed(t, c)
	stop()
	assert.True(t, got == "" || strings.HasPrefix(got, "HTTP/1.1 408"), "got %q", got)
}

func TestSlowReaderIsCut(t *testing.T) {
	writeErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 256 { // far more than the socket buffers hold
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	})
	limits := listenlimits.Limits{MinResponseRate: 100 << 20, MinResponseGrace: 50 * time.Millisecond}
	srv := &http.Server{Handler: limits.Handler(h)}
	addr := serve(t, srv, nil)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	require.NoError(t, err)
	// The client reads nothing: a write soon waits for it past its time.
	select {
	case err := <-writeErr:
		require.ErrorIs(t, err, listenlimits.ErrTooSlow)
	case <-time.After(20 * time.Second):
		t.Fatal("the write was never cut")
	}
}

func TestMaxConnectionsSheds(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := listenlimits.NewListener(raw, 1, 0)
	defer ln.Close()
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()

	c1, err := net.Dial("tcp", raw.Addr().String())
	require.NoError(t, err)
	defer c1.Close()
	s1 := recv(t, accepted)
	assert.Equal(t, int64(1), ln.Active())

	// The second is closed at once, while Accept keeps going.
	c2, err := net.Dial("tcp", raw.Addr().String())
	require.NoError(t, err)
	assert.Equal(t, "", readUntilClosed(t, c2))
	_ = c2.Close()
	assert.Equal(t, uint64(1), ln.Shed())

	require.NoError(t, s1.Close())
	_ = s1.Close() // a second Close gives nothing back
	assert.Equal(t, int64(0), ln.Active())

	c3, err := net.Dial("tcp", raw.Addr().String())
	require.NoError(t, err)
	defer c3.Close()
	s3 := recv(t, accepted)
	assert.Equal(t, int64(1), ln.Active())
	_ = s3.Close()
}

// selfSigned returns a TLS certificate for 127.0.0.1 and localhost.
func selfSigned(t testing.TB) tls.Certificate {
	t.Helper()
	cert, err := testcert.New("localhost", "127.0.0.1")
	require.NoError(t, err)
	return cert
}

func TestUpgrades(t *testing.T) {
	u := listenlimits.NewUpgrades(2)
	assert.True(t, u.TryAcquire())
	assert.True(t, u.TryAcquire())
	assert.False(t, u.TryAcquire())
	assert.Equal(t, uint64(1), u.Refused())
	u.Release()
	assert.True(t, u.TryAcquire())
	u.Release()
	u.Release()
	u.Release() // without its acquire: ignored
	assert.Equal(t, int64(0), u.Active())

	// Under 8 goroutines the cap holds and the count ends at 0.
	u = listenlimits.NewUpgrades(3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak := int64(0)
	for range 8 {
		wg.Go(func() {
			for range 5000 {
				if u.TryAcquire() {
					mu.Lock()
					peak = max(peak, u.Active())
					mu.Unlock()
					u.Release()
				}
			}
		})
	}
	wait(t, &wg)
	assert.LessOrEqual(t, peak, int64(3))
	assert.Equal(t, int64(0), u.Active())

	var unlimited listenlimits.Upgrades
	for range 10 {
		assert.True(t, unlimited.TryAcquire())
	}
}

// pipeListener accepts the server ends of the net.Pipe connections dial
// makes: a listener for tests in a synctest bubble, where time is fake.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *pipeListener) dial() net.Conn {
	s, c := net.Pipe()
	l.conns <- s
	return c
}

// serveTLSInBubble serves srv with limits over TLS on a pipeListener, in
// the calling synctest bubble, until the bubble's test ends.
func serveTLSInBubble(t *testing.T, srv *http.Server, limits listenlimits.Limits, cfg *tls.Config) *pipeListener {
	t.Helper()
	require.NoError(t, limits.Apply(srv))
	srv.ErrorLog = log.New(io.Discard, "", 0)
	pl := newPipeListener()
	go func() { _ = srv.Serve(tls.NewListener(limits.Listener(pl), cfg)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return pl
}

// In fake time: a client that never sends its ClientHello is cut at the
// handshake timeout exactly, long before the header timeout; after the
// handshake the clamp is gone, and headers that take longer than the
// handshake timeout (not the header timeout) are served.
func TestTLSHandshakeTimeout(t *testing.T) {
	cert := selfSigned(t)
	synctest.Test(t, func(t *testing.T) {
		limits := listenlimits.Limits{RequestHeaderTimeout: 10 * time.Second, TLSHandshakeTimeout: 250 * time.Millisecond}
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
		pl := serveTLSInBubble(t, &http.Server{Handler: ok}, limits, cfg)

		start := time.Now()
		idle := pl.dial()
		defer idle.Close()
		assert.Equal(t, "", readUntilClosed(t, idle))
		assert.Equal(t, 250*time.Millisecond, time.Since(start))

		c := tls.Client(pl.dial(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		defer c.Close()
		require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
		for _, part := range []string{"GET / HTTP/1.1\r\n", "Host: x\r\n", "X-A: 1\r\n", "X-B: 2\r\n", "\r\n"} {
			time.Sleep(80 * time.Millisecond) // 400 ms in all
			_, err := io.WriteString(c, part)
			require.NoError(t, err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

// HTTP/2 goes through the same restore of deadlines after the handshake:
// in fake time, a connection lives past the handshake timeout and is
// reused.
func TestTLSHandshakeTimeoutHTTP2(t *testing.T) {
	cert := selfSigned(t)
	synctest.Test(t, func(t *testing.T) {
		limits := listenlimits.Limits{TLSHandshakeTimeout: 250 * time.Millisecond}
		cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
		pl := serveTLSInBubble(t, &http.Server{Handler: ok}, limits, cfg)

		dials := 0
		tr := &http.Transport{ForceAttemptHTTP2: true, DialTLSContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			dials++
			c := tls.Client(pl.dial(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
			return c, c.HandshakeContext(ctx)
		}}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		for i := range 2 {
			if i == 1 {
				time.Sleep(400 * time.Millisecond) // outlive the handshake timeout
			}
			resp, err := client.Get("https://x/")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			assert.Equal(t, 2, resp.ProtoMajor)
			assert.Equal(t, http.StatusOK, resp.StatusCode)
		}
		assert.Equal(t, 1, dials, "the HTTP/2 connection outlived the handshake timeout")
	})
}
