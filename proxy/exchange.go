package proxy

import (
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/paduraksa/paduraksa/internal/h1client"
	"github.com/paduraksa/paduraksa/upstream"
)

// exchange is the pooled state of one forwarded request, what the
// transports reach: the outgoing request, its URL and header map, the
// trace for 1xx responses and what its callbacks keep, the idle timer and
// the direct client's exchange are reused, so forwarding allocates no
// structure of ours. [Route.Forward] owns it from the pool to its one
// deferred finish, which puts it back only when no transport can still
// read it. What the forward itself reads and writes is a [forward] on
// Forward's stack, not here: stored in a pooled heap object, each of its
// pointers would cost a write barrier while the collector marks, and
// finish would have to clear them.
type exchange struct {
	req   http.Request
	url   url.URL
	hdr   http.Header
	trace httptrace.ClientTrace
	info  informational
	idle  idleTimer
	dl    deadline          // the route's timeouts
	dreq  h1client.Request  // the direct client's request
	dx    h1client.Exchange // and its response

	conn  *h1client.CheckedConn // net/http's HTTP/1.x connection in use, if any
	conns int                   // connections net/http took (GotConn)
	// lent counts net/http's goroutines that may still read the request:
	// for each connection its transport took for it (GotConn), the
	// writer until it wrote the request (WroteRequest) and the reader
	// until the round trip returned the response head.
	lent atomic.Int32

	admitted *Cluster // the cluster whose MaxInFlight admitted the forward (limits.go), or nil
}

// gotConn is the ClientTrace callback for the connection net/http takes
// for an attempt (on the attempt's goroutine).
func (o *exchange) gotConn(info httptrace.GotConnInfo) {
	o.lent.Add(2)
	o.conns++
	o.conn = nil
	if c, ok := info.Conn.(*h1client.CheckedConn); ok {
		c.Arm(o.req.Method == http.MethodHead)
		o.conn = c
	}
}

// wroteRequest is the ClientTrace callback for the end of net/http's
// writing of the request (on its writer's goroutine): it no longer reads
// the request, its body or its trailers.
func (o *exchange) wroteRequest(httptrace.WroteRequestInfo) { o.lent.Add(-1) }

// perRequest is what a forward allocates: one object.
type perRequest struct {
	ctx  traceCtx
	xff  [1]string
	xfh  [1]string
	addr [48]byte // an address longer than this (a long zone) is allocated
}

var exchangePool = sync.Pool{New: func() any {
	o := &exchange{hdr: make(http.Header, 16)}
	o.trace.Got1xxResponse = o.info.got1xx
	o.trace.GotConn = o.gotConn
	o.trace.WroteRequest = o.wroteRequest
	o.dreq.URL, o.dreq.Header, o.dreq.Got1xx = &o.url, o.hdr, o.info.got1xx
	o.info.idle = &o.idle
	o.idle.init()
	return o
}}

// finish ends the exchange, whatever way the forward took: no 1xx is
// relayed any more, the idle timer is stopped, and the exchange goes back
// to the pool unless net/http may still read its request (a round trip
// that failed, or an upload the upstream answered before reading it all,
// can leave its writer or its reader running). Such an exchange is left
// to the garbage collector. Only what the pool must not keep is cleared:
// the request (the client's context, body and connection state), the
// header map, which prepare fills without emptying it, and what holds a
// connection or the client's body. The URL is prepare's to set whole, and
// the direct client's request points at the exchange's own URL and map.
func (o *exchange) finish() {
	if c := o.admitted; c != nil {
		o.admitted = nil
		c.leave()
	}
	o.info.done()
	o.idle.stop()
	o.dl.stop()
	if o.lent.Load() != 0 {
		return
	}
	clear(o.hdr)
	o.req = http.Request{}
	if o.conn != nil {
		o.conn = nil
	}
	if o.dreq.Body != nil {
		o.dreq.Body = nil
	}
	exchangePool.Put(o)
}

