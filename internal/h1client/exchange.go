package h1client

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Exchange is one request and its response on a connection of a
// [Client]: [Client.Do] fills Response, and the Exchange is the
// response's body. The zero value is ready; once its body is read to the
// end or closed, the Exchange can carry another Do, so a caller keeps one
// in its own pooled state and an exchange allocates nothing.
//
// Its body is read from one goroutine at a time; Close may also come
// from another goroutine (a timer that cuts a stream), until the
// Exchange is used for another Do.
type Exchange struct {
	// Response is the answer's head once Do returned nil. Its Header is
	// the Exchange's own map: Do fills it and nothing else touches it,
	// so it is the caller's until the Exchange's next Do. Body is the
	// Exchange; Trailer is filled when the body ends (its names, without
	// values, from the start when the head announced them). Request is
	// nil.
	Response http.Response

	hdr   http.Header
	c     *conn
	nc    net.Conn // c.nc, for a Close from another goroutine
	state atomic.Uint32
	mode  uint8
	left  int64 // bytes left in the body or the current chunk
	err   error // sticky
	stop  func() bool
	reuse bool
}

// Body states: reading, then released to the pool or closed, once.
const (
	bodyReading uint32 = iota
	bodyReleased
	bodyClosed
)

// Body framings.
const (
	bodyLength  uint8 = iota // Content-Length, left bytes to go
	bodyChunked              // chunked, left bytes of the current chunk
	bodyEOF                  // until the connection closes
)

// Max1xx bounds the informational heads of one exchange, as net/http's
// client does; one more fails it.
const Max1xx = 5

var errTooMany1xx = &ResponseError{"more than " + strconv.Itoa(Max1xx) + " informational heads"}

// Do sends req to d on a pooled connection (or a new one) and reads the
// response head into ex. It fails with a *[RequestError] when it refuses
// req before writing any of it, a *[LengthError] when req's body failed
// or ended early, a *[ResponseError] for an answer the rules refuse, the
// context's error when it ended, a *[DialError] when no connection could
// be made, or the connection's.
// Requests that [Carries] refuses are refused, and a body needs its
// length. A pooled connection that holds bytes or end of file when the
// request is about to be written is closed, and the request goes on
// another. A request that may be sent again as it is (no body, and an
// idempotent method, or on a pooled connection nothing of it written)
// is sent again on another connection when the upstream closed or reset
// its connection before any of the response arrived: as often as pooled
// connections fail that way (each may have been closed while idle), and
// once after a new one does (a process that exits, or a listener closed
// with connections in its accept queue, drops requests that way). A
// timeout is never sent again: a slow upstream is how overload shows.
func (cl *Client) Do(ctx context.Context, d Destination, req *Request, ex *Exchange) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if req.Body != nil && req.ContentLength <= 0 {
		return errBodyLength
	}
	if !Carries(req.Header) {
		return errUnsupported
	}
	for resent := false; ; {
		c, err := cl.get(ctx, d, req.Body == nil, req.ConnectBy)
		if err != nil {
			return err
		}
		retry, err := c.exchange(ctx, req, ex)
		if err == nil || !retry {
			return err
		}
		if !c.used {
			// A new connection's drop: the upstream took the request
			// and went away, or drops requests. Once only. A pooled
			// connection may have been closed as it went out, and its
			// request goes on the next one, each taking one from the
			// pool, as net/http's client does.
			if resent {
				return err
			}
			resent = true
		}
	}
}

