package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/upstream"
)

// HostHeader says which Host header a route sends upstream.
type HostHeader uint8

const (
	// HostClient sends the client's Host as received (the zero value).
	HostClient HostHeader = iota
	// HostDestination sends the destination's address (without the
	// scheme's default port).
	HostDestination
	// HostCustom sends RouteConfig.HostName.
	HostCustom
)

// RouteConfig describes a route's forwarding. Only Cluster is required.
type RouteConfig struct {
	Cluster *Cluster
	// Site holds the host's settings; nil means none.
	Site *Site
	// HostHeader is the Host sent upstream; on an https destination the
	// same name is the SNI and, with system trust, the name the
	// certificate is checked against (pinned and any trust check no name).
	// A ClientConfig.ServerName overrides it for the SNI and the check.
	HostHeader HostHeader
	// HostName is the custom Host of HostCustom: a host name or IP literal
	// with an optional port.
	HostName string
	Rewrite  Rewrite
	// RequestHeaders and ResponseHeaders merge over the site's by name.
	RequestHeaders  []HeaderRule
	ResponseHeaders []HeaderRule
	Retry           Retry
}

// Route is the proxy's [gate.Target]: it forwards a route's requests to a
// cluster. Build one with [NewRoute]; a Route with only Cluster set
// forwards with the defaults. A Route is immutable, belongs to one snapshot
// and is safe for concurrent use; it must not be copied after first use.
type Route struct {
	Cluster *Cluster

	site      *Site
	hostMode  HostHeader
	hostName  string
	sniName   string
	rw        rewriter
	prefixHdr []string
	reqRules  headerRules
	respRules headerRules
	retry     retrier
}

var _ gate.Target = (*Route)(nil)

// ErrInvalidRoute wraps every problem [NewRoute] finds.
var ErrInvalidRoute = errors.New("proxy: invalid route")

// NewRoute checks and compiles a route. Header rules are merged over the
// site's: at most MaxHeaderRules per direction after the merge.
func NewRoute(cfg RouteConfig) (*Route, error) {
	rt := &Route{Cluster: cfg.Cluster, site: cfg.Site, hostMode: cfg.HostHeader}
	var errs []error
	if cfg.Cluster == nil || cfg.Cluster.Upstream == nil || cfg.Cluster.Transport == nil {
		errs = append(errs, errors.New("route without a cluster, its runtime state or its transport"))
	}
	switch cfg.HostHeader {
	case HostClient, HostDestination:
		if cfg.HostName != "" {
			errs = append(errs, errors.New("a host name is only used with HostCustom"))
		}
	case HostCustom:
		if !validHostName(cfg.HostName) {
			errs = append(errs, errors.New("custom Host "+quote(cfg.HostName)+" is not a host name or IP literal with an optional port"))
		}
		rt.hostName = cfg.HostName
		rt.sniName = strings.TrimSuffix(strings.ToLower(hostOnly(cfg.HostName)), ".")
	default:
		errs = append(errs, errors.New("unknown Host header mode"))
	}
	var err error
	if rt.rw, err = newRewriter(cfg.Rewrite); err != nil {
		errs = append(errs, err)
	}
	if rt.rw.strip != "" {
		rt.prefixHdr = []string{rt.rw.strip}[:1:1]
	}
	var siteReq, siteResp []HeaderRule
	if cfg.Site != nil {
		siteReq, siteResp = cfg.Site.cfg.RequestHeaders, cfg.Site.cfg.ResponseHeaders
	}
	if rt.reqRules, err = compileRules(Request, siteReq, cfg.RequestHeaders); err != nil {
		errs = append(errs, err)
	}
	if rt.respRules, err = compileRules(Response, siteResp, cfg.ResponseHeaders); err != nil {
		errs = append(errs, err)
	}
	if err := CheckRetry(cfg.Retry); err != nil {
		errs = append(errs, err)
	}
	rt.retry.init(cfg.Retry)
	if len(errs) > 0 {
		return nil, errors.Join(append([]error{ErrInvalidRoute}, errs...)...)
	}
	return rt, nil
}

