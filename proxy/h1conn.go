package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"
)

// h1Conn is one plain-text HTTP/1.1 connection of the direct client. It
// is used by one exchange at a time, from the handler's own goroutine: the
// request is written and the response read without goroutines of its own.
// Its buffers, the response header map and the caches of field names and
// values live as long as the connection.
type h1Conn struct {
	nc   net.Conn
	pool *h1Pool
	key  h1Key // the pool's key: the destination
	// abort makes a blocked read or write return: it runs when the
	// exchange's context ends (made once, so watching costs no closure).
	abort    func()
	deadline bool      // a deadline may be set on nc
	used     bool      // carried an exchange before (a stale keep-alive may fail)
	idle     time.Time // when it went idle

	rbuf []byte // read buffer: rbuf[r:w] is unread
	r, w int
	wbuf []byte // the request head, and a small body with it

	head h1Head
	hdr  http.Header // the response header of the exchange in use
	keys []string    // scratch for sorting the request's field names

	names map[string]string   // field names seen, interned
	vals  map[string][]string // the last single value per field name
}

// Sizes of a connection's buffers, and bounds on what it keeps.
const (
	h1ReadBuffer  = 8 << 10
	h1WriteBuffer = 4 << 10
	h1KeepBuffer  = 64 << 10 // a grown buffer over this is not kept
	h1MaxInterned = 64       // names and values remembered per connection
)

func newH1Conn(nc net.Conn, p *h1Pool, key h1Key) *h1Conn {
	c := &h1Conn{
		nc: nc, pool: p, key: key,
		rbuf:  make([]byte, h1ReadBuffer),
		wbuf:  make([]byte, 0, h1WriteBuffer),
		hdr:   make(http.Header, 16),
		names: make(map[string]string, 16),
		vals:  make(map[string][]string, 16),
	}
	c.abort = func() { nc.SetDeadline(aLongTimeAgo) }
	return c
}

// errFallback reports a request the direct client does not write (an
// invalid method, Host or field, which net/http refuses with its own
// error): the caller sends it with net/http. Nothing was written.
var errFallback = errors.New("proxy: request needs net/http")

// appendRequestHead appends the request head to dst byte for byte as
// net/http's Request.Write writes it: the request line, Host, User-Agent,
// the body's Content-Length, the fields in sorted order, trimmed
// (hop-by-hop fields are the caller's to remove).
func (c *h1Conn) appendRequestHead(dst []byte, req *http.Request) ([]byte, error) {
	if !validMethod(req.Method) || req.Method == http.MethodConnect {
		return dst, errFallback
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if !httpguts.ValidHostHeader(host) || strings.IndexByte(host, '%') >= 0 {
		return dst, errFallback // net/http removes a zone: leave it to it
	}
	dst = append(dst, req.Method...)
	dst = append(dst, ' ')
	n := len(dst)
	dst = appendRequestTarget(dst, req)
	for _, b := range dst[n:] {
		if b < ' ' || b == 0x7f {
			return dst, errFallback // net/http refuses it
		}
	}
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\n"...)
	if ua, ok := req.Header["User-Agent"]; !ok {
		dst = append(dst, "User-Agent: Go-http-client/1.1\r\n"...)
	} else if len(ua) > 0 && ua[0] != "" {
		if dst = appendField(dst, "User-Agent", ua[0]); dst == nil {
			return nil, errFallback
		}
	}
	switch {
	case req.ContentLength > 0:
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, req.ContentLength, 10)
		dst = append(dst, "\r\n"...)
	case req.Method == http.MethodPost || req.Method == http.MethodPut || req.Method == http.MethodPatch:
		dst = append(dst, "Content-Length: 0\r\n"...)
	}
	c.keys = c.keys[:0]
	for k := range req.Header {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		c.keys = append(c.keys, k)
	}
	slices.Sort(c.keys)
	for _, k := range c.keys {
		if !httpguts.ValidHeaderFieldName(k) {
			return dst, errFallback
		}
		for _, v := range req.Header[k] {
			if dst = appendField(dst, k, v); dst == nil {
				return nil, errFallback
			}
		}
	}
	return append(dst, "\r\n"...), nil
}

// appendField appends "k: v\r\n" with v trimmed; it returns nil for a
// value net/http would refuse.
func appendField(dst []byte, k, v string) []byte {
	if !httpguts.ValidHeaderFieldValue(v) {
		return nil
	}
	dst = append(dst, k...)
	dst = append(dst, ": "...)
	dst = append(dst, strings.Trim(v, " \t")...)
	return append(dst, "\r\n"...)
}