// idempotent reports whether a method may be sent twice (RFC 9110
// section 9.2.2).
func idempotent(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// exchange runs one exchange on c. retry reports that the upstream
// closed or reset c before any of the response arrived, for a request
// that can be sent again as it is (no body; an idempotent method, or
// nothing written on a reused connection), or errStale. On a
// RequestError nothing was written and c is back in the pool.
func (c *conn) exchange(ctx context.Context, req *Request, ex *Exchange) (retry bool, err error) {
	head, err := c.appendHead(c.wbuf[:0], req)
	if err != nil {
		c.client.put(c)
		return false, err
	}
	c.wbuf = head[:0]

	var stop func() bool
	if ctx.Done() != nil {
		stop = context.AfterFunc(ctx, c.abort)
	}
	deadline, _ := ctx.Deadline()
	fail := func(err error, retry bool) (bool, error) {
		if stop != nil {
			stop()
		}
		c.nc.Close()
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return retry, err
	}
	if !deadline.IsZero() || c.deadline {
		// A connection that never had a deadline needs no clearing.
		c.nc.SetDeadline(deadline)
		c.deadline = !deadline.IsZero()
	}

	replayable := req.Body == nil
	headerWait := c.client.cfg.ResponseHeaderTimeout
	var werr, rerr error
	if replayable && c.raw != nil {
		// The head goes out from the wait of the answer's first read,
		// so that read's deadline comes first.
		if headerWait > 0 {
			c.nc.SetReadDeadline(earliest(deadline, time.Now().Add(headerWait)))
			c.deadline = true
		}
		var rest []byte
		if rest, werr, rerr = c.writeRead(head); len(rest) > 0 && werr == nil {
			_, werr = c.nc.Write(rest)
		}
	} else {
		var bodyErr error
		if bodyErr, werr = c.writeRequest(req, head); bodyErr != nil {
			return fail(bodyErr, false)
		}
		if werr == nil && headerWait > 0 {
			c.nc.SetReadDeadline(earliest(deadline, time.Now().Add(headerWait)))
			c.deadline = true
		}
	}
	if werr != nil {
		// The upstream may have answered before it stopped reading.
		c.nc.SetReadDeadline(earliest(deadline, time.Now().Add(writeWait)))
		c.deadline = true
		if _, err := c.readHead(); err != nil {
			return fail(werr, replayable && (c.used || idempotent(req.Method)) && dropped(werr))
		}
		c.head.close = true
	} else {
		got, err := false, rerr
		if rerr == errStale {
			// Nothing written: any request goes on another connection.
			return fail(rerr, true)
		}
		if rerr == nil {
			got, err = c.readHead()
		}
		if err != nil {
			return fail(err, !got && replayable && idempotent(req.Method) && dropped(err))
		}
	}
	if ex.hdr == nil {
		ex.hdr = make(http.Header, 16)
	}
	for n1xx := 0; c.head.code >= 100 && c.head.code < 200 && c.head.code != http.StatusSwitchingProtocols; {
		if n1xx++; n1xx > Max1xx {
			return fail(errTooMany1xx, false)
		}
		if req.Got1xx != nil {
			if err := req.Got1xx(c.head.code, textproto.MIMEHeader(c.header(ex.hdr))); err != nil {
				return fail(err, false)
			}
		}
		if _, err := c.readHead(); err != nil {
			return fail(err, false)
		}
	}
	if headerWait > 0 {
		c.nc.SetReadDeadline(deadline)
		c.deadline = !deadline.IsZero()
	}
	ex.start(c, req.Method, stop)
	return false, nil
}

// dropped reports whether err is the upstream's end of the connection (a
// close or a reset), not a timeout: a slow upstream is not sent a
// request twice.
func dropped(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// errStale is a pooled connection found holding bytes or end of file
// as a request was about to be written on it.
var errStale = errors.New("h1client: idle connection closed or written on by the upstream")

// writeWait is how long a failed write waits for the answer an upstream
// may have sent before it stopped reading (net/http's client waits as
// long).
const writeWait = 50 * time.Millisecond

func earliest(deadline, t time.Time) time.Time {
	if !deadline.IsZero() && deadline.Before(t) {
		return deadline
	}
	return t
}

// start makes ex the exchange of the head c just read, with its body on
// c.
func (ex *Exchange) start(c *conn, method string, stop func() bool) {
	h := &c.head
	ex.c, ex.nc, ex.stop, ex.err = c, c.nc, stop, nil
	ex.state.Store(bodyReading)
	res := &ex.Response
	*res = http.Response{
		Status:     statusText(h.code),
		StatusCode: h.code,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: c.header(ex.hdr),
		Body:   ex,
		Close:  h.close,
	}
	if h.minor == 0 {
		res.Proto, res.ProtoMinor = "HTTP/1.0", 0
	}
	ex.reuse = !h.close
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
		ex.mode, ex.left, ex.reuse = bodyLength, 0, false
	case method == http.MethodHead:
		ex.mode, ex.left, res.ContentLength = bodyLength, 0, h.length
	case h.code == http.StatusNoContent || h.code == http.StatusNotModified:
		ex.mode, ex.left = bodyLength, 0
	case h.chunked:
		ex.mode, res.ContentLength = bodyChunked, -1
	case h.length >= 0:
		ex.mode, ex.left, res.ContentLength = bodyLength, h.length, h.length
	default:
		ex.mode, res.ContentLength, ex.reuse = bodyEOF, -1, false
		res.Close = true
	}
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

// copyBufs holds the buffers request bodies are copied through.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// Read reads the response body. At its end the connection goes back to
// the pool (or is closed, when it cannot carry another exchange).
func (ex *Exchange) Read(p []byte) (int, error) {
	if ex.err != nil {
		return 0, ex.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := ex.read(p)
	if err != nil {
		ex.err = err
		if err == io.EOF {
			ex.finish(ex.reuse)
		} else {
			ex.finish(false)
		}
	}
	return n, err
}

// Pending reports whether the body has bytes to come that the upstream
// sent as one piece: the rest of a chunk whose size line was read, or
// bytes already in the connection's buffer. A relay that flushes as the
// upstream flushed waits for these: a chunk's size is written once all
// its bytes are at hand, so its rest waits on the network, never on the
// upstream. It is false once the body ended.
func (ex *Exchange) Pending() bool {
	if ex.err != nil || ex.c == nil {
		return false
	}
	return ex.mode == bodyChunked && ex.left > 0 || ex.c.r < ex.c.w
}

func (ex *Exchange) read(p []byte) (int, error) {
	c := ex.c
	switch ex.mode {
	case bodyLength:
		if ex.left == 0 {
			return 0, io.EOF
		}
		n, err := c.read(p[:min(int64(len(p)), ex.left)])
		ex.left -= int64(n)
		if ex.left == 0 {
			return n, io.EOF
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	case bodyChunked:
		if ex.left == 0 {
			l, err := c.readLine(maxChunkLine)
			if err != nil {
				return 0, err
			}
			if ex.left, err = parseChunkSize(l); err != nil {
				return 0, err
			}
			if ex.left == 0 {
				return 0, ex.readTrailers()
			}
		}
		n, err := c.read(p[:min(int64(len(p)), ex.left)])
		ex.left -= int64(n)
		if ex.left == 0 && err == nil {
			var l []byte
			if l, err = c.readLine(2); err == nil && len(l) != 0 {
				err = errChunkEnd
			}
			if err == errChunkSize || err == errBareLF {
				err = errChunkEnd
			}
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	return c.read(p)
}

// readTrailers reads the trailer section into Response.Trailer and
// returns io.EOF, the end of the body.
func (ex *Exchange) readTrailers() error {
	c := ex.c
	size := 0
	for {
		l, err := c.readLine(MaxHeadBytes - size)
		if err != nil {
			if err == errChunkSize {
				err = errHeadTooLarge
			}
			return err
		}
		if len(l) == 0 {
			return io.EOF
		}
		size += len(l) + 2
		f, err := parseField(l)
		if err != nil {
			return err
		}
		if framingName(f.name) {
			return errTrailerName
		}
		canonicalInPlace(f.name)
		name := c.intern(f.name)
		t := &ex.Response.Trailer
		if *t == nil {
			*t = make(http.Header)
		}
		(*t)[name] = append((*t)[name], string(f.value))
	}
}

// framingName reports whether a trailer field name is one that frames
// or routes a message, which no trailer may carry.
func framingName(name []byte) bool {
	return asciiEqualFold(name, "content-length") || asciiEqualFold(name, "transfer-encoding") ||
		asciiEqualFold(name, "trailer") || asciiEqualFold(name, "host")
}

// Close ends the body: read to its end, the connection is pooled
// already; otherwise it is closed. It is safe from another goroutine than
// the reader's.
func (ex *Exchange) Close() error {
	if ex.state.CompareAndSwap(bodyReading, bodyClosed) {
		ex.nc.Close()
		ex.stopContext()
	}
	return nil
}

// finish ends the body from the reading goroutine: the connection goes
// back to the pool when reuse says it can and no Close came first.
func (ex *Exchange) finish(reuse bool) {
	if reuse && ex.stopContext() && ex.state.CompareAndSwap(bodyReading, bodyReleased) {
		ex.c.client.put(ex.c)
		return
	}
	ex.Close()
}

// stopContext stops the cancellation watch and reports whether it never
// ran (a watch that ran set a past deadline on the connection).
func (ex *Exchange) stopContext() bool {
	stop := ex.stop
	if stop == nil {
		return true
	}
	return stop()
}
