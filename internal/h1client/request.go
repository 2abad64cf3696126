package h1client

import (
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
)

// Request is an outgoing request as its caller prepared it: the head's
// parts and a body of known length. [Client.Do] reads it only until it
// returns and writes the head byte for byte as net/http's Request.Write
// does: the request line, Host, User-Agent, the body's Content-Length,
// then the other fields in sorted order with their values trimmed.
// Hop-by-hop fields are the caller's to remove; Transfer-Encoding and
// Trailer fields are never written (a Request has no trailers).
type Request struct {
	// Method is a token; "" means GET.
	Method string
	// URL's request target is written as url.URL.RequestURI spells it
	// (for CONNECT with no path, as net/http does: Opaque, or Host).
	URL *url.URL
	// Host is the Host field; "" means URL.Host. It is sent in punycode;
	// a Host that is not a valid field value is sent empty, and an IPv6
	// zone is removed, as net/http does.
	Host string
	// Header holds the fields. An absent User-Agent is sent as
	// "Go-http-client/1.1", one whose first value is "" (or a nil one)
	// is not sent, as net/http does.
	Header http.Header
	// Body, when not nil, is ContentLength bytes (more than 0) to send
	// after the head. Do reads it and never closes it.
	Body io.Reader
	// ContentLength is the length of Body.
	ContentLength int64
	// ConnectBy, when not zero, is when a connection dialed for the
	// request gives up, if Config.ConnectTimeout has not ended it first:
	// the caller's bound on all the connects of its retries.
	ConnectBy time.Time
	// Got1xx, when not nil, is called with each informational head (1xx
	// other than 101) before the final one; an error fails the exchange.
	// The header map is valid only during the call and may be modified.
	Got1xx func(code int, h textproto.MIMEHeader) error
}

// RequestError reports a request the client refuses to write, for what
// it holds, before writing any of it: the refusals of net/http's client
// (a method that is not a token, a field name that is not a token, a
// field value or a target with a control character, a Host whose IDNA
// conversion fails).
type RequestError struct{ msg string }

func (e *RequestError) Error() string { return "h1client: " + e.msg }

var (
	errMethod      = &RequestError{"invalid method"}
	errBadName     = &RequestError{"invalid header field name"}
	errBadValue    = &RequestError{"invalid header field value"}
	errTargetCTL   = &RequestError{"control character in the request target"}
	errHostIDNA    = &RequestError{"Host is not a valid international domain name"}
	errBodyLength  = &RequestError{"a body without a positive ContentLength"}
	errUnsupported = &RequestError{"Expect: 100-continue or an upgrade (see Carries)"}
)

// Carries reports whether the client can send a request with header h:
// not an upgrade (Upgrade) and not a request that waits for 100 Continue
// before its body. Those go with another client.
func Carries(h http.Header) bool {
	if h["Upgrade"] != nil {
		return false
	}
	for _, v := range h["Expect"] {
		if hasToken([]byte(v), "100-continue") {
			return false
		}
	}
	return true
}

// appendHead appends req's head to dst, or refuses req.
func (c *conn) appendHead(dst []byte, req *Request) ([]byte, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	if !httpguts.ValidHeaderFieldName(method) {
		return dst, errMethod
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	host, err := httpguts.PunycodeHostPort(host)
	if err != nil {
		return dst, errHostIDNA
	}
	if !httpguts.ValidHostHeader(host) {
		host = "" // net/http sends an empty Host rather than an altered one
	}
	host = removeZone(host)
	dst = append(dst, method...)
	dst = append(dst, ' ')
	n := len(dst)
	dst = appendRequestTarget(dst, method, host, req.URL)
	for _, b := range dst[n:] {
		if b < ' ' || b == 0x7f {
			return dst, errTargetCTL
		}
	}
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\n"...)
	c.keys = c.keys[:0]
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return dst, errBadName
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return dst, errBadValue
			}
		}
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		}
		c.keys = append(c.keys, reqField{k, vv})
	}
	if ua, ok := req.Header["User-Agent"]; !ok {
		dst = append(dst, "User-Agent: Go-http-client/1.1\r\n"...)
	} else if len(ua) > 0 && ua[0] != "" {
		dst = appendField(dst, "User-Agent", ua[0])
	}
	switch {
	case req.Body != nil:
		dst = append(dst, "Content-Length: "...)
		dst = strconv.AppendInt(dst, req.ContentLength, 10)
		dst = append(dst, "\r\n"...)
	case method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch:
		dst = append(dst, "Content-Length: 0\r\n"...)
	}
	slices.SortFunc(c.keys, func(a, b reqField) int { return strings.Compare(a.name, b.name) })
	for i := range c.keys {
		f := &c.keys[i]
		for _, v := range f.vals {
			dst = appendField(dst, f.name, v)
		}
		*f = reqField{} // the scratch holds nothing of the request
	}
	return append(dst, "\r\n"...), nil
}

// appendField appends "k: v\r\n" with v trimmed of spaces and tabs.
func appendField(dst []byte, k, v string) []byte {
	dst = append(dst, k...)
	dst = append(dst, ": "...)
	if n := len(v); n > 0 && (space(v[0]) || space(v[n-1])) {
		v = strings.Trim(v, " \t")
	}
	dst = append(dst, v...)
	return append(dst, "\r\n"...)
}

func space(b byte) bool { return b == ' ' || b == '\t' }

// appendRequestTarget appends the URL's request-uri as
// url.URL.RequestURI spells it, without building the string; for CONNECT
// without a path, the Opaque or the host, as net/http writes it.
func appendRequestTarget(dst []byte, method, host string, u *url.URL) []byte {
	if method == http.MethodConnect && u.Path == "" {
		if u.Opaque != "" {
			return append(dst, u.Opaque...)
		}
		return append(dst, host...)
	}
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

// removeZone removes an IPv6 zone from a bracketed host, as net/http
// does (RFC 6874: a zone never leaves the host).
func removeZone(host string) string {
	if !strings.HasPrefix(host, "[") {
		return host
	}
	i := strings.LastIndexByte(host, ']')
	if i < 0 {
		return host
	}
	j := strings.LastIndexByte(host[:i], '%')
	if j < 0 {
		return host
	}
	return host[:j] + host[i:]
}

// writeRequest writes the head and the body of its Content-Length.
// bodyErr is the body's own failure (the caller's); err the connection's.
func (c *conn) writeRequest(req *Request, head []byte) (bodyErr, err error) {
	body := req.Body
	if body == nil {
		_, err = c.nc.Write(head)
		return nil, err
	}
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
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
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
	return &LengthError{n: n, err: err}
}

// LengthError reports a request body that ended, or failed, before its
// ContentLength: the caller's body, not the connection, failed.
type LengthError struct {
	n   int64
	err error
}

func (e *LengthError) Error() string {
	return "h1client: request body shorter than its Content-Length " + strconv.FormatInt(e.n, 10) + ": " + e.err.Error()
}

func (e *LengthError) Unwrap() error { return e.err }
