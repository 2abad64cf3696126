package h1client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// heldUpstream answers each request "ok" once release is closed, and
// counts the connections it accepted and holds open.
type heldUpstream struct {
	addr           string
	accepted, open atomic.Int64
	maxOpen        atomic.Int64
	release        chan struct{}
	arrived        chan struct{} // one send per request read
}

func newHeldUpstream(t *testing.T) *heldUpstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &heldUpstream{addr: ln.Addr().String(), release: make(chan struct{}), arrived: make(chan struct{}, 64)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.accepted.Add(1)
			n := u.open.Add(1)
			for m := u.maxOpen.Load(); n > m && !u.maxOpen.CompareAndSwap(m, n); m = u.maxOpen.Load() {
			}
			go func() {
				defer u.open.Add(-1)
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					c.SetDeadline(time.Now().Add(patienceInternal))
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					u.arrived <- struct{}{}
					<-u.release
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
						return
					}
				}
			}()
		}
	}()
	return u
}

func getRequest(addr string) *Request {
	return &Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: addr, Opaque: "/"}, Host: "app.test", Header: http.Header{}}
}

// do sends one GET and reads its body.
func do(ctx context.Context, cl *Client, addr string) error {
	var ex Exchange
	if err := cl.Do(ctx, Destination{Addr: addr}, getRequest(addr), &ex); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, &ex)
	ex.Close()
	return err
}

// TestMaxConnsPerDestination: eight concurrent requests over a client
// bounded to two connections per address are all answered, and the
// upstream never holds more than two connections of it.
func TestMaxConnsPerDestination(t *testing.T) {
	u := newHeldUpstream(t)
	cl := New(Config{MaxConnsPerDestination: 2})
	defer cl.CloseIdle()
	ctx, cancel := context.WithTimeout(context.Background(), patienceInternal)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() { errs <- do(ctx, cl, u.addr) })
	}
	for range 2 {
		select {
		case <-u.arrived:
		case <-ctx.Done():
			t.Fatal("no request reached the upstream")
		}
	}
	require.Eventually(t, func() bool { return cl.Pending() == 6 }, patienceInternal, time.Millisecond, "six wait for a connection")
	assert.Equal(t, 2, cl.OpenConns(u.addr))
	close(u.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.EqualValues(t, 2, u.maxOpen.Load(), "connections the upstream held at once")
	assert.EqualValues(t, 2, u.accepted.Load(), "connections dialed")
	assert.EqualValues(t, 6, cl.ConnWaits())
	assert.Zero(t, cl.Pending())
}

// TestMaxPending: past MaxPending requests waiting for a connection the
// next is refused at once with ErrPending; a wait that ends with its
// context is a WaitError, and gives its place back.
func TestMaxPending(t *testing.T) {
	u := newHeldUpstream(t)
	cl := New(Config{MaxConnsPerDestination: 1, MaxPending: 1})
	defer cl.CloseIdle()
	ctx, cancel := context.WithTimeout(context.Background(), patienceInternal)
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- do(ctx, cl, u.addr) }()
	<-u.arrived
	wctx, wcancel := context.WithCancel(ctx)
	second := make(chan error, 1)
	go func() { second <- do(wctx, cl, u.addr) }()
	require.Eventually(t, func() bool { return cl.Pending() == 1 }, patienceInternal, time.Millisecond)
	start := time.Now()
	err := do(ctx, cl, u.addr)
	assert.ErrorIs(t, err, ErrPending)
	assert.Less(t, time.Since(start), time.Second, "refused at once")
	wcancel()
	var we *WaitError
	require.ErrorAs(t, <-second, &we)
	assert.ErrorIs(t, we, context.Canceled)
	assert.Zero(t, cl.Pending())
	close(u.release)
	require.NoError(t, <-first)
	require.NoError(t, do(ctx, cl, u.addr), "the idle connection serves the next")
	assert.EqualValues(t, 1, u.accepted.Load())
}

// TestMaxConnsReleasedOnClose: a connection the upstream closes gives
// its slot back, so the next request dials again instead of waiting.
func TestMaxConnsReleasedOnClose(t *testing.T) {
	addr := cannedUpstream(t, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
	cl := New(Config{MaxConnsPerDestination: 1})
	defer cl.CloseIdle()
	ctx, cancel := context.WithTimeout(context.Background(), patienceInternal)
	defer cancel()
	for range 3 {
		err := do(ctx, cl, addr)
		require.NoError(t, err)
		var we *WaitError
		require.False(t, errors.As(err, &we))
	}
	assert.EqualValues(t, 3, cl.Dials())
	assert.Zero(t, cl.OpenConns(addr))
}