// appendRequestTarget appends the URL's request-uri as
// url.URL.RequestURI spells it, without building the string.
func appendRequestTarget(dst []byte, req *http.Request) []byte {
	u := req.URL
	n := len(dst)
	if u.Opaque != "" {
		if strings.HasPrefix(u.Opaque, "//") {
			dst = append(dst, u.Scheme...)
			dst = append(dst, ':')
		}
		dst = append(dst, u.Opaque...)
	} else {
		dst = append(dst, u.EscapedPath()...)
		if len(dst) == n {
			dst = append(dst, '/')
		}
	}
	if u.ForceQuery || u.RawQuery != "" {
		dst = append(dst, '?')
		dst = append(dst, u.RawQuery...)
	}
	return dst
}

func validMethod(m string) bool {
	if m == "" {
		return false
	}
	for i := range len(m) {
		if !tokenByte(m[i]) {
			return false
		}
	}
	return true
}

// fill reads more of the connection into the read buffer, compacting it
// first; a full buffer grows up to limit bytes.
func (c *h1Conn) fill(limit int) error {
	if c.r > 0 {
		c.w = copy(c.rbuf, c.rbuf[c.r:c.w])
		c.r = 0
	}
	if c.w == len(c.rbuf) {
		if len(c.rbuf) >= limit {
			return errHeadTooLarge
		}
		nb := make([]byte, min(2*len(c.rbuf), limit))
		copy(nb, c.rbuf[:c.w])
		c.rbuf = nb
	}
	n, err := c.nc.Read(c.rbuf[c.w:])
	c.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// readHead reads the next response head into c.head and advances past
// it. got reports whether any byte of it arrived (a reused connection
// that fails before that may have been closed while idle).
func (c *h1Conn) readHead() (got bool, err error) {
	from := 0
	for {
		n, next, err := headEnd(c.rbuf[c.r:c.w], from)
		if err != nil {
			return true, err
		}
		if n > 0 {
			if err := parseHead(c.rbuf[c.r:c.r+n], &c.head); err != nil {
				return true, err
			}
			c.r += n
			return true, nil
		}
		from = next
		if err := c.fill(maxHeadBytes); err != nil {
			if err == io.EOF && c.w > c.r {
				err = io.ErrUnexpectedEOF
			}
			return c.w > c.r, err
		}
	}
}

// readLine returns the next CRLF-terminated line, without its CRLF, of at
// most limit bytes. It is valid until the next read.
func (c *h1Conn) readLine(limit int) ([]byte, error) {
	for from := 0; ; {
		// from: bytes after c.r already scanned, so a long line arriving
		// in small pieces is scanned once.
		if i := indexLF(c.rbuf[c.r+from : c.w]); i >= 0 {
			i += from
			l := c.rbuf[c.r : c.r+i]
			if i == 0 || l[i-1] != '\r' {
				return nil, errBareLF
			}
			c.r += i + 1
			return l[:i-1], nil
		}
		from = c.w - c.r
		if from >= limit {
			return nil, errChunkSize
		}
		if err := c.fill(max(limit, len(c.rbuf))); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
}

func indexLF(b []byte) int {
	for i, c := range b {
		if c == '\n' {
			return i
		}
	}
	return -1
}

// read reads at most len(p) bytes of the body: buffered bytes first, else
// straight from the connection into p.
func (c *h1Conn) read(p []byte) (int, error) {
	if c.r < c.w {
		n := copy(p, c.rbuf[c.r:c.w])
		c.r += n
		return n, nil
	}
	return c.nc.Read(p)
}

// header fills c.hdr from the parsed head's fields: names canonicalised
// in place and interned, a single value reused while it is the same as
// the one this connection last saw for the name, so that a steady stream
// of like responses allocates no string. The value slices are never
// written after they are made (a client's header map may hold them while
// the connection carries the next exchange) and have no spare capacity,
// so appending to one copies it.
func (c *h1Conn) header() http.Header {
	h := c.hdr
	clear(h)
	repeated := false
	for i := range c.head.fields {
		f := &c.head.fields[i]
		canonicalInPlace(f.name)
		name := c.intern(f.name)
		if old, ok := h[name]; ok {
			// A cached value has no spare capacity: appending copies it.
			h[name], repeated = append(old, string(f.value)), true
			continue
		}
		if v, ok := c.vals[name]; ok && v[0] == string(f.value) {
			h[name] = v
			continue
		}
		v := []string{commonValue(f.value)}
		if len(c.vals) < h1MaxInterned {
			c.vals[name] = v
		} else if _, ok := c.vals[name]; ok {
			c.vals[name] = v
		}
		h[name] = v
	}
	if repeated {
		for k, v := range h {
			h[k] = slices.Clip(v)
		}
	}
	return h
}

// intern returns the string of a canonical field name: a common one, one
// this connection saw before, or a new one.
func (c *h1Conn) intern(b []byte) string {
	if s, ok := commonNames[string(b)]; ok {
		return s
	}
	if s, ok := c.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c.names) < h1MaxInterned {
		c.names[s] = s
	}
	return s
}

// commonValue returns v as a string, without allocating for a few values
// every connection sends.
func commonValue(v []byte) string {
	if s, ok := commonValues[string(v)]; ok {
		return s
	}
	return string(v)
}

var commonNames = func() map[string]string {
	m := make(map[string]string)
	for _, k := range [...]string{
		"Accept-Ranges", "Age", "Cache-Control", "Connection", "Content-Encoding",
		"Content-Language", "Content-Length", "Content-Type", "Date", "Etag",
		"Expires", "Keep-Alive", "Last-Modified", "Link", "Location", "Server",
		"Set-Cookie", "Strict-Transport-Security", "Trailer", "Transfer-Encoding",
		"Vary", "X-Content-Type-Options", "X-Frame-Options", "X-Request-Id",
	} {
		m[k] = k
	}
	return m
}()

var commonValues = func() map[string]string {
	m := make(map[string]string)
	for _, v := range [...]string{
		"0", "1", "2", "close", "keep-alive", "chunked", "gzip", "br", "zstd", "bytes",
		"no-cache", "no-store", "nosniff", "DENY", "SAMEORIGIN", "Accept-Encoding",
		"text/plain", "text/plain; charset=utf-8", "text/html", "text/html; charset=utf-8",
		"application/json", "application/json; charset=utf-8", "text/event-stream",
	} {
		m[v] = v
	}
	return m
}()

// Body states: reading, then released to the pool or closed, once.
const (
	bodyReading uint32 = iota
	bodyReleased
	bodyClosed
)

// h1Body is a response body on an h1Conn. Its Read belongs to one
// goroutine; Close may come from another (the idle timer): the state
// decides, once, whether the connection goes back to the pool (the body
// was read to its end) or is closed.
type h1Body struct {
	res   http.Response
	c     *h1Conn
	nc    net.Conn // c.nc, for a Close from another goroutine
	state atomic.Uint32
	mode  uint8
	left  int64 // bytes left in the body or the current chunk
	err   error // sticky
	stop  func() bool
	reuse bool
}

// Body framings.
const (
	bodyLength  uint8 = iota // Content-Length, left bytes to go
	bodyChunked              // chunked, left bytes of the current chunk
	bodyEOF                  // until the connection closes
)

func (b *h1Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := b.read(p)
	if err != nil {
		b.err = err
		if err == io.EOF {
			b.finish(b.reuse)
		} else {
			b.finish(false)
		}
	}
	return n, err
}

func (b *h1Body) read(p []byte) (int, error) {
	c := b.c
	switch b.mode {
	case bodyLength:
		if b.left == 0 {
			return 0, io.EOF
		}
		n, err := c.read(p[:min(int64(len(p)), b.left)])
		b.left -= int64(n)
		if b.left == 0 {
			return n, io.EOF
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	case bodyChunked:
		if b.left == 0 {
			l, err := c.readLine(maxChunkLine)
			if err != nil {
				return 0, err
			}
			if b.left, err = parseChunkSize(l); err != nil {
				return 0, err
			}
			if b.left == 0 {
				return 0, b.readTrailers()
			}
		}
		n, err := c.read(p[:min(int64(len(p)), b.left)])
		b.left -= int64(n)
		if b.left == 0 && err == nil {
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

// readTrailers reads the trailer section into res.Trailer and returns
// io.EOF, the end of the body.
func (b *h1Body) readTrailers() error {
	c := b.c
	size := 0
	for {
		l, err := c.readLine(maxHeadBytes - size)
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
		canonicalInPlace(f.name)
		name := c.intern(f.name)
		switch name {
		case "Content-Length", "Transfer-Encoding", "Trailer", "Host":
			return errTrailerName
		}
		if b.res.Trailer == nil {
			b.res.Trailer = make(http.Header)
		}
		b.res.Trailer[name] = append(b.res.Trailer[name], string(f.value))
	}
}

// Close ends the body: read to its end, the connection is pooled already;
// otherwise it is closed. It is safe from any goroutine.
func (b *h1Body) Close() error {
	if b.state.CompareAndSwap(bodyReading, bodyClosed) {
		b.nc.Close()
		b.stopContext()
	}
	return nil
}

// finish ends the body from the reading goroutine: the connection goes
// back to the pool when reuse says it can and no Close came first.
func (b *h1Body) finish(reuse bool) {
	if reuse && b.stopContext() && b.state.CompareAndSwap(bodyReading, bodyReleased) {
		b.c.pool.put(b.c)
		return
	}
	b.Close()
}

// stopContext stops the cancellation watch and reports whether it never
// ran (a watch that ran set a past deadline on the connection).
func (b *h1Body) stopContext() bool {
	stop := b.stop
	if stop == nil {
		return true
	}
	return stop()
}
