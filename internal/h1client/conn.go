package h1client

import (
	"io"
	"net"
	"net/http"
	"slices"
	"time"
)

// conn is one HTTP/1.1 connection of a [Client], plain or TLS. It is
// used by one exchange at a time, from the caller's goroutine: the
// request is written and the response read without goroutines of its
// own. Its buffers and the caches of field names and values live as long
// as the connection.
type conn struct {
	nc     net.Conn
	raw    *rawConn // plain TCP: a body-less request is written from its read's wait
	client *Client
	key    Destination
	// abort makes a blocked read or write return: it runs when the
	// exchange's context ends (made once, so watching costs no closure).
	abort    func()
	deadline bool      // a deadline may be set on nc
	used     bool      // carried an exchange before (a stale keep-alive may fail)
	idle     time.Time // when it went idle

	rbuf []byte // read buffer: rbuf[r:w] is unread
	r, w int
	wbuf []byte // the request head, and a small body with it

	head head
	keys []reqField // scratch for sorting the request's fields by name

	names map[string]string   // field names seen, interned
	vals  map[string][]string // the last single value per field name
	// last is the previous head's fields in order, when their names were
	// all different (see header); at most maxInterned.
	last []reqField
}

// reqField is a request field of a head being written: its name and values.
type reqField struct {
	name string
	vals []string
}

// Sizes of a connection's buffers, and bounds on what it keeps.
const (
	readBuffer  = 8 << 10
	writeBuffer = 4 << 10
	keepBuffer  = 64 << 10 // a grown buffer over this is not kept
	maxInterned = 64       // names and values remembered per connection
)

func newConn(nc net.Conn, cl *Client, key Destination) *conn {
	c := &conn{
		nc: nc, client: cl, key: key,
		rbuf:  make([]byte, readBuffer),
		wbuf:  make([]byte, 0, writeBuffer),
		names: make(map[string]string, 16),
		vals:  make(map[string][]string, 16),
	}
	c.raw = newRawConn(nc)
	c.abort = func() { nc.SetDeadline(aLongTimeAgo) }
	return c
}

// aLongTimeAgo is a deadline that makes blocked reads and writes return.
var aLongTimeAgo = time.Unix(1, 0)

// fill reads more of the connection into the read buffer, compacting it
// first; a full buffer grows up to limit bytes.
func (c *conn) fill(limit int) error {
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
func (c *conn) readHead() (got bool, err error) {
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
		if err := c.fill(MaxHeadBytes); err != nil {
			if err == io.EOF && c.w > c.r {
				err = io.ErrUnexpectedEOF
			}
			return c.w > c.r, err
		}
	}
}

// readLine returns the next CRLF-terminated line, without its CRLF; a
// line of more than limit bytes with its CRLF is errChunkSize, however it
// arrives. It is valid until the next read.
func (c *conn) readLine(limit int) ([]byte, error) {
	for from := 0; ; {
		// from: bytes after c.r already scanned, so a long line arriving
		// in small pieces is scanned once.
		if i := indexLF(c.rbuf[c.r+from : c.w]); i >= 0 {
			i += from
			if i >= limit {
				return nil, errChunkSize
			}
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
func (c *conn) read(p []byte) (int, error) {
	if c.r < c.w {
		n := copy(p, c.rbuf[c.r:c.w])
		c.r += n
		return n, nil
	}
	return c.nc.Read(p)
}

// header fills h from the parsed head's fields: names canonicalised in
// place and interned, a single value reused while it is the same as the
// one this connection last saw for the name, so that a steady stream of
// like responses allocates no string. The value slices are never written
// after they are made (an earlier exchange's header map may hold them
// while the connection carries the next) and have no spare capacity, so
// appending to one copies it.
//
// While the fields come as the previous head's did (same names in the
// same order, each name once), a field whose name is byte for byte the
// previous one's at its place needs neither canonicalising (a canonical
// name is its own canonical form) nor interning, and cannot be in h yet;
// with the same value too, the previous slice is its value. So a steady
// stream of like responses costs one map write per field, and none when h
// still holds the fields header last made (see intact).
func (c *conn) header(h http.Header) http.Header {
	if c.intact(h) {
		for i := range c.last {
			l, value := &c.last[i], c.head.fields[i].value
			if l.vals[0] != string(value) {
				l.vals = c.newValue(l.name, value)
				h[l.name] = l.vals
			}
		}
		return h
	}
	clear(h)
	repeated := false
	inOrder := true // fields so far are c.last's, in its order
	last := c.last
	c.last = c.last[:0]
	for i := range c.head.fields {
		f := &c.head.fields[i]
		var name string
		if inOrder && i < len(last) && last[i].name == string(f.name) {
			name = last[i].name
			if v := last[i].vals; v[0] == string(f.value) {
				h[name] = v
				c.remember(name, v)
				continue
			}
		} else {
			inOrder = false
			canonicalInPlace(f.name)
			name = c.intern(f.name)
			if old, ok := h[name]; ok {
				// A cached value has no spare capacity: appending copies it.
				h[name], repeated = append(old, string(f.value)), true
				continue
			}
			if v, ok := c.vals[name]; ok && v[0] == string(f.value) {
				h[name] = v
				c.remember(name, v)
				continue
			}
		}
		v := c.newValue(name, f.value)
		h[name] = v
		c.remember(name, v)
	}
	if repeated {
		c.last = c.last[:0]
		for k, v := range h {
			h[k] = slices.Clip(v)
		}
	}
	return h
}

// intact reports whether h holds exactly the fields of c.last (each with
// the very slice header made for it), while the head has the same names in
// the same order: then only the values that changed need writing. A map
// the caller changed since (a field deleted, added or given another
// slice), or another exchange's map, does not.
func (c *conn) intact(h http.Header) bool {
	if len(h) != len(c.last) || len(c.head.fields) != len(c.last) {
		return false
	}
	for i := range c.last {
		l := &c.last[i]
		if l.name != string(c.head.fields[i].name) {
			return false
		}
		if v, ok := h[l.name]; !ok || len(v) != 1 || &v[0] != &l.vals[0] {
			return false
		}
	}
	return true
}

// newValue returns a new value slice for a field, and remembers it for
// the name while there is room.
func (c *conn) newValue(name string, value []byte) []string {
	v := []string{commonValue(value)}
	if len(c.vals) < maxInterned {
		c.vals[name] = v
	} else if _, ok := c.vals[name]; ok {
		c.vals[name] = v
	}
	return v
}

// remember appends a field to c.last, the fields header compares the
// next head's with.
func (c *conn) remember(name string, v []string) {
	if len(c.last) < maxInterned {
		c.last = append(c.last, reqField{name, v})
	}
}

// intern returns the string of a canonical field name: a common one, one
// this connection saw before, or a new one.
func (c *conn) intern(b []byte) string {
	if s, ok := commonNames[string(b)]; ok {
		return s
	}
	if s, ok := c.names[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c.names) < maxInterned {
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
