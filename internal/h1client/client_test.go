package h1client

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cannedUpstream answers every request head on a connection with answer,
// allocating nothing per request, so that an allocation count is the
// client's alone.
func cannedUpstream(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	raw := []byte(answer)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				n := 0
				for {
					c.SetDeadline(time.Now().Add(patienceInternal))
					m, err := c.Read(buf[n:])
					if err != nil {
						return
					}
					n += m
					for {
						i := bytes.Index(buf[:n], []byte("\r\n\r\n"))
						if i < 0 {
							break
						}
						n = copy(buf, buf[i+4:n])
						if _, err := c.Write(raw); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

const patienceInternal = 10 * time.Second

// TestExchangeAllocatesNothing: on a warm connection an exchange whose
// response repeats the last one's fields allocates nothing: names and
// values are interned, buffers belong to the connection, the header map
// and the body to the caller's Exchange.
func TestExchangeAllocatesNothing(t *testing.T) {
	addr := cannedUpstream(t, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Served-By: a1\r\nCache-Control: max-age=60\r\nContent-Length: 2\r\n\r\nok")
	cl := New(Config{})
	defer cl.CloseIdle()
	req := &Request{
		Method: "GET", URL: &url.URL{Scheme: "http", Host: addr, Opaque: "/x"}, Host: "app.test",
		Header: http.Header{"Accept": {"*/*"}, "User-Agent": {"bench"}, "X-Forwarded-For": {"192.0.2.1"}},
	}
	var ex Exchange
	buf := make([]byte, 64)
	exchange := func() {
		if err := cl.Do(context.Background(), Destination{Addr: addr}, req, &ex); err != nil {
			t.Fatal(err)
		}
		res := &ex.Response
		n, _ := io.ReadFull(res.Body, buf[:2])
		if _, err := res.Body.Read(buf); err != io.EOF || n != 2 || res.StatusCode != 200 {
			t.Fatal("unexpected answer", res.StatusCode, err)
		}
		res.Body.Close()
	}
	exchange()
	assert.Equal(t, 0.0, testing.AllocsPerRun(200, exchange))
	cl.mu.Lock()
	defer cl.mu.Unlock()
	assert.Len(t, cl.idle[Destination{Addr: addr}].conns, 1, "one connection carried them all")
}

// recordingConn records its Close.
type recordingConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *recordingConn) Close() error { c.closed.Store(true); return c.Conn.Close() }

// TestIdleConnectionsExpire: a connection idle for DefaultIdleTimeout is
// closed by the pool's sweep without any request coming, one idle for
// less stays, and the sweep stops once the pool is empty.
func TestIdleConnectionsExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{})
		conn := func() (*conn, *recordingConn) {
			a, b := net.Pipe()
			t.Cleanup(func() { b.Close() })
			rc := &recordingConn{Conn: a}
			return newConn(rc, p, Destination{Addr: "u:80"}), rc
		}
		ca, a := conn()
		cb, b := conn()
		p.put(ca)
		time.Sleep(60 * time.Second)
		p.put(cb)
		time.Sleep(31 * time.Second)
		synctest.Wait()
		assert.True(t, a.closed.Load(), "idle 91 s")
		assert.False(t, b.closed.Load(), "idle 31 s")
		time.Sleep(90 * time.Second)
		synctest.Wait()
		assert.True(t, b.closed.Load(), "idle 121 s")
		p.mu.Lock()
		defer p.mu.Unlock()
		assert.Empty(t, p.idle)
		assert.False(t, p.armed, "no sweep while the pool is empty")
	})
}

// TestIdleProxiedBounded: connections with a PROXY header are pooled per
// client, and no more than MaxIdleProxied clients keep one idle; a key
// leaves the count with its last connection, taken or expired, so later
// clients are pooled again.
func TestIdleProxiedBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := New(Config{MaxIdleProxied: 2})
		client := func(i int) Destination {
			return Destination{Addr: "u:80", Proxy: ProxyHeader{Version: 2, Source: netip.AddrPortFrom(netip.AddrFrom4([4]byte{192, 0, 2, byte(i)}), 1000)}}
		}
		conn := func(d Destination) (*conn, *recordingConn) {
			a, b := net.Pipe()
			t.Cleanup(func() { b.Close() })
			rc := &recordingConn{Conn: a}
			return newConn(rc, p, d), rc
		}
		c1, r1 := conn(client(1))
		c1b, r1b := conn(client(1))
		c2, r2 := conn(client(2))
		c3, r3 := conn(client(3))
		p.put(c1)
		p.put(c1b) // the same client: its key counts once
		p.put(c2)
		p.put(c3) // a third client: closed
		assert.False(t, r1.closed.Load())
		assert.False(t, r1b.closed.Load())
		assert.False(t, r2.closed.Load())
		assert.True(t, r3.closed.Load(), "past MaxIdleProxied clients")

		// Client 2 takes its connection: its key leaves, and client 3's
		// next one is pooled.
		got, err := p.get(context.Background(), client(2), false, time.Time{})
		require.NoError(t, err)
		assert.Same(t, c2, got)
		c3b, r3b := conn(client(3))
		p.put(c3b)
		assert.False(t, r3b.closed.Load(), "a key freed by a taken connection")
		time.Sleep(DefaultIdleTimeout + time.Second)
		synctest.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		assert.Empty(t, p.idle)
		assert.Zero(t, p.proxied, "expired keys leave the count")
	})
}
