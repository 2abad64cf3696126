package listenlimits

import (
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// deadlineConn is a net.Conn that records its read deadline and answers
// each Read with its next result, without a socket.
type deadlineConn struct {
	net.Conn
	readDL time.Time
	data   []byte
	err    error
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error { c.readDL = t; return nil }
func (c *deadlineConn) SetDeadline(t time.Time) error     { c.readDL = t; return nil }
func (c *deadlineConn) Read(p []byte) (int, error)        { return copy(p, c.data), c.err }
func (c *deadlineConn) Close() error                      { return nil }

func parkingConn(inner net.Conn, l Limits) *conn {
	return &conn{Conn: inner, ln: l.Listener(nil), fr: framer{st: sPass}}
}

// Only the idle wait's deadline is moved to the release time, and only a
// timeout of that wait parks: a header or body timeout after it (the
// server sets its own deadline for those) stays a timeout.
func TestIdleWaitDeadline(t *testing.T) {
	inner := &deadlineConn{}
	c := parkingConn(inner, Limits{IdleRelease: 50 * time.Millisecond})
	idleUntil := time.Now().Add(DefaultIdleTimeout) // as net/http sets it

	// Not reported idle: deadlines pass through.
	require.NoError(t, c.SetReadDeadline(idleUntil))
	require.Equal(t, idleUntil, inner.readDL)

	reportState(c, http.StateIdle)
	require.NoError(t, c.SetReadDeadline(idleUntil))
	require.WithinDuration(t, time.Now().Add(50*time.Millisecond), inner.readDL, 40*time.Millisecond)
	require.Equal(t, idleUntil, c.idleUntil)
	inner.err = os.ErrDeadlineExceeded
	n, err := c.Read(make([]byte, 8))
	require.Zero(t, n)
	require.Equal(t, io.EOF, err, "the idle wait ended at the release time")
	require.True(t, c.parking.Load())

	// The next request's header deadline disarms: its timeout is the
	// server's.
	c.parking.Store(false)
	reportState(c, http.StateIdle)
	require.NoError(t, c.SetReadDeadline(idleUntil))
	hdr := time.Now().Add(15 * time.Second)
	require.NoError(t, c.SetReadDeadline(hdr))
	require.Equal(t, hdr, inner.readDL)
	_, err = c.Read(make([]byte, 8))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.False(t, c.parking.Load())

	// An idle timeout shorter than the release is kept as it is.
	short := parkingConn(inner, Limits{IdleRelease: 50 * time.Millisecond, IdleTimeout: 30 * time.Millisecond})
	reportState(short, http.StateIdle)
	soon := time.Now().Add(30 * time.Millisecond)
	require.NoError(t, short.SetReadDeadline(soon))
	require.Equal(t, soon, inner.readDL)
	_, err = short.Read(make([]byte, 8))
	require.ErrorIs(t, err, os.ErrDeadlineExceeded, "the server's idle timeout closes, it does not park")

	// An idle wait with no end (IdleTimeout off) is released too.
	endless := parkingConn(inner, Limits{IdleRelease: 50 * time.Millisecond, IdleTimeout: Off})
	reportState(endless, http.StateIdle)
	require.NoError(t, endless.SetReadDeadline(time.Time{}))
	require.WithinDuration(t, time.Now().Add(50*time.Millisecond), inner.readDL, 40*time.Millisecond)

	// Data within the release: served as it is.
	reportState(c, http.StateIdle)
	require.NoError(t, c.SetReadDeadline(idleUntil))
	inner.data, inner.err = []byte("GET "), nil
	n, err = c.Read(make([]byte, 8))
	require.NoError(t, err)
	require.Equal(t, 4, n)
	require.False(t, c.armed.Load())
}

// The idle wait of a keep-alive connection allocates nothing of ours.
func TestIdleWaitAllocs(t *testing.T) {
	inner := &deadlineConn{data: []byte("GET / HTTP/1.1\r\n")}
	c := parkingConn(inner, Limits{})
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(1000, func() { idleCycle(c, buf) })
	require.Zero(t, allocs)
}

// idleCycle is what a keep-alive connection does between two requests:
// reported idle, the idle deadline, the read of the next request.
func idleCycle(c *conn, buf []byte) {
	reportState(c, http.StateIdle)
	_ = c.SetReadDeadline(time.Now().Add(DefaultIdleTimeout))
	_, _ = c.Read(buf)
	_ = c.SetReadDeadline(time.Time{})
}

// BenchmarkIdleWait: the cost parking adds between two requests of a
// keep-alive connection (release) against none (off).
func BenchmarkIdleWait(b *testing.B) {
	for _, tc := range []struct {
		name    string
		release time.Duration
	}{{"release", time.Second}, {"off", Off}} {
		b.Run(tc.name, func(b *testing.B) {
			c := parkingConn(&deadlineConn{data: []byte("GET / HTTP/1.1\r\n")}, Limits{IdleRelease: tc.release})
			buf := make([]byte, 64)
			b.ReportAllocs()
			for b.Loop() {
				idleCycle(c, buf)
			}
		})
	}
}
