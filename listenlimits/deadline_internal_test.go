package listenlimits

import (
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// countingConn counts the deadline calls that reach it.
type countingConn struct {
	net.Conn
	calls atomic.Int32
}

func (c *countingConn) SetDeadline(t time.Time) error {
	c.calls.Add(1)
	return c.Conn.SetDeadline(t)
}

func (c *countingConn) SetReadDeadline(t time.Time) error {
	c.calls.Add(1)
	return c.Conn.SetReadDeadline(t)
}

func (c *countingConn) SetWriteDeadline(t time.Time) error {
	c.calls.Add(1)
	return c.Conn.SetWriteDeadline(t)
}

// tcpPair is a connected pair of TCP connections on 127.0.0.1.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return a, b
}

// A deadline cleared again while the connection knows it is none costs no
// call; every deadline that changes anything still reaches the socket and
// takes effect: a past one fails a read or write at once, clearing it
// lets the next one through, and a deadline set after a clearing fires.
func TestDeadlineClearedOnce(t *testing.T) {
	a, peer := tcpPair(t)
	inner := &countingConn{Conn: a}
	c := &conn{Conn: inner, ln: &Listener{}, fr: framer{st: sPass}}
	past := time.Unix(1, 0)
	buf := make([]byte, 1)
	calls := func() int32 { return inner.calls.Swap(0) }

	// Unknown at first: the first clearing goes through, the next not.
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	require.NoError(t, c.SetWriteDeadline(time.Time{}))
	require.NoError(t, c.SetWriteDeadline(time.Time{}))
	require.NoError(t, c.SetDeadline(time.Time{}))
	require.Equal(t, int32(2), calls())

	// A read deadline in the past fails the read, and clearing it lets
	// the next read wait for its byte.
	require.NoError(t, c.SetReadDeadline(past))
	_, err := c.Read(buf)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	_, err = peer.Write([]byte("x"))
	require.NoError(t, err)
	n, err := c.Read(buf)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, int32(2), calls())

	// The same for writes, and for both at once.
	require.NoError(t, c.SetWriteDeadline(past))
	_, err = c.Write([]byte("y"))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, c.SetWriteDeadline(time.Time{}))
	_, err = c.Write([]byte("y"))
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(past))
	require.NoError(t, c.SetReadDeadline(time.Time{})) // the write deadline stays
	_, err = c.Write([]byte("y"))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.NoError(t, c.SetDeadline(time.Time{}))
	_, err = c.Write([]byte("y"))
	require.NoError(t, err)
	require.Equal(t, int32(5), calls())

	// A deadline set after the clearings fires.
	require.NoError(t, c.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, err = c.Read(buf)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)

	// After Close every call reaches the socket again, with its error.
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	calls()
	require.NoError(t, c.Close())
	require.ErrorIs(t, c.SetReadDeadline(time.Time{}), net.ErrClosed)
	require.Equal(t, int32(1), calls())
}

// Clearings and sets racing from two goroutines never leave a deadline
// that a clearing made after both is skipped over: each round a read
// after that clearing waits for its byte instead of failing.
func TestDeadlineClearedRacing(t *testing.T) {
	a, peer := tcpPair(t)
	c := &conn{Conn: a, ln: &Listener{}, fr: framer{st: sPass}}
	past := time.Unix(1, 0)
	buf := make([]byte, 1)
	for i := range 2000 {
		var wg sync.WaitGroup
		wg.Go(func() { _ = c.SetReadDeadline(time.Time{}) })
		wg.Go(func() {
			if i%2 == 0 {
				_ = c.SetReadDeadline(past)
			} else {
				_ = c.SetDeadline(past)
			}
		})
		wg.Wait()
		require.NoError(t, c.SetDeadline(time.Time{}))
		_, err := peer.Write([]byte("x"))
		require.NoError(t, err)
		_, err = c.Read(buf)
		require.NoError(t, err, "round %d", i)
		_, err = c.Write(buf)
		require.NoError(t, err, "round %d", i)
		_, err = io.ReadFull(peer, buf)
		require.NoError(t, err)
	}
}

// stallingConn holds its first clearing of the read deadline, once made,
// until hold is closed.
type stallingConn struct {
	net.Conn
	made, hold chan struct{}
	once       sync.Once
}

func (c *stallingConn) SetReadDeadline(t time.Time) error {
	err := c.Conn.SetReadDeadline(t)
	if t.IsZero() {
		c.once.Do(func() {
			close(c.made)
			<-c.hold
		})
	}
	return err
}

// A deadline set after a racing clearing reached the socket, but before
// that clearing returned, is not taken for none: the next clearing goes
// through.
func TestDeadlineSetDuringClearing(t *testing.T) {
	a, peer := tcpPair(t)
	inner := &stallingConn{Conn: a, made: make(chan struct{}), hold: make(chan struct{})}
	c := &conn{Conn: inner, ln: &Listener{}, fr: framer{st: sPass}}
	cleared := make(chan error)
	go func() { cleared <- c.SetReadDeadline(time.Time{}) }()
	<-inner.made
	require.NoError(t, c.SetReadDeadline(time.Unix(1, 0))) // made after the clearing
	close(inner.hold)
	require.NoError(t, <-cleared)
	buf := make([]byte, 1)
	_, err := c.Read(buf)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the later deadline holds")

	require.NoError(t, c.SetReadDeadline(time.Time{}))
	_, err = peer.Write([]byte("x"))
	require.NoError(t, err)
	_, err = c.Read(buf)
	require.NoError(t, err, "the clearing after it took effect")
}

// BenchmarkRequestDeadlines: the deadline calls net/http's server makes
// on a keep-alive connection per request (header deadline, cleared after
// the head, cleared again for the background read, the read's abort and
// clearing, the write deadline cleared, the idle wait's deadline), on a
// TCP socket through the Listener's connection.
func BenchmarkRequestDeadlines(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(b, err)
	defer a.Close()
	peer, err := ln.Accept()
	require.NoError(b, err)
	defer peer.Close()
	c := parkingConn(a, Limits{})
	past := time.Unix(1, 0)
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now()
		_ = c.SetReadDeadline(now.Add(DefaultRequestHeaderTimeout))
		_ = c.SetReadDeadline(time.Time{})
		_ = c.SetReadDeadline(time.Time{})
		_ = c.SetReadDeadline(past)
		_ = c.SetReadDeadline(time.Time{})
		_ = c.SetWriteDeadline(time.Time{})
		reportState(c, http.StateIdle)
		_ = c.SetReadDeadline(now.Add(DefaultIdleTimeout))
	}
}
