package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/internal/cowmap"
	"github.com/paduraksa/paduraksa/internal/enum"
)

// HTTP1Client chooses the client a [Transport] speaks HTTP/1.1 with: to
// plain-text destinations, and to TLS ones when its version is HTTP11.
type HTTP1Client uint8

const (
	// HTTP1Default is the library's choice (the zero value): HTTP1Direct.
	HTTP1Default HTTP1Client = iota
	// HTTP1Direct writes the request and reads the response on a pooled
	// connection from the forwarding goroutine itself, with a strict
	// response parser (RFC 9112). A request it does not handle (an
	// upgrade, Expect: 100-continue, an upload of unknown length or with
	// trailers, a field net/http refuses) is sent with net/http instead,
	// and counted ([Transport.HTTP1Counts]).
	HTTP1Direct
	// HTTP1NetHTTP sends every request with net/http's client.
	HTTP1NetHTTP
)

// CodeClientHTTP1Unknown is the code of a [ClientConfig.HTTP1] without a
// name.
const CodeClientHTTP1Unknown = "proxy.client.http1.unknown"

var http1ClientNames = enum.Names[HTTP1Client]{"default", "direct", "netHTTP"}

// String returns the client's name: "default", "direct" or "netHTTP".
func (c HTTP1Client) String() string { return http1ClientNames.Name(c) }

// ParseHTTP1Client returns the client a name stands for.
func ParseHTTP1Client(name string) (HTTP1Client, bool) { return http1ClientNames.Parse(name) }

// HTTP1ClientNames returns the names of the HTTP/1.1 clients, the default
// first: the names a config document uses.
func HTTP1ClientNames() []string { return http1ClientNames }

// defaultHTTP1 is what HTTP1Default stands for. Only the package's tests
// change it, before any transport is made, to run the suite on both
// clients.
var defaultHTTP1 = HTTP1Direct

// newH1Pool returns the direct client of a transport, or nil when cfg
// sends plain-text requests with net/http or in h2c. Its TLS side is on
// only with HTTP11: an HTTP/2 cluster's TLS destinations stay net/http's.
func newH1Pool(cfg ClientConfig, base *http.Transport) *h1Pool {
	c := cfg.HTTP1
	if c == HTTP1Default {
		c = defaultHTTP1
	}
	if c != HTTP1Direct || cfg.PlainTextVersion() != HTTP11 {
		return nil
	}
	ct := cfg.ConnectTimeout
	if ct <= 0 {
		ct = DefaultConnectTimeout
	}
	p := &h1Pool{
		base:       base,
		dialer:     net.Dialer{Timeout: ct, KeepAlive: 30 * time.Second},
		headerWait: cfg.ResponseHeaderTimeout,
		idle:       make(map[h1Key][]*h1Conn),
	}
	if cfg.Version == HTTP11 {
		// TLS destinations speak HTTP/1.1 only: no ALPN for h2.
		p.tls = tlsConfig(cfg)
		p.tls.NextProtos = []string{"http/1.1"}
	}
	p.tlsDefault = h1TLS{p: p}
	return p
}

// HTTP1Counts returns how many requests the transport's direct HTTP/1.1
// client sent itself and how many it handed to net/http (see
// [HTTP1Direct]), requests to TLS destinations of an HTTP/2 cluster
// among the latter; both are 0 when it has none.
func (t *Transport) HTTP1Counts() (direct, fallback uint64) {
	if t.h1 == nil {
		return 0, 0
	}
	return t.h1.direct.Load(), t.h1.fallback.Load()
}

// directFor returns the round tripper for a plain-text destination: the
// direct client when the transport has one.
func (t *Transport) directFor() http.RoundTripper {
	if t.h1 != nil {
		return t.h1
	}
	return t.base
}

// h1Pool is the direct HTTP/1.1 client of a transport: idle connections
// per destination address, reused last in first out. It is safe for
// concurrent use; a connection belongs to one exchange at a time.
type h1Pool struct {
	base       *http.Transport // for the requests it does not handle
	dialer     net.Dialer
	headerWait time.Duration // ResponseHeaderTimeout, 0 for none

	tls        *tls.Config // for TLS destinations; nil leaves them to net/http
	tlsDefault h1TLS       // the SNI is ClientConfig.ServerName or the URL's host
	tlsNames   cowmap.Map[string, *h1TLS]

	mu    sync.Mutex
	idle  map[h1Key][]*h1Conn
	sweep *time.Timer // closes expired idle connections; nil until first idle
	armed bool        // sweep will run

	direct, fallback atomic.Uint64
}