func quote(s string) string { return `"` + s + `"` }

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

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}

// Forward sends the request to a destination of the route's cluster and
// copies the answer back. It answers 503 when the cluster has no available
// destination (or the affinity failure policy says so), 502 when the
// destination cannot be reached or answers garbage, 504 when it times out,
// 404 for a path a stripping route does not cover. A request body the
// client failed to deliver (malformed or cut chunks, shorter than its
// Content-Length, below the minimum rate, over the body limit) is answered
// 400, 408 or 413 with the connection closed, and never held against the
// destination. A client that went away is a client abort: the destination
// is not blamed and the handler aborts (http.ErrAbortHandler), so net/http
// never completes the exchange with an answer of its own.
func (rt *Route) Forward(w http.ResponseWriter, r *http.Request, rq *gate.Request) {
	c := rt.Cluster
	var rid []string
	if rt.site != nil && rt.site.requestID != RequestIDPass {
		rid = rt.site.requestIDValue(r)
		w.Header()["X-Request-Id"] = rid
	}
	path, view := rq.ForwardPath, rq.Path
	if path == "" {
		// Not decided by a gate: read the path the way a gate would.
		v, err := gate.ReadPath(gate.RequestPath(r))
		if err != nil || v.Needs != 0 {
			rt.answer(w, r, rq, http.StatusBadRequest)
			return
		}
		path, view = v.Forward, v.Match
	}
	if rt.rw.active {
		p, status := rt.rw.apply(path, view)
		if status != 0 {
			rt.answer(w, r, rq, status)
			return
		}
		path = p
	}
	up := upgradeType(r)

	m := c.Upstream.Members()
	var d *upstream.Destination
	var ast balance.AffinityStatus
	if c.Affinity != nil {
		if d, ast = c.Affinity.Find(r, m); ast == balance.AffinityFailed {
			rt.answer(w, r, rq, http.StatusServiceUnavailable)
			return
		}
	}
	policy := c.Policy
	if policy == nil {
		policy = defaultPolicy
	}
	in := balance.Input{Request: r, Client: rq.Client}
	if d == nil {
		d = policy.Pick(in, m.Available)
	}
	if d == nil {
		rt.answer(w, r, rq, http.StatusServiceUnavailable)
		return
	}

	o := exchangePool.Get().(*exchange)
	o.prepare(rt, r, rq, path, up, rid)

	// The body: streamed through a wrapper, or, on a retrying route with
	// an idempotent method, buffered up to the limit so it can be replayed.
	retrying := rt.retry.attempts > 0 && up == ""
	idem := idempotent(r.Method)
	replayable := o.req.Body == nil
	var replay []byte
	var rb *reqBody
	if retrying {
		rt.retry.live.Add(1)
		defer rt.retry.live.Add(-1)
		if idem && o.req.Body != nil {
			buf, ok, err := replayBody(r, rt.retry.bodyLimit)
			if err != nil {
				o.release()
				rt.clientBodyFailed(w, r, rq, err)
				return
			}
			replay, replayable = buf, ok
		}
	}
	if o.req.Body != nil && replay == nil {
		rb = &reqBody{src: r.Body, it: &o.idle, trIn: r.Trailer, trOut: o.req.Trailer}
		o.req.Body = rb
	}

	o.idle.start(c.idle(), w)
	o.info.mu.Lock()
	o.info.w, o.info.received, o.info.relayed, o.info.http10 = w, 0, 0, r.ProtoMajor == 1 && r.ProtoMinor == 0
	o.info.mu.Unlock()

	var res *http.Response
	held := false
	tried := o.tried[:0]
	for attempt := 0; ; attempt++ {
		if replay != nil {
			o.req.Body = io.NopCloser(newReplayReader(replay))
		}
		o.target(rt, r, d)
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(gate.Step{Kind: gate.StepForward, Name: d.ID(), Reason: d.Host()})
		}
		d.Begin()
		var err error
		res, err = o.roundTripper(rt, r, d).RoundTrip(&o.req)
		if held {
			rt.retry.release()
			held = false
		}
		if err == nil {
			break
		}
		d.End()
		if berr := rb.clientError(); berr != nil {
			// The client's body failed, and the transport with it: the
			// destination did nothing wrong.
			o.info.done()
			o.idle.stop()
			rt.clientBodyFailed(w, r, rq, berr)
			return
		}
		kind := ClassifyError(r.Context(), err)
		if o.idle.hasFired() {
			kind = ErrorTimeout
		}
		if kind != ErrorClientAbort {
			c.observe(d, kind, 0)
		}
		tried = append(tried, d)
		if retrying && attempt < rt.retry.attempts && retryable(kind, rb != nil && rb.touched.Load(), replayable, idem) && rt.retry.acquire() {
			if next := policy.Pick(in, exclude(m.Available, tried)); next != nil {
				held = true
				if c.Stats != nil {
					c.Stats.retries.Add(1)
				}
				d = next
				continue
			}
			rt.retry.release()
		}
		o.info.done()
		o.idle.stop()
		rt.failed(w, r, rq, c.Stats, kind)
		if rb == nil && r.Trailer == nil {
			o.release()
		}
		if kind == ErrorClientAbort {
			panic(http.ErrAbortHandler)
		}
		return
	}
	o.info.done()
	kind, cut := rt.complete(w, r, rq, o, res, d, up, rid, ast.NeedsSet())
	if kind == ErrorBody && rb.clientError() != nil {
		// The response was cut because the upload failed: the client's
		// doing, like an abort.
		kind = ErrorClientBody
	}
	switch kind {
	case ErrorClientAbort, ErrorClientBody:
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(gate.Step{Kind: gate.StepAnswer, Status: 499, Reason: "client " + kind.String()})
		}
	default:
		c.observe(d, kind, res.StatusCode)
	}
	c.Stats.add(kind)
	if kind == ErrorNone && (rb == nil || rb.closed.Load()) && r.Trailer == nil {
		o.release()
	}
	if cut {
		// The header is gone already: abort the client's stream so a
		// truncated body never looks complete.
		panic(http.ErrAbortHandler)
	}
}

