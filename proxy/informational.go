package proxy

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"time"

	"github.com/paduraksa/paduraksa/internal/h1client"
)

// traceKey is httptrace's unexported context key, read once by asking a
// probe context which key ContextClientTrace looks up.
var traceKey = func() any {
	var p keyProbe
	httptrace.ContextClientTrace(&p)
	return p.key
}()

type keyProbe struct {
	context.Context
	key any
}

func (p *keyProbe) Value(k any) any { p.key = k; return nil }

// traceCtx is the outgoing request's context: the client request's context
// plus a client trace that forwards 1xx responses. It lives in the pooled
// exchange, so attaching it allocates nothing; cancellation and every other
// value come from the embedded context, which lets context.WithCancel on it
// find the inner cancelCtx instead of starting a goroutine.
type traceCtx struct {
	context.Context
	trace *httptrace.ClientTrace
	// proxy is the PROXY header of the request's client, for net/http's
	// dialer of a cluster with the PROXY protocol on (see proxyHeaderOf);
	// nil otherwise.
	proxy *h1client.ProxyHeader
	// connectBy bounds net/http's dial of a request whose connects are
	// bounded (see connectWindow); zero otherwise.
	connectBy time.Time
}

func (c *traceCtx) Value(k any) any {
	if k == traceKey {
		return c.trace
	}
	if k == (connectByKey{}) {
		if c.connectBy.IsZero() {
			return nil
		}
		return c.connectBy
	}
	if k == (proxyHeaderKey{}) {
		if c.proxy == nil {
			return nil
		}
		return c.proxy
	}
	return c.Context.Value(k)
}

// informational forwards 1xx responses (103 Early Hints and others) to
// the client while a round trip waits for the final response: at most
// max1xxRelayed of them per exchange, never 100 Continue (net/http's
// server answers Expect itself, when the body is first read) nor 101
// (an upgrade's own), and none to an HTTP/1.0 client, which has no 1xx.
// An upstream that sends more than max1xxReceived fails the exchange: a
// client trace that sees 1xx responses is their only bound in net/http.
type informational struct {
	mu       sync.Mutex
	w        http.ResponseWriter // nil when the round trip is over
	keys     []string
	idle     *idleTimer
	received int
	relayed  int
	http10   bool
}

// Bounds on informational responses per exchange; the HTTP/1.1 clients
// refuse the same number more.
const (
	max1xxRelayed  = 2
	max1xxReceived = h1client.Max1xx
)

// errTooManyInformational fails an exchange whose upstream sent more than
// max1xxReceived informational responses.
var errTooManyInformational = errors.New("proxy: upstream sent too many 1xx responses")

// got1xx is the ClientTrace callback: hop-by-hop fields are stripped (the
// standard library's ReverseProxy does not), the rest is written with the
// status, and the client's header map is put back as it was, so the final
// response carries only its own fields and the gate's.
func (in *informational) got1xx(code int, h textproto.MIMEHeader) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.received++; in.received > max1xxReceived {
		return errTooManyInformational
	}
	w := in.w
	if w == nil || code == http.StatusContinue || code == http.StatusSwitchingProtocols || in.http10 || in.relayed >= max1xxRelayed {
		return nil
	}
	in.relayed++
	if in.idle != nil {
		in.idle.touch()
	}
	hh := http.Header(h)
	removeHopByHop(hh)
	delete(hh, "Alt-Svc")
	dst := w.Header()
	in.keys = in.keys[:0]
	for k, vv := range hh {
		if _, own := dst[k]; own {
			continue // the gate's (Server) and ours stay
		}
		if len(in.keys) < max1xxFields {
			in.keys = append(in.keys, k)
			dst[k] = vv
		}
	}
	w.WriteHeader(code)
	for _, k := range in.keys {
		delete(dst, k)
	}
	return nil
}

// max1xxFields bounds the fields copied from one informational response.
const max1xxFields = 32

// start begins relaying to w, the writer of the client's request r. It
// takes no lock: it runs before the forward's first round trip, whose
// goroutines start after it, and no callback of an earlier forward can
// still run, since its exchange went back to the pool only once
// net/http's goroutines, which run the callbacks, were done with its
// request.
func (in *informational) start(w http.ResponseWriter, r *http.Request) {
	in.w, in.received, in.relayed, in.http10 = w, 0, 0, r.ProtoMajor == 1 && r.ProtoMinor == 0
}

// done ends forwarding: once it returns, a late callback writes nothing.
// Only the forward's goroutine writes w, so done reads it without the
// lock: a second done costs a load.
func (in *informational) done() {
	if in.w != nil {
		in.end()
	}
}

func (in *informational) end() {
	in.mu.Lock()
	in.w = nil
	in.mu.Unlock()
}
