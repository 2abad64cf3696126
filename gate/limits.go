package gate

import (
	"errors"
	"io"
	"net/http"
)

// Limits bounds a host's requests. Zero fields mean no limit of the
// gate's own (the listener's limits still apply).
type Limits struct {
	// MaxURIBytes bounds the request target as received (path and
	// query); longer is 414.
	MaxURIBytes int
	// MaxHeaderCount bounds the header lines (Host included); more is
	// 431.
	MaxHeaderCount int
	// MaxHeaderBytes bounds the header names and values plus ": " and
	// CRLF per line; more is 431.
	MaxHeaderBytes int
	// MaxBodyBytes bounds the request body; a route may override it. A
	// larger Content-Length is 413 before anything reads the body; a body
	// of unknown length (chunked) is cut by a reader that fails with
	// [ErrBodyTooLarge] past the limit.
	MaxBodyBytes int64
}

// ErrBodyTooLarge is the read error of a body longer than its limit.
var ErrBodyTooLarge = errors.New("gate: request body too large")

// checkLimits returns 414, 431 or 0.
func checkLimits(l *Limits, r *http.Request) (int, string) {
	if l.MaxURIBytes > 0 && len(r.RequestURI) > l.MaxURIBytes {
		return http.StatusRequestURITooLong, "request target too long"
	}
	if l.MaxHeaderCount > 0 || l.MaxHeaderBytes > 0 {
		count, size := 1, len("Host: \r\n")+len(r.Host)
		for k, vs := range r.Header {
			count += len(vs)
			for _, v := range vs {
				size += len(k) + len(v) + 4
			}
		}
		if l.MaxHeaderCount > 0 && count > l.MaxHeaderCount {
			return http.StatusRequestHeaderFieldsTooLarge, "too many header lines"
		}
		if l.MaxHeaderBytes > 0 && size > l.MaxHeaderBytes {
			return http.StatusRequestHeaderFieldsTooLarge, "header bytes over limit"
		}
	}
	return 0, ""
}

// limitedBody cuts a body of unknown length at its limit.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrBodyTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n - int(-b.left), ErrBodyTooLarge
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
