package main

import (
	"net/http"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecurityFraming: a request whose length has two readings
// (Content-Length beside Transfer-Encoding, in either order and any case,
// or Transfer-Encoding on HTTP/1.0) is refused with 400 and the
// connection closed, so the request smuggled after it in the same bytes
// is never served, and neither of them reaches the upstream.
func TestSecurityFraming(t *testing.T) {
	t.Parallel()
	up := startRecorder(t, map[string]string{"/": "open"})
	d := startWithDoc(t, config.Document{
		Upstreams: []config.Upstream{upstreamOf("app", up.addr)},
		Hosts:     []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{Upstream: "app"}}}},
	})
	const smuggled = "GET /smuggled HTTP/1.1\r\nHost: app.test\r\n\r\n"

	t.Run("pipelining works", func(t *testing.T) {
		// Two requests in one write are both served: a second request
		// that got through would show.
		w := dialWire(t, d.addr)
		w.send("POST /first HTTP/1.1\r\nHost: app.test\r\nContent-Length: 5\r\n\r\n0\r\n\r\n" + smuggled)
		assert.Equal(t, "open", w.next("POST").body)
		assert.Equal(t, "open", w.next("GET").body)
		got := up.take()
		require.Len(t, got, 2)
		assert.Equal(t, "/first", got[0].requestURI)
		assert.Equal(t, "/smuggled", got[1].requestURI)
	})

	for name, head := range map[string]string{
		"CL then TE":              "POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n",
		"TE then CL":              "POST / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n",
		"lower case":              "POST / HTTP/1.1\r\nHost: app.test\r\ncontent-length: 5\r\ntransfer-encoding: chunked\r\n",
		"upper case":              "POST / HTTP/1.1\r\nHost: app.test\r\nTRANSFER-ENCODING: CHUNKED\r\nCONTENT-LENGTH: 5\r\n",
		"mixed case value":        "POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 5\r\nTransfer-Encoding: Chunked\r\n",
		"Content-Length: 0":       "POST / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n",
		"white space":             "POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length:  5 \r\nTransfer-Encoding:\tchunked\r\n",
		"lengths around TE":       "POST / HTTP/1.1\r\nHost: app.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n",
		"GET with both":           "GET / HTTP/1.1\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n",
		"HTTP/1.0 chunked":        "POST / HTTP/1.0\r\nHost: app.test\r\nTransfer-Encoding: chunked\r\n",
		"HTTP/1.0 keep-alive":     "POST / HTTP/1.0\r\nHost: app.test\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n",
		"HTTP/1.0 lower case":     "POST / HTTP/1.0\r\nHost: app.test\r\nConnection: keep-alive\r\ntransfer-encoding: CHUNKED\r\n",
		"HTTP/1.0 with a length":  "POST / HTTP/1.0\r\nHost: app.test\r\nConnection: keep-alive\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n",
		"HTTP/1.0 other encoding": "POST / HTTP/1.0\r\nHost: app.test\r\nConnection: keep-alive\r\nTransfer-Encoding: identity\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			w := dialWire(t, d.addr)
			// "0\r\n\r\n" ends a chunked body and is five bytes of a
			// Content-Length body: either way the smuggled request follows.
			w.send(head + "\r\n0\r\n\r\n" + smuggled)
			r := w.next("POST")
			assert.Equal(t, http.StatusBadRequest, r.status, "answer %q", r.body)
			assert.True(t, w.closed(), "the connection stays open after a framing with two readings")
			assert.Empty(t, up.take(), "the upstream was reached")
		})
	}
}