// complete relays the response and releases the destination's in-flight
// count, whatever the response holds.
func (rt *Route) complete(w http.ResponseWriter, r *http.Request, rq *gate.Request, o *exchange, res *http.Response, d *upstream.Destination, up string, rid []string, setAffinity bool) (kind ErrorKind, cut bool) {
	defer d.End()
	kind, cut = rt.respond(w, r, rq, o, res, d, up, rid, setAffinity)
	if fired := o.idle.stop(); fired && kind != ErrorNone && kind != ErrorClientBody {
		kind = ErrorTimeout
	}
	return kind, cut
}

func (c *Cluster) observe(d *upstream.Destination, kind ErrorKind, status int) {
	if c.Observer != nil {
		c.Observer.Observe(Observation{Destination: d, Kind: kind, Status: status})
	}
}

// answer writes one of the gate's answers with the route's response rules.
func (rt *Route) answer(w http.ResponseWriter, r *http.Request, rq *gate.Request, status int) {
	rt.respRules.apply(w.Header())
	rq.Answer(w, r, status)
}

// failed answers a round trip that produced no response.
func (rt *Route) failed(w http.ResponseWriter, r *http.Request, rq *gate.Request, st *Stats, kind ErrorKind) {
	st.add(kind)
	switch kind {
	case ErrorClientAbort:
		// The client is gone: nobody reads an answer. Logged as 499.
		if tr := rq.Tracer; tr != nil {
			tr.OnStep(gate.Step{Kind: gate.StepAnswer, Status: 499, Reason: "client abort"})
		}
	case ErrorTimeout:
		rt.answer(w, r, rq, http.StatusGatewayTimeout)
	default:
		rt.answer(w, r, rq, http.StatusBadGateway)
	}
}

