package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// passive is a passive health check that ejects a destination for the
// rest of the test after three exchanges with a third of them failed.
var passive = snapshot.HealthCheck{
	Passive: snapshot.PassiveHealth{
		Enabled: true, MinRequests: 3, FailureRate: 0.3,
		Window: "60s", ReactivationPeriod: "60s",
	},
	// No panic routing: with both destinations out, clients get 503.
	Availability: "HealthyAndUnknown",
}

// TestSecurityBlame: a client's broken body (malformed or cut chunks,
// shorter than its Content-Length, over the route's limit) is answered
// 400 or 413 with the connection closed, and is never held against the
// destination: after many of them, both destinations of a cluster with
// passive health still serve. A destination that does fail is ejected
// by the same check, so blame that went to the destinations would show.
func TestSecurityBlame(t *testing.T) {
	t.Parallel()
	a := startRecorder(t, map[string]string{"/": "a"})
	b := startRecorder(t, map[string]string{"/": "b"})
	pool := upstreamOf("pool", a.addr, b.addr)
	pool.LoadBalancing, pool.Health = "RoundRobin", passive
	flaky := upstreamOf("flaky", a.addr, closingListener(t))
	flaky.LoadBalancing, flaky.Health = "RoundRobin", passive
	d := startWithDoc(t, snapshot.Document{
		Upstreams: []snapshot.Upstream{pool, flaky},
		Hosts: []snapshot.Host{{Names: []string{"blame.test"}, Routes: []snapshot.Route{
			{Path: "/", Upstream: "pool"},
			{Path: "/small", Upstream: "pool", MaxBodyBytes: 16},
			{Path: "/flaky", Upstream: "flaky"},
		}}},
	})

	t.Run("a failing destination is ejected", func(t *testing.T) {
		statuses := map[int]int{}
		streak := 0
		for i := 0; i < 40 && streak < 8; i++ {
			r := roundTrip(t, d.addr, get("blame.test", "/flaky"))
			statuses[r.status]++
			if r.status == http.StatusOK {
				streak++
			} else {
				streak = 0
			}
		}
		assert.Positive(t, statuses[http.StatusBadGateway], "the closing destination never failed: %v", statuses)
		assert.Equal(t, 8, streak, "the closing destination stayed in rotation: %v", statuses)
	})

	const post = "POST / HTTP/1.1\r\nHost: blame.test\r\n"
	const chunked = post + "Transfer-Encoding: chunked\r\n\r\n"
	const chunkedSmall = "POST /small HTTP/1.1\r\nHost: blame.test\r\nTransfer-Encoding: chunked\r\n\r\n"
	bad := []struct {
		name      string
		raw       string
		halfClose bool // the client half-closes after raw
		status    int
	}{
		{"chunk size not hex", chunked + "4\r\nabcd\r\nzz\r\n\r\n", false, http.StatusBadRequest},
		{"chunk without CRLF", chunked + "4\r\nabcdXY4\r\nabcd\r\n0\r\n\r\n", false, http.StatusBadRequest},
		{"chunk size overflow", chunked + "4\r\nabcd\r\nfffffffffffffffff\r\n", false, http.StatusBadRequest},
		{"chunk size with a bare LF", chunked + "4\r\nabcd\r\n4\nabcd\r\n0\r\n\r\n", false, http.StatusBadRequest},
		{"shorter than Content-Length", post + "Content-Length: 100\r\n\r\nabc", true, http.StatusBadRequest},
		{"Content-Length without body", post + "Content-Length: 10\r\n\r\n", true, http.StatusBadRequest},
		{"cut chunk", chunked + "a\r\nabc", true, http.StatusBadRequest},
		{"cut before the last chunk", chunked + "3\r\nabc\r\n", true, http.StatusBadRequest},
		{"over the limit in one chunk", chunkedSmall + "40\r\n" + strings.Repeat("x", 64) + "\r\n0\r\n\r\n", false, http.StatusRequestEntityTooLarge},
		{"over the limit in small chunks", chunkedSmall + strings.Repeat("1\r\nx\r\n", 20) + "0\r\n\r\n", false, http.StatusRequestEntityTooLarge},
		{"over the limit in a spelling of /small", strings.Replace(chunkedSmall, "/small", "/SMALL;x", 1) + "40\r\n" + strings.Repeat("x", 64) + "\r\n0\r\n\r\n", false, http.StatusRequestEntityTooLarge},
	}
	// Each is sent often enough to eject both destinations many times
	// over, were it counted against them.
	const rounds = 8
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			for range rounds {
				w := dialWire(t, d.addr)
				w.send(c.raw)
				if c.halfClose {
					w.closeWrite()
				}
				r := w.next("POST")
				require.Equal(t, c.status, r.status, "answer %q", r.body)
				assert.True(t, w.closed(), "the connection stayed open")
			}
		})
	}

	t.Run("both destinations still serve", func(t *testing.T) {
		served := map[string]int{}
		for range 10 {
			r := roundTrip(t, d.addr, get("blame.test", "/"))
			require.Equal(t, http.StatusOK, r.status, "answer %q", r.body)
			served[r.body]++
		}
		assert.Equal(t, map[string]int{"a": 5, "b": 5}, served)
	})
}
