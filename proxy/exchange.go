package proxy

import (
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync"
	"unsafe"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/upstream"
)

// exchange is the pooled state of one forwarded request: the outgoing
// request, its URL and header map, the trace context for 1xx responses and
// the idle timer are reused, so forwarding allocates no structure of ours.
type exchange struct {
	req   http.Request
	url   url.URL
	hdr   http.Header
	trace httptrace.ClientTrace
	info  informational
	idle  idleTimer
	tried [MaxRetryAttempts + 1]*upstream.Destination
	up    *upstreamConn // the plain HTTP/1.x connection in use, if any
}

// gotConn is the ClientTrace callback for the connection an attempt uses.
func (o *exchange) gotConn(info httptrace.GotConnInfo) {
	if u, ok := info.Conn.(*upstreamConn); ok {
		u.arm()
		o.up = u
	} else {
		o.up = nil
	}
}

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
	o.info.idle = &o.idle
	o.idle.init()
	return o
}}

// release returns the exchange to the pool. It is called only when the
// transport can no longer touch the request: no body still being read,
// no request trailers still to be written.
func (o *exchange) release() {
	clear(o.hdr)
	o.req = http.Request{}
	o.url = url.URL{}
	o.up = nil
	clear(o.tried[:])
	exchangePool.Put(o)
}

// prepare fills the pooled request from the client's: same context (plus
// the 1xx trace, without WithContext's allocation), same streamed body, the
// gate's forwarded path (or the rewritten one) and the query, and the
// header minus hop-by-hop fields, client-supplied forwarding fields and
// names with underscores, plus ours, the route's rules and, last, the
// headers the gate's policies set for the upstream.
func (o *exchange) prepare(rt *Route, r *http.Request, rq *gate.Request, path, up string, rid []string) {
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
	for k, vv := range r.Header {
		if strings.IndexByte(k, '_') >= 0 && (!keepUnderscores || ownedSpelling(k, rq)) {
			// CGI, WSGI, Rack and PHP read X_Auth_User as X-Auth-User.
			continue
		}
		h[k] = vv
	}
	removeHopByHop(h)
	if containsToken(r.Header["Te"], "trailers") {
		h["Te"] = teTrailers
	}
	if up != "" {
		h["Connection"] = connUpgrade
		h["Upgrade"] = r.Header["Upgrade"][:1:1]
	}
	for _, k := range clientOnlyHeaders {
		delete(h, k)
	}
	if !rq.CloudflareTrusted {
		removeCloudflare(h)
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
func (o *exchange) target(rt *Route, r *http.Request, d *upstream.Destination) {
	o.url.Scheme, o.url.Host = d.Scheme(), d.Host()
	switch rt.hostMode {
	case HostDestination:
		o.req.Host = withoutDefaultPort(d.Scheme(), d.Host())
	case HostCustom:
		o.req.Host = rt.hostName
	default:
		o.req.Host = r.Host
	}
}

// roundTripper returns the transport for d: for an https destination
// checked by name, the pool whose SNI is the Host's name.
func (o *exchange) roundTripper(rt *Route, r *http.Request, d *upstream.Destination) http.RoundTripper {
	t, ok := rt.cluster.Transport.(*Transport)
	if !ok || d.Scheme() != "https" {
		if ok && d.Scheme() == "http" {
			return t.directFor()
		}
		return rt.cluster.Transport
	}
	var name string
	switch rt.hostMode {
	case HostDestination:
		return t.tlsFor(t, "")
	case HostCustom:
		name = rt.sniName
	default:
		name = serverName(r.Host)
	}
	if !t.needsServerName(d.Host(), name) {
		return t.tlsFor(t, "")
	}
	if v, ok := t.ForServerName(name); ok {
		return t.tlsFor(v, name)
	}
	return errRoundTripper{errTooManyNames}
}

// errTooManyNames refuses a TLS server name past the transport's limit of
// pools: no handshake can be set up for it, a TLS error.
const errTooManyNames = tlsSetupError("proxy: too many TLS server names on one cluster")

type tlsSetupError string

func (e tlsSetupError) Error() string { return string(e) }

// Outcome names the error's outcome for [upstream.ClassifyRoundTrip].
func (tlsSetupError) Outcome() upstream.Outcome { return upstream.TLSError }

type errRoundTripper struct{ err error }

func (e errRoundTripper) RoundTrip(*http.Request) (*http.Response, error) { return nil, e.err }

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