// clientBodyFailed answers a request whose body the client failed to
// deliver: 413 over a limit, 408 too slow, 400 otherwise (malformed or cut
// chunks, shorter than its Content-Length), and closes an HTTP/1.x
// connection, whose framing is lost.
func (rt *Route) clientBodyFailed(w http.ResponseWriter, r *http.Request, rq *gate.Request, err error) {
	rt.Cluster.Stats.add(ErrorClientBody)
	if r.ProtoMajor == 1 {
		w.Header()["Connection"] = connClose
	}
	rt.answer(w, r, rq, clientBodyStatus(err))
}

func clientBodyStatus(err error) int {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, gate.ErrBodyTooLarge), errors.As(err, &mbe):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded):
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
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
	t, ok := rt.Cluster.Transport.(*Transport)
	if !ok || d.Scheme() != "https" {
		return rt.Cluster.Transport
	}
	var name string
	switch rt.hostMode {
	case HostDestination:
		return t
	case HostCustom:
		name = rt.sniName
	default:
		name = serverName(r.Host)
	}
	if !t.needsServerName(d.Host(), name) {
		return t
	}
	if v, ok := t.ForServerName(name); ok {
		return v
	}
	return errRoundTripper{errTooManyNames}
}

var errTooManyNames = errors.New("proxy: too many TLS server names on one cluster")

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

// respond writes the upstream's response to the client and reports how
// the exchange ended; cut reports a response whose header was sent and
// whose body was not completed.
func (rt *Route) respond(w http.ResponseWriter, r *http.Request, rq *gate.Request, o *exchange, res *http.Response, d *upstream.Destination, up string, rid []string, setAffinity bool) (kind ErrorKind, cut bool) {
	if !setAffinity || rt.Cluster.Affinity == nil {
		setAffinity = false
	}
	if res.StatusCode < 100 || res.StatusCode > 599 {
		// net/http's client reads any three digits; WriteHeader panics
		// below 100, and nothing above 599 is HTTP.
		res.Body.Close()
		rt.answer(w, r, rq, http.StatusBadGateway)
		return ErrorResponse, false
	}
	if res.StatusCode == http.StatusSwitchingProtocols {
		if up == "" {
			res.Body.Close()
			rt.answer(w, r, rq, http.StatusBadGateway)
			return ErrorResponse, false
		}
		if setAffinity {
			rt.Cluster.Affinity.Set(w, r, d)
		}
		if err := switchProtocols(w, res, up, &o.idle); err != nil {
			rt.answer(w, r, rq, http.StatusBadGateway)
			return ErrorResponse, false
		}
		return ErrorNone, false
	}
	defer res.Body.Close()
	h := res.Header
	if res.Close && res.ProtoMajor == 1 && h["Connection"] == nil {
		// net/http deleted a Connection field that said close, with the
		// names it listed: the connection read them.
		o.up.removeListed(h)
	}
	removeHopByHop(h)
	delete(h, "Alt-Svc")
	dst := w.Header()
	for k, vv := range h {
		switch k {
		case "Server":
			if _, own := dst["Server"]; own {
				continue
			}
		case "X-Request-Id":
			if rid != nil {
				continue
			}
		}
		dst[k] = vv
	}
	if loc := dst["Location"]; len(loc) == 1 && rt.rw.active {
		if m, ok := rt.rw.mapLocation(loc[0], r.Host, o.req.Host, rq.Scheme); ok {
			dst["Location"] = []string{m}
		}
	}
	enc := codingNone
	if rt.site != nil {
		enc = rt.site.comp.choose(r, res, up != "")
		if enc != codingNone {
			representationHeaders(dst, enc)
		}
	}
	rt.respRules.apply(dst)
	if setAffinity {
		rt.Cluster.Affinity.Set(w, r, d) // appends to the upstream's Set-Cookie
	}
	if len(res.Trailer) > 0 {
		// Announce the trailers and drop a known length: either would
		// stop HTTP/1.1 from chunking (an HTTP/2 upstream may send a
		// length with trailers), and the trailers would be lost.
		delete(dst, "Content-Length")
		keys := make([]string, 0, len(res.Trailer))
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		dst["Trailer"] = keys
	}
	w.WriteHeader(res.StatusCode)
	o.idle.touch()
	o.idle.setBody(res.Body)

	stream := res.ContentLength < 0 || isEventStream(h)
	var rerr, werr error
	if enc == codingNone {
		rerr, werr = copyBody(w, w, res.Body, stream, nil, &o.idle)
	} else {
		e := getEncoder(enc, w)
		rerr, werr = copyBody(w, e, res.Body, stream, e, &o.idle)
		if rerr == nil && werr == nil {
			werr = e.Close()
		}
		putEncoder(enc, e)
	}
	switch {
	case werr != nil:
		return ErrorClientAbort, true
	case rerr != nil:
		if r.Context().Err() != nil {
			return ErrorClientAbort, true
		}
		return ErrorBody, true
	}
	for k, vv := range res.Trailer {
		dst[http.TrailerPrefix+k] = vv
	}
	return ErrorNone, false
}

