package h1client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a scripted upstream does with one request it read.
type act uint8

const (
	answer act = iota // 200 "ok"
	fin               // closes the connection, unanswered
	rst               // resets the connection, unanswered
	hang              // never answers, holds the connection
)

// scriptedUpstream runs the i-th connection it accepts by script[i], one
// act per request it reads in full; a connection past the script, or a
// request past its connection's acts, is answered. It counts the
// requests it read.
func scriptedUpstream(t *testing.T, script [][]act) (addr string, requests *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	requests = new(atomic.Int64)
	go func() {
		for i := 0; ; i++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			var acts []act
			if i < len(script) {
				acts = script[i]
			}
			go serveScript(c.(*net.TCPConn), acts, requests)
		}
	}()
	return ln.Addr().String(), requests
}

func serveScript(c *net.TCPConn, acts []act, requests *atomic.Int64) {
	buf := make([]byte, 4096)
	n := 0
	for k := 0; ; {
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
		if bytes.Contains(buf[:i], []byte("Content-Length: 4")) {
			end += 4
		}
		if n < end {
			continue
		}
		n = copy(buf, buf[end:n])
		requests.Add(1)
		a := answer
		if k < len(acts) {
			a = acts[k]
		}
		k++
		switch a {
		case answer:
			c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"))
		case fin:
			c.Close()
			return
		case rst:
			c.SetLinger(0)
			c.Close()
			return
		case hang:
			io.Copy(io.Discard, c)
			return
		}
	}
}

// TestDroppedRequestIsSentAgainOnce: a request the upstream read and then
// dropped (it closed or reset the connection before any byte of an
// answer, as a process that exits does, or the kernel for a connection
// still in its accept queue when the listener closes) is sent again on a
// new connection when it can be sent as it is: no body and an idempotent
// method (RFC 9110 section 9.2.2). After a new connection's drop, once
// only: an upstream that drops it again fails it, so a request that
// kills its upstream reaches two new connections at most. A pooled
// connection's drop (it may have been closed while idle) sends it again
// as net/http's client does, on the next connection.
func TestDroppedRequestIsSentAgainOnce(t *testing.T) {
	get := func(addr string) *Request {
		return &Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: addr, Path: "/"}}
	}
	post := func(addr string) *Request {
		return &Request{Method: "POST", URL: &url.URL{Scheme: "http", Host: addr, Path: "/"}}
	}
	put := func(addr string) *Request {
		return &Request{Method: "PUT", URL: &url.URL{Scheme: "http", Host: addr, Path: "/"},
			Body: strings.NewReader("body"), ContentLength: 4}
	}
	for _, drop := range []act{fin, rst} {
		name := map[act]string{fin: "close", rst: "reset"}[drop]
		cases := []struct {
			name     string
			script   [][]act
			warm     bool // one answered request first, so the drop is on a pooled connection
			req      func(string) *Request
			ok       bool
			requests int64 // the upstream read, the warm one aside
		}{
			{"new connection/GET", [][]act{{drop}}, false, get, true, 2},
			{"new connection/GET dropped twice", [][]act{{drop}, {drop}}, false, get, false, 2},
			{"new connection/POST without body", [][]act{{drop}}, false, post, false, 1},
			{"new connection/PUT with body", [][]act{{drop}}, false, put, false, 1},
			{"pooled connection/GET", [][]act{{answer, drop}}, true, get, true, 2},
			{"pooled connection/GET dropped on a new one too", [][]act{{answer, drop}, {drop}}, true, get, true, 3},
			{"pooled connection/GET dropped on two new ones", [][]act{{answer, drop}, {drop}, {drop}}, true, get, false, 3},
			{"pooled connection/POST without body", [][]act{{answer, drop}}, true, post, false, 1},
		}
		for _, tc := range cases {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				addr, requests := scriptedUpstream(t, tc.script)
				cl := New(Config{})
				defer cl.CloseIdle()
				d := Destination{Addr: addr}
				var ex Exchange
				if tc.warm {
					require.NoError(t, cl.Do(context.Background(), d, get(addr), &ex))
					_, err := io.ReadAll(&ex)
					require.NoError(t, err)
					requests.Add(-1)
				}
				ctx, cancel := context.WithTimeout(context.Background(), patienceInternal)
				defer cancel()
				err := cl.Do(ctx, d, tc.req(addr), &ex)
				if tc.ok {
					require.NoError(t, err)
					body, err := io.ReadAll(&ex)
					require.NoError(t, err)
					assert.Equal(t, "ok", string(body))
				} else {
					require.Error(t, err)
					var de *DialError
					assert.False(t, errors.As(err, &de), "the upstream's drop, not a dial's failure: %v", err)
				}
				assert.Equal(t, tc.requests, requests.Load(), "requests the upstream read")
			})
		}
	}
}

// TestTimedOutRequestIsNotSentAgain: a request whose answer did not come
// within ResponseHeaderTimeout fails, on a pooled connection as on a new
// one, and is not sent again: a slow upstream is how overload shows, and
// sending it each request twice would double both the load and the
// client's wait.
func TestTimedOutRequestIsNotSentAgain(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(map[bool]string{false: "new connection", true: "pooled connection"}[warm], func(t *testing.T) {
			script := [][]act{{hang}}
			if warm {
				script = [][]act{{answer, hang}}
			}
			addr, requests := scriptedUpstream(t, script)
			cl := New(Config{ResponseHeaderTimeout: 100 * time.Millisecond})
			defer cl.CloseIdle()
			d := Destination{Addr: addr}
			req := &Request{Method: "GET", URL: &url.URL{Scheme: "http", Host: addr, Path: "/"}}
			var ex Exchange
			if warm {
				require.NoError(t, cl.Do(context.Background(), d, req, &ex))
				_, err := io.ReadAll(&ex)
				require.NoError(t, err)
				requests.Add(-1)
			}
			err := cl.Do(context.Background(), d, req, &ex)
			require.ErrorIs(t, err, os.ErrDeadlineExceeded)
			assert.EqualValues(t, 1, requests.Load(), "requests the upstream read")
		})
	}
}
