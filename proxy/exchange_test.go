package proxy_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
)

// lateTransport answers like net/http's client, whose goroutines may
// still read a request after the round trip returned: its writer until
// it wrote the request (an upload the upstream answered early; a failed
// round trip), its reader until it returned a response head (a failed
// round trip). It reports the connection it takes (GotConn), answers or
// fails, and reads the request's header once more only when told; the
// writer then reports the request written (WroteRequest), the reader
// reports it at once.
type lateTransport struct {
	fail   bool // fail the round trip instead of answering
	reader bool // the late read is the reader's, not the writer's
	later  chan struct{}
	seen   chan string
}

func (l *lateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(req.Context())
	trace.GotConn(httptrace.GotConnInfo{})
	if l.reader {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	go func() {
		<-l.later
		l.seen <- req.Header.Get("X-Forwarded-Host")
		if !l.reader {
			trace.WroteRequest(httptrace.WroteRequestInfo{})
		}
	}()
	if l.fail {
		return nil, errors.New("the upstream went away")
	}
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("ok")), ContentLength: 2}, nil
}

// TestExchangeOutlivesTheTransportsReads: the forwarder's pooled
// exchange holds the outgoing request; it goes back to the pool (and is
// reset) only once net/http's writer wrote the request and its reader
// returned a response head, on a forwarded answer and on a failed round
// trip alike, so a transport that reads the request late reads it whole.
// Forward has one deferred finish that decides it; no return path puts
// the exchange back on its own.
func TestExchangeOutlivesTheTransportsReads(t *testing.T) {
	for _, tc := range []struct {
		name         string
		fail, reader bool
		status       int
	}{
		{"answered, the writer still writing", false, false, 200},
		{"failed, the writer still writing", true, false, 502},
		{"failed, the reader still reading", true, true, 502},
	} {
		t.Run(tc.name, func(t *testing.T) {
			late := &lateTransport{fail: tc.fail, reader: tc.reader, later: make(chan struct{}), seen: make(chan string, 1)}
			_, cl := setup{}.start(t, "127.0.0.1:1")
			cl.Transport = late
			rt, err := proxy.NewRoute(proxy.RouteConfig{Cluster: cl})
			require.NoError(t, err)
			w := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "http://app.test/", nil)
			rt.Forward(w, r, &gate.Request{Client: netip.MustParseAddr("192.0.2.10"), Scheme: "http"})
			assert.Equal(t, tc.status, w.Code)
			close(late.later)
			assert.Equal(t, "app.test", recv(t, late.seen), "the request as the transport was given it")
		})
	}
}