// stop ends the relay of 1xx responses and disarms the idle timer; once
// both are done it costs two loads.
func (o *exchange) stop() {
	o.info.done()
	o.idle.stop()
	o.dl.stop()
}

// prepare fills the pooled request from the client's: same context (plus
// the 1xx trace, without WithContext's allocation), same streamed body, the
// gate's forwarded path (or the rewritten one) and the query, and the
// header minus hop-by-hop fields, client-supplied forwarding fields and
// names with underscores, plus ours, the route's rules and, last, the
// headers the gate's policies set for the upstream.
func (f *forward) prepare(path string) {
	o, rt, r, rq, up, rid := f.o, f.rt, f.r, f.rq, f.upgrade, f.rid
	// The one allocation of a forward: the context (the transport's
	// goroutines may still read it after the exchange is pooled again)
	// and the two forwarding values that are the request's own.
	pr := &perRequest{ctx: traceCtx{Context: r.Context(), trace: &o.trace}}
	o.req = *r.WithContext(&pr.ctx)
	o.url = url.URL{RawQuery: r.URL.RawQuery}
	if strings.HasPrefix(path, "//") {
		// Opaque would be written as scheme://..., an authority.
		if p, err := url.PathUnescape(path); err == nil {
			o.url.Path, o.url.RawPath = p, path
		} else {
			o.url.Path = path
		}
	} else {
		o.url.Opaque = path
	}
	o.req.URL = &o.url
	o.req.RequestURI = ""
	o.req.Close = false
	if r.ContentLength == 0 || r.Body == http.NoBody {
		o.req.Body = nil
	}
	keepUnderscores := rt.site != nil && rt.site.cfg.KeepUnderscoreHeaders
	h := o.hdr
	copyClientFields(h, r.Header, rq, keepUnderscores)
	if containsToken(r.Header["Te"], "trailers") {
		h["Te"] = teTrailers
	}
	if up != "" {
		h["Connection"] = connUpgrade
		h["Upgrade"] = r.Header["Upgrade"][:1:1]
	}
	if rq.Client.IsValid() {
		b := rq.Client.AppendTo(pr.addr[:0])
		pr.xff[0] = unsafe.String(unsafe.SliceData(b), len(b)) // never written again
		h["X-Forwarded-For"] = pr.xff[:1:1]
		h["X-Real-Ip"] = pr.xff[:1:1]
	}
	if rq.Scheme == "https" {
		h["X-Forwarded-Proto"] = schemeHTTPS
	} else {
		h["X-Forwarded-Proto"] = schemeHTTP
	}
	pr.xfh[0] = r.Host
	h["X-Forwarded-Host"] = pr.xfh[:1:1]
	if rt.prefixHdr != nil {
		h["X-Forwarded-Prefix"] = rt.prefixHdr
	}
	if rid != nil {
		h["X-Request-Id"] = rid
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = emptyUA // a nil value: Go sends no User-Agent of its own
	}
	rt.reqRules.apply(h)
	for k, vv := range rq.Upstream {
		h[k] = vv
	}
	o.req.Header = h
	o.req.Trailer = nil
	if len(r.Trailer) > 0 {
		o.req.Trailer = declaredTrailers(r.Trailer, rq)
	}
}

// target points the request at d, with the route's Host.
func (f *forward) target(d *upstream.Destination) {
	o := f.o
	o.url.Scheme, o.url.Host = d.Scheme(), d.Host()
	switch f.rt.hostMode {
	case HostDestination:
		o.req.Host = withoutDefaultPort(d.Scheme(), d.Host())
	case HostCustom:
		o.req.Host = f.rt.hostName
	default:
		o.req.Host = f.r.Host
	}
}

