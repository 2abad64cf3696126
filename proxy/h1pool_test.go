package proxy

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
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

// TestDirectExchangeAllocatesOnlyItsBody: on a warm connection an
// exchange whose response repeats the last one's fields allocates one
// object, the response with its body: names and values are interned,
// buffers and the header map belong to the connection.
func TestDirectExchangeAllocatesOnlyItsBody(t *testing.T) {
	addr := cannedUpstream(t, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Served-By: a1\r\nCache-Control: max-age=60\r\nContent-Length: 2\r\n\r\nok")
	tr := NewTransport(ClientConfig{HTTP1: HTTP1Direct})
	defer tr.CloseIdleConnections()
	req := &http.Request{
		Method: "GET", URL: &url.URL{Scheme: "http", Host: addr, Opaque: "/x"}, Host: "app.test",
		Header: http.Header{"Accept": {"*/*"}, "User-Agent": {"bench"}, "X-Forwarded-For": {"192.0.2.1"}},
	}
	buf := make([]byte, 64)
	exchange := func() {
		res, err := tr.directFor().RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.ReadFull(res.Body, buf[:2])
		if _, err := res.Body.Read(buf); err != io.EOF || n != 2 || res.StatusCode != 200 {
			t.Fatal("unexpected answer", res.StatusCode, err)
		}
		res.Body.Close()
	}
	exchange()
	assert.Equal(t, 1.0, testing.AllocsPerRun(200, exchange))
	direct, fallback := tr.HTTP1Counts()
	assert.Equal(t, uint64(202), direct)
	assert.Zero(t, fallback)
}