// Bounds of the pool, as net/http's transport is configured.
const (
	h1MaxIdlePerHost = MaxIdleConnsPerDestination
	h1IdleTimeout    = 90 * time.Second
	// h1WriteWait is how long a failed write waits for the answer an
	// upstream may have sent before it stopped reading (net/http's
	// client waits as long).
	h1WriteWait = 50 * time.Millisecond
	// max1xxHeads bounds the informational heads of one exchange, as
	// net/http's client does.
	max1xxHeads = 5
)

var _ http.RoundTripper = (*h1Pool)(nil)

// RoundTrip sends req on a pooled connection, or with net/http when it is
// a request the direct client does not handle. The response's Header is
// valid until its body is read to the end or closed: the connection
// reuses it (the forwarder copies the fields out before the body).
func (p *h1Pool) RoundTrip(req *http.Request) (*http.Response, error) {
	return p.send(req, h1Key{addr: req.URL.Host}, p.base)
}

// send sends req on a pooled connection to key, or with via, net/http's
// round tripper for the same destination.
func (p *h1Pool) send(req *http.Request, key h1Key, via http.RoundTripper) (*http.Response, error) {
	if !p.handles(req, key.tls) {
		p.fallback.Add(1)
		return via.RoundTrip(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeBody(req)
		return nil, err
	}
	// A request that cannot be sent again after failing on a connection
	// the upstream closed while it was idle does not take one that is.
	check := req.Body != nil && req.Body != http.NoBody || !idempotent(req.Method)
	for {
		c, err := p.get(ctx, key, check)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		res, retry, err := c.roundTrip(req)
		switch {
		case err == errFallback:
			p.fallback.Add(1)
			return via.RoundTrip(req)
		case err == nil:
			p.direct.Add(1)
			return res, nil
		case !retry:
			closeBody(req)
			return nil, err
		}
	}
}

// handles reports whether the direct client sends req: plain HTTP, no
// upgrade or Expect (net/http's client implements both), and a body only
// with a length and no trailers. A body of unknown length goes to
// net/http: such uploads are the ones that stream both ways, and the
// direct client reads the answer only once the body is written.
func (p *h1Pool) handles(req *http.Request, tls bool) bool {
	want := "http"
	if tls {
		want = "https"
	}
	if req.URL.Scheme != want || req.Close {
		return false
	}
	h := req.Header
	if h["Upgrade"] != nil || h["Expect"] != nil {
		return false
	}
	return req.Body == nil || req.Body == http.NoBody || (req.ContentLength > 0 && len(req.Trailer) == 0)
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// get returns an idle connection to key, or a new one; check skips
// idle connections the upstream closed.
func (p *h1Pool) get(ctx context.Context, key h1Key, check bool) (*h1Conn, error) {
	now := time.Now()
	p.mu.Lock()
	list := p.idle[key]
	for len(list) > 0 {
		c := list[len(list)-1]
		list[len(list)-1] = nil
		list = list[:len(list)-1]
		if now.Sub(c.idle) >= h1IdleTimeout {
			c.nc.Close()
			continue
		}
		if check {
			p.idle[key] = list
			p.mu.Unlock()
			if !closedWhileIdle(c.nc) {
				return c, nil
			}
			c.nc.Close()
			p.mu.Lock()
			list = p.idle[key]
			continue
		}
		p.idle[key] = list
		p.mu.Unlock()
		return c, nil
	}
	if list != nil {
		p.idle[key] = list
	}
	p.mu.Unlock()
	nc, err := p.dial(ctx, key)
	if err != nil {
		return nil, err
	}
	return newH1Conn(nc, p, key), nil
}

// put makes c idle, or closes it when it holds unread bytes (an upstream
// that sent more than its response) or the pool is full.
func (p *h1Pool) put(c *h1Conn) {
	if c.r != c.w {
		c.nc.Close()
		return
	}
	c.r, c.w = 0, 0
	if len(c.rbuf) > h1KeepBuffer {
		c.rbuf = make([]byte, h1ReadBuffer)
	}
	if cap(c.wbuf) > h1KeepBuffer {
		c.wbuf = make([]byte, 0, h1WriteBuffer)
	}
	c.used, c.idle = true, time.Now()
	p.mu.Lock()
	list := p.idle[c.key]
	if len(list) < h1MaxIdlePerHost {
		p.idle[c.key] = append(list, c)
		c = nil
		if !p.armed {
			p.armed = true
			if p.sweep == nil {
				p.sweep = time.AfterFunc(h1IdleTimeout, p.sweepIdle)
			} else {
				p.sweep.Reset(h1IdleTimeout)
			}
		}
	}
	p.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// sweepIdle closes the connections idle for h1IdleTimeout (the oldest
// are first in each list), and runs again while any stay idle: one timer
// per pool, not per connection, and none while the pool is empty.
func (p *h1Pool) sweepIdle() {
	now := time.Now()
	var expired []*h1Conn
	p.mu.Lock()
	for k, list := range p.idle {
		n := 0
		for n < len(list) && now.Sub(list[n].idle) >= h1IdleTimeout {
			n++
		}
		if n > 0 {
			expired = append(expired, list[:n]...)
			clear(list[:n])
			list = list[n:]
		}
		if len(list) == 0 {
			delete(p.idle, k)
			continue
		}
		p.idle[k] = list
	}
	p.armed = len(p.idle) > 0
	if p.armed {
		p.sweep.Reset(h1IdleTimeout / 2)
	}
	p.mu.Unlock()
	for _, c := range expired {
		c.nc.Close()
	}
}

// CloseIdleConnections closes the idle connections; those in use close
// when their exchange ends.
func (p *h1Pool) CloseIdleConnections() {
	p.mu.Lock()
	idle := p.idle
	p.idle = make(map[h1Key][]*h1Conn)
	p.mu.Unlock()
	for _, list := range idle {
		for _, c := range list {
			c.nc.Close()
		}
	}
	p.base.CloseIdleConnections()
}

// aLongTimeAgo is a deadline that makes blocked reads and writes return.
var aLongTimeAgo = time.Unix(1, 0)

// roundTrip runs one exchange on c. retry reports a failure on a reused
// connection before any of the response arrived, for a request that can
// be sent again as it is (no body; an idempotent method, or nothing
// written): the upstream had closed the idle connection. On errFallback
// nothing was written and c is back in the pool.
func (c *h1Conn) roundTrip(req *http.Request) (res *http.Response, retry bool, err error) {
	ctx := req.Context()
	head, err := c.appendRequestHead(c.wbuf[:0], req)
	if err != nil {
		if err == errFallback {
			c.pool.put(c)
		}
		return nil, false, err
	}
	c.wbuf = head[:0]

	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.abort)
	}
	deadline, _ := ctx.Deadline()
	fail := func(err error, retry bool) (*http.Response, bool, error) {
		if stop != nil {
			stop()
		}
		c.nc.Close()
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, retry, err
	}
	if !deadline.IsZero() || c.deadline {
		// A connection that never had a deadline needs no clearing.
		c.nc.SetDeadline(deadline)
		c.deadline = !deadline.IsZero()
	}

	bodyErr, werr := c.writeRequest(req, head)
	if bodyErr != nil {
		return fail(bodyErr, false)
	}
	replayable := req.Body == nil || req.Body == http.NoBody
	if werr != nil {
		// The upstream may have answered before it stopped reading.
		c.nc.SetReadDeadline(earliest(deadline, time.Now().Add(h1WriteWait)))
		c.deadline = true
		if _, err := c.readHead(); err != nil {
			return fail(werr, c.used && replayable)
		}
		c.head.close = true
	} else {
		if c.pool.headerWait > 0 {
			c.nc.SetReadDeadline(earliest(deadline, time.Now().Add(c.pool.headerWait)))
			c.deadline = true
		}
		got, err := c.readHead()
		if err != nil {
			return fail(err, c.used && !got && replayable && idempotent(req.Method))
		}
	}
	trace := httptrace.ContextClientTrace(ctx)
	for n1xx := 0; c.head.code >= 100 && c.head.code < 200 && c.head.code != http.StatusSwitchingProtocols; {
		if n1xx++; n1xx > max1xxHeads {
			return fail(errTooMany1xx, false)
		}
		if trace != nil && trace.Got1xxResponse != nil {
			if err := trace.Got1xxResponse(c.head.code, textproto.MIMEHeader(c.header().Clone())); err != nil {
				return fail(err, false)
			}
		}
		if _, err := c.readHead(); err != nil {
			return fail(err, false)
		}
	}
	if c.pool.headerWait > 0 {
		c.nc.SetReadDeadline(deadline)
		c.deadline = !deadline.IsZero()
	}
	return c.response(req, stop), false, nil
}

var errTooMany1xx = errors.New("proxy: upstream sent too many 1xx responses")

func earliest(deadline, t time.Time) time.Time {
	if !deadline.IsZero() && deadline.Before(t) {
		return deadline
	}
	return t
}

// response builds the response for the head just read, with its body on c.
func (c *h1Conn) response(req *http.Request, stop func() bool) *http.Response {
	h := &c.head
	b := &h1Body{c: c, nc: c.nc, stop: stop}
	res := &b.res
	res.Status = statusText(h.code)
	res.StatusCode = h.code
	res.Proto, res.ProtoMajor, res.ProtoMinor = "HTTP/1.1", 1, 1
	if h.minor == 0 {
		res.Proto, res.ProtoMinor = "HTTP/1.0", 0
	}
	res.Header = c.header()
	res.Request = req
	res.Body = b
	res.Close = h.close
	b.reuse = !h.close
	if h.chunked {
		res.TransferEncoding = chunkedCoding
		delete(res.Header, "Transfer-Encoding")
		if h.trailers {
			res.Trailer = declared(res.Header["Trailer"])
			delete(res.Header, "Trailer")
		}
	}
	switch {
	case h.code == http.StatusSwitchingProtocols:
		b.mode, b.left, b.reuse = bodyLength, 0, false
	case req.Method == http.MethodHead:
		b.mode, b.left, res.ContentLength = bodyLength, 0, h.length
	case h.code == http.StatusNoContent || h.code == http.StatusNotModified:
		b.mode, b.left = bodyLength, 0
	case h.chunked:
		b.mode, res.ContentLength = bodyChunked, -1
	case h.length >= 0:
		b.mode, b.left, res.ContentLength = bodyLength, h.length, h.length
	default:
		b.mode, res.ContentLength, b.reuse = bodyEOF, -1, false
		res.Close = true
	}
	return res
}

var chunkedCoding = []string{"chunked"}

// declared returns the trailer map a Trailer field announces: its names,
// canonical, without values.
func declared(vv []string) http.Header {
	t := make(http.Header)
	for _, v := range vv {
		for tok := range strings.SplitSeq(v, ",") {
			if tok = textproto.TrimString(tok); tok != "" {
				t[textproto.CanonicalMIMEHeaderKey(tok)] = nil
			}
		}
	}
	return t
}

// statusTexts holds "NNN Text" for the codes net/http knows.
var statusTexts = func() (s [600]string) {
	for i := 100; i < len(s); i++ {
		if t := http.StatusText(i); t != "" {
			s[i] = strconv.Itoa(i) + " " + t
		}
	}
	return s
}()

func statusText(code int) string {
	if code < len(statusTexts) && statusTexts[code] != "" {
		return statusTexts[code]
	}
	return strconv.Itoa(code)
}

// writeRequest writes the head and the body of its Content-Length.
// bodyErr is the body's own failure (the client's); err the connection's.
func (c *h1Conn) writeRequest(req *http.Request, head []byte) (bodyErr, err error) {
	body := req.Body
	if body == nil || body == http.NoBody {
		_, err = c.nc.Write(head)
		return nil, err
	}
	defer body.Close()
	left := req.ContentLength
	if left <= int64(cap(head)-len(head)) {
		// A small body goes out with the head when its first read brings
		// it all (the bytes already in hand are never held back).
		n := len(head)
		m, rerr := body.Read(head[n : n+int(left)])
		left -= int64(m)
		if rerr != nil && left > 0 {
			return bodyLengthError(req.ContentLength, rerr), nil
		}
		if _, err := c.nc.Write(head[:n+m]); err != nil || left == 0 {
			return nil, err
		}
	} else if _, err := c.nc.Write(head); err != nil {
		return nil, err
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for left > 0 {
		n, rerr := body.Read(buf[:min(int64(len(buf)), left)])
		left -= int64(n)
		if n > 0 {
			if _, err := c.nc.Write(buf[:n]); err != nil {
				return nil, err
			}
		}
		if rerr != nil && left > 0 {
			return bodyLengthError(req.ContentLength, rerr), nil
		}
	}
	return nil, nil
}

// bodyLengthError is net/http's error for a body shorter than its
// Content-Length, wrapping the body's own.
func bodyLengthError(n int64, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &lengthError{n: n, err: err}
}

type lengthError struct {
	n   int64
	err error
}

func (e *lengthError) Error() string {
	return "proxy: request body shorter than its Content-Length " + strconv.FormatInt(e.n, 10) + ": " + e.err.Error()
}

func (e *lengthError) Unwrap() error { return e.err }
