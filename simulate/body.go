package simulate

import (
	"io"
	"strconv"
	"strings"
)

// A probe's body is generated as it is sent: Content-Length: N sends N
// bytes of "x" without holding them, and the in-memory connection makes
// the client wait while the server reads nothing (see memPipe). So a
// declared length costs what the server reads: net/http reads at most
// 256 KiB of a body its handler left unread before it closes the
// connection, HTTP/2 and HTTP/3 at most their flow-control windows before
// the server resets the stream. The decisions that depend on a body's
// length (the gate's 413, the framing guard) are taken on the declared
// length, as in production.

// fill is what a probe's body is made of.
const fill = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

// bodyReader reads n bytes of fill, then io.EOF.
type bodyReader struct{ left int64 }

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n := 0
	for n < len(p) {
		n += copy(p[n:], fill)
	}
	b.left -= int64(n)
	return n, nil
}

// WriteTo writes the bytes to w in pieces of 8 KiB, so copying a body
// takes one buffer of that size.
func (b *bodyReader) WriteTo(w io.Writer) (int64, error) {
	buf := make([]byte, min(b.left, 8<<10))
	for i := 0; i < len(buf); i += copy(buf[i:], fill) {
	}
	var sent int64
	for b.left > 0 {
		n, err := w.Write(buf[:min(b.left, int64(len(buf)))])
		sent += int64(n)
		b.left -= int64(n)
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// wireBody returns the bytes of a probe's body as HTTP/1.1 sends them:
// n bytes as they are, or, chunked, one chunk of n bytes (none when n is
// 0) and the last chunk. It returns nil for no body.
func wireBody(n int64, chunked bool) io.Reader {
	switch {
	case !chunked && n == 0:
		return nil
	case !chunked:
		return &bodyReader{left: n}
	case n == 0:
		return strings.NewReader("0\r\n\r\n")
	}
	return io.MultiReader(strings.NewReader(strconv.FormatInt(n, 16)+"\r\n"), &bodyReader{left: n}, strings.NewReader("\r\n0\r\n\r\n"))
}