// send makes one attempt at d: with the transport's direct client when
// it has one for d that carries the request, else with net/http's round
// tripper for d (for an https destination checked by name, the pool whose
// SNI is the Host's name), or the cluster's own.
func (f *forward) send(d *upstream.Destination) (*http.Response, error) {
	o := f.o
	t, ok := f.rt.cluster.Transport.(*Transport)
	if !ok {
		return o.roundTrip(f.rt.cluster.Transport)
	}
	secure := d.Scheme() == "https"
	var name string
	var via http.RoundTripper = t.base
	if secure {
		if name, via = f.serverName(t, d); via == nil {
			return nil, errTooManyNames
		}
	}
	var ph h1client.ProxyHeader
	if v := t.cfg.ProxyProtocol; v != ProxyProtocolOff {
		ph = f.proxyHeader(v)
	}
	if t.h1 != nil && (!secure || t.h1TLS) {
		why, fallback := http1Fallback(&o.req)
		if !fallback {
			f.direct = true
			return o.direct(t, h1client.Destination{Addr: d.Host(), TLS: secure, ServerName: name, Proxy: ph}, f.connectBy)
		}
		f.rt.cluster.Stats.addFallback(why)
	}
	if ph.Version != 0 {
		o.withProxyHeader(ph)
	}
	if !f.connectBy.IsZero() {
		o.withConnectBy(f.connectBy)
	}
	return o.roundTrip(via)
}

// serverName returns the TLS server name of a request to d ("" for the
// destination's own host or ClientConfig.ServerName) and net/http's round
// tripper for that name; none past MaxServerNames.
func (f *forward) serverName(t *Transport, d *upstream.Destination) (string, http.RoundTripper) {
	var name string
	switch f.rt.hostMode {
	case HostDestination:
		return "", t.base
	case HostCustom:
		name = f.rt.sniName
	default:
		name = serverName(f.r.Host)
	}
	if !t.needsServerName(d.Host(), name) {
		return "", t.base
	}
	v, ok := t.ForServerName(name)
	if !ok {
		return "", nil
	}
	return name, v
}

// roundTrip makes the attempt with a round tripper.
func (o *exchange) roundTrip(via http.RoundTripper) (*http.Response, error) {
	conns := o.conns
	res, err := via.RoundTrip(&o.req)
	if err == nil && o.conns > conns {
		o.lent.Add(-1) // net/http's reader returned the head
	}
	return res, err
}

// direct makes the attempt with the transport's direct client, which
// reads nothing of the request once it returns.
func (o *exchange) direct(t *Transport, d h1client.Destination, connectBy time.Time) (*http.Response, error) {
	if o.conn != nil {
		o.conn = nil // an earlier attempt's; the direct client keeps the Connection field
	}
	q := &o.dreq // its URL and Header are the exchange's own, set once
	q.Method, q.Host, q.ContentLength, q.ConnectBy = o.req.Method, o.req.Host, 0, connectBy
	if b := o.req.Body; b != nil {
		q.Body, q.ContentLength = b, o.req.ContentLength
	} else if q.Body != nil {
		q.Body = nil
	}
	if err := t.h1.Do(o.req.Context(), d, q, &o.dx); err != nil {
		return nil, err
	}
	return &o.dx.Response, nil
}

// errTooManyNames refuses a TLS server name past the transport's limit of
// pools: no handshake can be set up for it, a TLS error.
const errTooManyNames = tlsSetupError("proxy: too many TLS server names on one cluster")

type tlsSetupError string

func (e tlsSetupError) Error() string { return string(e) }

// Outcome names the error's outcome for [upstream.ClassifyRoundTrip].
func (tlsSetupError) Outcome() upstream.Outcome { return upstream.TLSError }

// serverName returns a Host's name as an SNI: no port, lower case, no
// trailing dot. It allocates only for a Host in upper case.
func serverName(host string) string {
	n := strings.TrimSuffix(hostOnly(host), ".")
	for i := 0; i < len(n); i++ {
		if 'A' <= n[i] && n[i] <= 'Z' {
			return strings.ToLower(n)
		}
	}
	return n
}

func withoutDefaultPort(scheme, host string) string {
	switch {
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		return host[:len(host)-3]
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		return host[:len(host)-4]
	}
	return host
}
