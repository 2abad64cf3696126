package main

import (
	"bufio"
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pausingUpstream answers each connection's request with a chunked 200
// whose first chunk is first, then waits for resume (or the test's end)
// before it writes rest (raw bytes: more chunks, the last chunk or
// nothing) and closes.
func pausingUpstream(t *testing.T, first string, resume <-chan struct{}, rest string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				c.SetDeadline(time.Now().Add(wireTimeout))
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"+
					strconv.FormatInt(int64(len(first)), 16)+"\r\n"+first+"\r\n")
				select {
				case <-resume:
					io.WriteString(c, rest)
				case <-done:
				}
			}()
		}
	}()
	t.Cleanup(func() { close(done); ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// streamDaemon serves app.test from upstream addr, compressing.
func streamDaemon(t *testing.T, addr string) *daemon {
	return startWithDoc(t, config.Document{
		Upstreams: []config.Upstream{upstreamOf("app", addr)},
		Hosts: []config.Host{{
			Names: []string{"app.test"}, Compression: config.Compression{Enabled: true},
			Routes: []config.Route{{Upstream: "app"}},
		}},
	})
}

// TestSecurityStreamCut: an upstream body of unknown length that ends
// without its last chunk reaches the client as a cut body, never as a
// whole one (a complete compressed stream and chunked end would let the
// client take the part for all).
func TestSecurityStreamCut(t *testing.T) {
	t.Parallel()
	first := strings.Repeat("a part of a body that never ends. ", 20)
	for _, coding := range []string{"identity", "gzip"} {
		t.Run(coding, func(t *testing.T) {
			t.Parallel()
			resume := make(chan struct{})
			close(resume)
			d := streamDaemon(t, pausingUpstream(t, first, resume, "400\r\ncut"))
			w := dialWire(t, d.addr)
			w.send("GET / HTTP/1.1\r\nHost: app.test\r\nAccept-Encoding: " + coding + "\r\nConnection: close\r\n\r\n")
			r, _, err := w.readFinal(http.MethodGet)
			if err != nil || r.bodyErr != nil {
				return // no answer at all (the head was still buffered), or the chunked framing shows the cut
			}
			require.Equal(t, "gzip", r.header.Get("Content-Encoding"), "a cut identity body ended whole: %q", r.body)
			zr, err := gzip.NewReader(strings.NewReader(r.body))
			if err == nil {
				_, err = io.ReadAll(zr)
			}
			assert.Error(t, err, "a cut body reached the client as a whole gzip stream")
		})
	}
}