func isEventStream(h http.Header) bool {
	ct := h["Content-Type"]
	return len(ct) == 1 && len(ct[0]) >= 17 && strings.EqualFold(ct[0][:17], "text/event-stream")
}

// copyBody copies src to dst with a pooled buffer, stamping activity on
// every read; a stream is flushed after every read (the encoder first, if
// any) so data reaches the client as it arrives. It returns the read and
// the write error apart: only the first is the upstream's fault.
func copyBody(w http.ResponseWriter, dst io.Writer, src io.Reader, stream bool, enc encoder, it *idleTimer) (rerr, werr error) {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	rc := http.NewResponseController(w)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			it.touch()
			if _, werr = dst.Write(buf[:n]); werr != nil {
				return nil, werr
			}
			if stream {
				if enc != nil {
					if werr = enc.Flush(); werr != nil {
						return nil, werr
					}
				}
				if werr = rc.Flush(); werr != nil {
					return nil, werr
				}
			}
		}
		if err == io.EOF {
			return nil, nil
		}
		if err != nil {
			return err, nil
		}
	}
}

// ErrorKind classifies a failed exchange with an upstream, for passive
// health and metrics.
type ErrorKind uint8

const (
	ErrorNone        ErrorKind = iota
	ErrorConnect               // the connection could not be made
	ErrorTLS                   // the TLS handshake failed
	ErrorTimeout               // connect, response header or idle timeout
	ErrorResponse              // the response header was malformed or cut
	ErrorBody                  // the body was cut mid-way
	ErrorClientAbort           // the client went away: not the upstream's fault
	ErrorClientBody            // the client's request body failed: not the upstream's fault
	errorKindCount
)

var errorKindNames = [...]string{"none", "connect", "tls", "timeout", "response", "body", "client-abort", "client-body"}

// String returns the kind's name.
func (k ErrorKind) String() string {
	if int(k) < len(errorKindNames) {
		return errorKindNames[k]
	}
	return "invalid"
}

// ClassifyError says what kind of failure err is. ctx is the client
// request's context: when it is done, the failure is a client abort whatever
// err says.
func ClassifyError(ctx context.Context, err error) ErrorKind {
	if err == nil {
		return ErrorNone
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) {
		return ErrorClientAbort
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return ErrorTimeout
	}
	var recErr tlsRecordHeaderError
	if errors.As(err, &recErr) || isTLSError(err) {
		return ErrorTLS
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return ErrorConnect
	}
	if errors.Is(err, errTooManyNames) {
		return ErrorTLS
	}
	return ErrorResponse
}
