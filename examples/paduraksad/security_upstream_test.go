package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// passive is a passive health check that ejects a destination for the
// rest of the test after three exchanges with a third of them failed.
var passive = config.HealthCheck{
	Passive: config.PassiveHealth{
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
	d := startWithDoc(t, config.Document{
		Upstreams: []config.Upstream{pool, flaky},
		Hosts: []config.Host{{Names: []string{"blame.test"}, Routes: []config.Route{
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

// TestSecurityUpstreamAnswers: what an upstream answers cannot panic the
// handler, reach the client as something other than a clear status (502,
// or a response whose truncation the client sees), or leak the
// destination's in-flight count. Two destinations written on bare
// listeners give the same answers; the cluster balances by least requests
// in flight, so after each answer both must still be picked: a count
// left behind on one would send every request to the other.
func TestSecurityUpstreamAnswers(t *testing.T) {
	t.Parallel()
	const ok = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
	const hint = "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
	answers := map[string]string{
		"/status000":        "HTTP/1.1 000 Zero\r\nContent-Length: 2\r\n\r\nok",
		"/status099":        "HTTP/1.1 099 Low\r\nContent-Length: 2\r\n\r\nok",
		"/status600":        "HTTP/1.1 600 High\r\nContent-Length: 2\r\n\r\nok",
		"/status999":        "HTTP/1.1 999 Nine\r\nContent-Length: 2\r\n\r\nok",
		"/switching":        "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nraw bytes",
		"/early10":          strings.Repeat(hint, 10) + ok,
		"/early5":           strings.Repeat(hint, 5) + ok,
		"/early":            hint + ok,
		"/connection-close": "HTTP/1.1 200 OK\r\nConnection: X-Secret, close\r\nX-Secret: 1\r\nContent-Length: 2\r\n\r\nok",
		"/close-first":      "HTTP/1.1 200 OK\r\nConnection: close, x-secret\r\nX-Secret: 1\r\nContent-Length: 2\r\n\r\nok",
		"/connection":       "HTTP/1.1 200 OK\r\nConnection: X-Secret\r\nX-Secret: 1\r\nContent-Length: 2\r\n\r\nok",
		"/short":            "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc",
		"/huge":             "HTTP/1.1 200 OK\r\nContent-Length: 2147483648\r\n\r\nthe first bytes of two gigabytes",
		"/bad-chunk":        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\nzz\r\n",
		"/garbage":          "this is not HTTP\r\n\r\n",
		"/cut-header":       "HTTP/1.1 200 OK\r\nContent-Le",
		"/nothing":          "",
	}
	ra, rb := cannedUpstream(t, "ra", answers), cannedUpstream(t, "rb", answers)
	raw := upstreamOf("raw", ra, rb)
	raw.LoadBalancing = "LeastRequests"
	d := startWithDoc(t, config.Document{
		Upstreams: []config.Upstream{raw},
		Hosts:     []config.Host{{Names: []string{"raw.test"}, Routes: []config.Route{{Upstream: "raw"}}}},
	})
	balanced := func(t *testing.T) {
		t.Helper()
		served := map[string]int{}
		for range 20 {
			r := roundTrip(t, d.addr, get("raw.test", "/ok"))
			require.Equal(t, http.StatusOK, r.status)
			served[r.body]++
		}
		assert.Len(t, served, 2, "one destination is never picked: its in-flight count leaked (%v)", served)
	}
	t.Run("balanced", balanced)

	gateway := func(t *testing.T, w *wire) {
		r, _ := w.final("GET")
		assert.Equal(t, http.StatusBadGateway, r.status, "answer %q", r.body)
	}
	// A body cut short is never passed off as whole: the client gets a
	// 502, or a response it sees aborted (the connection closed before
	// the declared length, or before the header was flushed).
	truncated := func(t *testing.T, w *wire) {
		r, _, err := w.readFinal("GET")
		switch {
		case err != nil:
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
		case r.status == http.StatusBadGateway:
			return
		default:
			assert.Equal(t, http.StatusOK, r.status)
			assert.Error(t, r.bodyErr, "a truncated body looks complete: %q", r.body)
		}
		assert.True(t, w.closed(), "the connection of a truncated response stays open")
	}
	withoutSecret := func(t *testing.T, w *wire) {
		r, _ := w.final("GET")
		assert.Equal(t, http.StatusOK, r.status)
		assert.Equal(t, "ok", r.body)
		assert.NotContains(t, r.header, "X-Secret", "a field the upstream's Connection named reached the client")
	}
	cases := []struct {
		path  string
		check func(*testing.T, *wire)
	}{
		{"/status000", gateway},
		{"/status099", gateway},
		{"/status600", gateway},
		{"/status999", gateway},
		{"/switching", gateway},
		{"/garbage", gateway},
		{"/cut-header", gateway},
		{"/nothing", gateway},
		{"/early5", func(t *testing.T, w *wire) {
			r, hints := w.final("GET")
			assert.Equal(t, http.StatusOK, r.status)
			assert.Equal(t, "ok", r.body)
			assert.Positive(t, hints, "no 103 was relayed")
			assert.LessOrEqual(t, hints, 2, "1xx responses relayed without a bound")
		}},
		{"/early10", func(t *testing.T, w *wire) {
			// More than five informational answers fail the exchange:
			// net/http's client leaves their count to the trace.
			r, hints := w.final("GET")
			assert.Equal(t, http.StatusBadGateway, r.status)
			assert.LessOrEqual(t, hints, 2, "1xx responses relayed without a bound")
		}},
		{"/connection", withoutSecret},
		{"/connection-close", withoutSecret},
		{"/close-first", withoutSecret},
		{"/short", truncated},
		{"/huge", truncated},
		{"/bad-chunk", truncated},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			w := dialWire(t, d.addr)
			w.send(get("raw.test", c.path))
			c.check(t, w)
			balanced(t)
		})
	}
	t.Run("103 to an HTTP/1.0 client", func(t *testing.T) {
		w := dialWire(t, d.addr)
		w.send("GET /early HTTP/1.0\r\nHost: raw.test\r\n\r\n")
		r := w.next("GET")
		assert.Equal(t, http.StatusOK, r.status, "HTTP/1.0 has no 1xx")
		assert.Equal(t, "ok", r.body)
		balanced(t)
	})
	assert.NotContains(t, d.logs.String(), "panic")
}
