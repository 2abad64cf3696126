package h1client

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// staleUpstream answers the first request of its first connection with
// "ok", then, once told the client has read it, does after to that
// connection and never answers it again; every later connection answers
// each request with "fresh". It reports on done when after is done.
func staleUpstream(t *testing.T, after func(net.Conn), read <-chan struct{}, done chan<- struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go serveStale(c, first, after, read, done)
		}
	}()
	return ln.Addr().String()
}

func serveStale(c net.Conn, first bool, after func(net.Conn), read <-chan struct{}, done chan<- struct{}) {
	buf := make([]byte, 4096)
	n := 0
	for {
		c.SetDeadline(time.Now().Add(patienceInternal))
		m, err := c.Read(buf[n:])
		if err != nil {
			return
		}
		n += m
		i := bytes.Index(buf[:n], []byte("\r\n\r\n"))
		if i < 0 {
			continue
		}
		end := i + 4
		if cl := bytes.Index(buf[:i], []byte("Content-Length: 4")); cl >= 0 {
			end += 4
		}
		if n < end {
			continue
		}
		n = copy(buf, buf[end:n])
		if !first {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh"))
			continue
		}
		c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		<-read
		after(c)
		done <- struct{}{}
		io.Copy(io.Discard, c) // reads what comes, never answers
		return
	}
}

// TestStaleIdleConnectionNotReused: a pooled connection on which the
// upstream wrote after its response, or which it closed or half-closed,
// is not used for the next request, whatever the request: bytes there
// would be read as the answer (a response desync), and a half-closed
// upstream that reads the request but never answers would hold it to its
// deadline. The request goes on a new connection, without a failure.
func TestStaleIdleConnectionNotReused(t *testing.T) {
	afters := []struct {
		name  string
		after func(net.Conn)
	}{
		{"extra response", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nstale"))
		}},
		{"408 then close", func(c net.Conn) {
			c.Write([]byte("HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
			c.Close()
		}},
		{"close", func(c net.Conn) { c.Close() }},
		{"half-close", func(c net.Conn) { c.(*net.TCPConn).CloseWrite() }},
	}
	requests := []struct {
		name string
		req  func(addr string) *Request
	}{
		{"GET", func(addr string) *Request {
			return &Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: addr, Path: "/"}}
		}},
		{"POST without body", func(addr string) *Request {
			return &Request{Method: "POST", URL: &url.URL{Scheme: "http", Host: addr, Path: "/"}}
		}},
		{"PUT with body", func(addr string) *Request {
			return &Request{Method: "PUT", URL: &url.URL{Scheme: "http", Host: addr, Path: "/"},
				Body: strings.NewReader("body"), ContentLength: 4}
		}},
	}
	for _, a := range afters {
		for _, r := range requests {
			t.Run(a.name+"/"+r.name, func(t *testing.T) {
				read, done := make(chan struct{}), make(chan struct{}, 1)
				addr := staleUpstream(t, a.after, read, done)
				cl := New(Config{})
				defer cl.CloseIdle()
				d := Destination{Addr: addr}
				var ex Exchange
				require.NoError(t, cl.Do(context.Background(), d, r.req(addr), &ex))
				body, err := io.ReadAll(&ex)
				require.NoError(t, err)
				require.Equal(t, "ok", string(body))
				close(read)
				<-done

				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				start := time.Now()
				require.NoError(t, cl.Do(ctx, d, r.req(addr), &ex), "after %v", time.Since(start))
				body, err = io.ReadAll(&ex)
				require.NoError(t, err)
				assert.Equal(t, "fresh", string(body), "the answer of the new connection, not bytes left on the pooled one")
				assert.EqualValues(t, 2, cl.Dials())
			})
		}
	}
}
