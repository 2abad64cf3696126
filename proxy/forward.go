package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/upstream"
)

// Route is the proxy's [gate.Target]: it forwards a route's requests to a
// cluster. It is immutable and belongs to one snapshot.
type Route struct {
	Cluster *Cluster
}

var _ gate.Target = (*Route)(nil)

// outReq is the pooled outgoing request: the request, its URL and its
// header map are reused, so forwarding allocates no structure of ours.
type outReq struct {
	req http.Request
	url url.URL
	hdr http.Header
	xff []byte
}

var outPool = sync.Pool{New: func() any {
	return &outReq{hdr: make(http.Header, 16), xff: make([]byte, 0, 64)}
}}

func (o *outReq) release() {
	clear(o.hdr)
	o.req = http.Request{}
	o.url = url.URL{}
	outPool.Put(o)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}

// Forward sends the request to a destination of the route's cluster and
// copies the answer back. It answers 503 when the cluster has no available
// destination, 502 when the destination cannot be reached or answers
// garbage, 504 when it times out. A client that went away is a client
// abort: nothing is written and the destination is not blamed.
func (rt *Route) Forward(w http.ResponseWriter, r *http.Request, rq *gate.Request) {
	c := rt.Cluster
	policy := c.Policy
	if policy == nil {
		policy = defaultPolicy
	}
	d := policy.Pick(balance.Input{Request: r, Client: rq.Client}, c.Upstream.Members().Available)
	if d == nil {
		rq.Answer(w, r, http.StatusServiceUnavailable)
		return
	}
	d.Begin()
	defer d.End()

	o := outPool.Get().(*outReq)
	defer o.release()
	o.prepare(r, rq, d)
	if tr := rq.Tracer; tr != nil {
		tr.OnStep(gate.Step{Kind: gate.StepForward, Name: d.ID(), Reason: d.Host()})
	}

	res, err := c.Transport.RoundTrip(&o.req)
	if err != nil {
		rt.fail(w, r, rq, err)
		return
	}
	defer res.Body.Close()
	copyResponse(w, res)
}

// prepare fills the pooled request from the client's: same context (no
// WithContext), same body (streamed), the client's raw path and query, the
// client's Host, and the header minus hop-by-hop and client-supplied
// forwarding fields, plus ours.
func (o *outReq) prepare(r *http.Request, rq *gate.Request, d *upstream.Destination) {
	o.url = url.URL{
		Scheme:   d.Scheme(),
		Host:     d.Host(),
		Path:     r.URL.Path,
		RawPath:  r.URL.RawPath,
		RawQuery: r.URL.RawQuery,
	}
	o.req = *r
	o.req.URL = &o.url
	o.req.RequestURI = ""
	o.req.Close = false
	o.req.Host = r.Host
	if r.ContentLength == 0 {
		o.req.Body = nil
	}
	h := o.hdr
	for k, vv := range r.Header {
		h[k] = vv
	}
	removeHopByHop(h)
	if containsToken(r.Header["Te"], "trailers") {
		h["Te"] = teTrailers
	}
	for _, k := range clientOnlyHeaders {
		delete(h, k)
	}
	removeCloudflare(h)
	if rq.Client.IsValid() {
		o.xff = rq.Client.AppendTo(o.xff[:0])
		v := []string{string(o.xff)}[:1:1]
		h["X-Forwarded-For"] = v
		h["X-Real-Ip"] = v
	}
	if rq.Scheme == "https" {
		h["X-Forwarded-Proto"] = schemeHTTPS
	} else {
		h["X-Forwarded-Proto"] = schemeHTTP
	}
	h["X-Forwarded-Host"] = []string{r.Host}[:1:1]
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = emptyUA // a nil value: Go sends no User-Agent of its own
	}
	o.req.Header = h
	o.req.Trailer = r.Trailer
}

// fail answers a failed round trip.
func (rt *Route) fail(w http.ResponseWriter, r *http.Request, rq *gate.Request, err error) {
	switch ClassifyError(r.Context(), err) {
	case ErrorClientAbort:
		// The client is gone: nobody reads an answer. Logged as 499.
		return
	case ErrorTimeout:
		rq.Answer(w, r, http.StatusGatewayTimeout)
	default:
		rq.Answer(w, r, http.StatusBadGateway)
	}
}

// ErrorKind classifies a failed exchange with an upstream, for passive
// health and metrics.
type ErrorKind uint8

const (
	ErrorNone        ErrorKind = iota
	ErrorConnect               // the connection could not be made
	ErrorTLS                   // the TLS handshake failed
	ErrorTimeout               // connect or response timed out
	ErrorResponse              // the response header was malformed or cut
	ErrorBody                  // the body was cut mid-way
	ErrorClientAbort           // the client went away: not the upstream's fault
)

var errorKindNames = [...]string{"none", "connect", "tls", "timeout", "response", "body", "client-abort"}

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
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return ErrorConnect
	}
	var recErr tlsRecordHeaderError
	if errors.As(err, &recErr) || isTLSError(err) {
		return ErrorTLS
	}
	return ErrorResponse
}

// copyResponse writes the upstream's response to the client: headers minus
// hop-by-hop fields (the gate's Server stays), the status, the body with
// flushes for streams, and trailers.
func copyResponse(w http.ResponseWriter, res *http.Response) {
	removeHopByHop(res.Header)
	delete(res.Header, "Alt-Svc")
	dst := w.Header()
	for k, vv := range res.Header {
		if k == "Server" {
			if _, own := dst["Server"]; own {
				continue
			}
		}
		dst[k] = vv
	}
	if len(res.Trailer) > 0 {
		// A known length would stop HTTP/1.1 from chunking, and the
		// trailers would be lost.
		delete(dst, "Content-Length")
	}
	w.WriteHeader(res.StatusCode)

	stream := res.ContentLength < 0 || isEventStream(res.Header)
	if err := copyBody(w, res.Body, stream); err != nil {
		// The header is gone already: cut the client's connection so a
		// truncated body never looks complete.
		panic(http.ErrAbortHandler)
	}
	for k, vv := range res.Trailer {
		dst[http.TrailerPrefix+k] = vv
	}
}

func isEventStream(h http.Header) bool {
	ct := h["Content-Type"]
	return len(ct) == 1 && len(ct[0]) >= 17 && ct[0][:17] == "text/event-stream"
}

// copyBody copies with a pooled buffer; a stream is flushed after every
// read so data reaches the client as it arrives.
func copyBody(w http.ResponseWriter, src io.Reader, stream bool) error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	rc := http.NewResponseController(w)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return werr
			}
			if stream {
				rc.Flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
