package proxy

import (
	"bufio"
	"encoding/binary"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/zstd"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// Compression is a host's response compression. The zero value is off.
//
// A forwarded response is compressed when the client's Accept-Encoding
// takes one of the encodings, its content type is text-like, it has a body
// (not a HEAD, not 1xx, 204, 206 or 304, no Content-Range, not an upgrade),
// it is not encoded already, its Cache-Control has no no-transform, and a
// declared Content-Length is at least MinimumSize (a response of unknown
// length is compressed). The proxy's own answers are never compressed.
type Compression struct {
	Enabled bool
	// MinimumSize is the smallest declared length compressed, in bytes,
	// at most 1 MiB; 0 means 1 KiB.
	MinimumSize int64
	// Encodings is the order of preference among "gzip", "zstd" and "br"
	// when the client's q-values tie, and the encodings offered at all;
	// empty means gzip, zstd, br (the order of their CPU cost per byte
	// saved).
	Encodings []string
}

// DefaultMinimumSize is the smallest length compressed by default.
const DefaultMinimumSize = 1024

// encodingNames are the encodings a Compression may list, in the default
// order.
var encodingNames = [...]string{"gzip", "zstd", "br"}

// EncodingNames returns the names of the encodings, in the default order
// of preference: the names a config document uses.
func EncodingNames() []string { return encodingNames[:] }

type coding uint8

const (
	codingNone coding = iota
	codingGzip
	codingZstd
	codingBrotli
	codingCount
)

var codingValues = [codingCount][]string{nil, []string{"gzip"}[:1:1], []string{"zstd"}[:1:1], []string{"br"}[:1:1]}

// compressor is a compiled Compression.
type compressor struct {
	enabled bool
	min     int64
	order   []coding
}

func newCompressor(c Compression) (compressor, error) {
	if !c.Enabled {
		if c.MinimumSize != 0 || len(c.Encodings) != 0 {
			if err := checkCompression(c); err != nil {
				return compressor{}, err
			}
		}
		return compressor{}, nil
	}
	if err := checkCompression(c); err != nil {
		return compressor{}, err
	}
	cp := compressor{enabled: true, min: c.MinimumSize}
	if cp.min == 0 {
		cp.min = DefaultMinimumSize
	}
	for _, e := range c.Encodings {
		cp.order = append(cp.order, codingByName(e))
	}
	if len(cp.order) == 0 {
		cp.order = []coding{codingGzip, codingZstd, codingBrotli}
	}
	return cp, nil
}

// checkCompression reports every problem of a Compression, joined, each
// with a path relative to it.
func checkCompression(c Compression) error {
	var errs problem.List
	if c.MinimumSize < 0 || c.MinimumSize > 1<<20 {
		errs.Add(CodeCompressionMinimumSize, "minimumSize", strconv.FormatInt(c.MinimumSize, 10)+" is not 0 to 1048576 bytes")
	}
	seen := map[coding]bool{}
	for i, e := range c.Encodings {
		k := codingByName(e)
		switch {
		case k == codingNone:
			errs.Add(CodeCompressionEncodingUnknown, problem.Index("encodings", i), quote(e)+" is not one of "+strings.Join(encodingNames[:], ", "))
		case seen[k]:
			errs.Add(CodeCompressionEncodingDuplicate, problem.Index("encodings", i), quote(e)+" is listed twice")
		}
		seen[k] = true
	}
	return errs.Err()
}

// CheckCompression reports every problem of c, each a [ValidationError]
// with a path relative to c, joined, or nil.
func CheckCompression(c Compression) error { return checkCompression(c) }

func codingByName(s string) coding {
	switch s {
	case "gzip":
		return codingGzip
	case "zstd":
		return codingZstd
	case "br":
		return codingBrotli
	}
	return codingNone
}

// negotiate picks the encoding of the highest q-value in Accept-Encoding
// among order; ties go to the earlier in order; a q of 0 refuses. "*"
// covers the encodings not named; x-gzip is gzip.
func negotiate(values []string, order []coding) coding {
	var q [codingCount]int // thousandths; -1: not named
	for i := range q {
		q[i] = -1
	}
	star := -1
	for _, v := range values {
		for len(v) > 0 {
			var el string
			el, v, _ = strings.Cut(v, ",")
			name, params, _ := strings.Cut(el, ";")
			name = strings.Trim(name, " \t")
			qv, ok := qParam(params)
			if !ok {
				continue
			}
			switch {
			case name == "*":
				star = qv
			case equalFoldASCII(name, "gzip") || equalFoldASCII(name, "x-gzip"):
				q[codingGzip] = max(q[codingGzip], qv)
			case equalFoldASCII(name, "zstd"):
				q[codingZstd] = max(q[codingZstd], qv)
			case equalFoldASCII(name, "br"):
				q[codingBrotli] = max(q[codingBrotli], qv)
			}
		}
	}
	best, pick := 0, codingNone
	for _, c := range order {
		qc := q[c]
		if qc < 0 {
			qc = max(star, 0)
		}
		if qc > best {
			best, pick = qc, c
		}
	}
	return pick
}

// equalFoldASCII reports whether s equals the lower-case token t with ASCII
// case ignored, as RFC 9110 compares tokens (strings.EqualFold also folds
// U+017F to s and U+212A to k).
func equalFoldASCII(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != t[i] {
			return false
		}
	}
	return true
}

// qParam reads the q parameter of an Accept-Encoding element, in
// thousandths; 1000 when absent. ok is false for a malformed q-value (the
// element is ignored).
func qParam(params string) (int, bool) {
	for len(params) > 0 {
		var p string
		p, params, _ = strings.Cut(params, ";")
		k, v, _ := strings.Cut(p, "=")
		if k = strings.Trim(k, " \t"); k != "q" && k != "Q" {
			continue
		}
		return parseQ(strings.Trim(v, " \t"))
	}
	return 1000, true
}

// parseQ parses an RFC 9110 qvalue: 0[.ddd] or 1[.000].
func parseQ(s string) (int, bool) {
	if len(s) == 0 || len(s) > 5 || (s[0] != '0' && s[0] != '1') {
		return 0, false
	}
	n := int(s[0]-'0') * 1000
	if len(s) == 1 {
		return n, true
	}
	if s[1] != '.' {
		return 0, false
	}
	scale := 100
	for i := 2; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n += int(c-'0') * scale
		scale /= 10
	}
	if n > 1000 {
		return 0, false
	}
	return n, true
}

// choose decides whether a response is compressed, and how. varies
// reports a response whose coding Accept-Encoding decides, compressed or
// not: its answer varies on Accept-Encoding either way, so that a cache
// does not hand the identity answer to a client that asked for gzip, or
// the reverse.
func (cp *compressor) choose(r *http.Request, res *http.Response, upgrade bool) (c coding, varies bool) {
	if !cp.enabled || upgrade || r.Method == http.MethodHead || r.Method == http.MethodConnect {
		return codingNone, false
	}
	switch s := res.StatusCode; {
	case s < 200, s == http.StatusNoContent, s == http.StatusPartialContent, s == http.StatusNotModified:
		return codingNone, false
	}
	h := res.Header
	if len(h["Content-Encoding"]) > 0 || len(h["Content-Range"]) > 0 ||
		containsToken(h["Cache-Control"], "no-transform") || !compressibleType(h["Content-Type"]) {
		return codingNone, false
	}
	if res.ContentLength >= 0 && res.ContentLength < cp.min {
		return codingNone, false
	}
	ae := r.Header["Accept-Encoding"]
	if len(ae) == 0 {
		return codingNone, true
	}
	return negotiate(ae, cp.order), true
}

// varyOnAcceptEncoding adds Accept-Encoding to the Vary of h, unless it
// is there or Vary is "*".
func varyOnAcceptEncoding(h http.Header) {
	if v := h["Vary"]; len(v) == 0 {
		h["Vary"] = acceptEncoding
	} else if !containsToken(v, varyAcceptEnc) && !containsToken(v, "*") {
		h["Vary"] = append(v[:len(v):len(v)], varyAcceptEnc)
	}
}

// compressibleType reports whether a content type is text-like: text/*
// except text/event-stream, JSON, JavaScript, XML and their +json/+xml
// kinds, SVG, WebAssembly and the uncompressed font formats.
func compressibleType(v []string) bool {
	if len(v) == 0 {
		return false
	}
	t := v[0]
	if i := strings.IndexByte(t, ';'); i >= 0 {
		t = t[:i]
	}
	t = strings.Trim(t, " \t")
	if len(t) > 64 {
		return false
	}
	var buf [64]byte
	lt := buf[:len(t)]
	for i := 0; i < len(t); i++ {
		c := t[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lt[i] = c
	}
	switch s := string(lt); {
	case strings.HasPrefix(s, "text/"):
		return s != "text/event-stream"
	case strings.HasSuffix(s, "+json"), strings.HasSuffix(s, "+xml"):
		return true
	default:
		switch s {
		case "application/json", "application/javascript", "application/x-javascript",
			"application/ecmascript", "application/xml", "image/svg+xml", "application/wasm",
			"font/ttf", "font/otf", "application/vnd.ms-fontobject", "application/x-font-ttf",
			"application/manifest+json", "application/xhtml+xml", "image/x-icon", "image/bmp":
			return true
		}
	}
	return false
}

// representationHeaders changes the response header for a compressed
// body: the encoding, a weak ETag, and no length, ranges or digests of
// the identity body (Vary is varyOnAcceptEncoding's).
func representationHeaders(h http.Header, c coding) {
	for _, k := range [...]string{"Content-Length", "Content-Md5", "Accept-Ranges", "Content-Digest", "Digest", "Repr-Digest"} {
		delete(h, k)
	}
	h["Content-Encoding"] = codingValues[c]
	if et := h["Etag"]; len(et) == 1 && strings.HasPrefix(et[0], `"`) {
		h["Etag"] = []string{"W/" + et[0]}
	}
}

// encoder is a compressing writer.
type encoder interface {
	io.WriteCloser
	Flush() error
	Reset(io.Writer)
}

type zstdEncoder struct{ *zstd.Encoder }

func (z zstdEncoder) Reset(w io.Writer) { z.Encoder.Reset(w) }

// outBuffer is the size of a compressWriter's output buffer: net/http's
// buffer of a connection, so a body that compresses to less reaches the
// connection in one write.
const outBuffer = 4 << 10

// compressWriter is a pooled encoder with the buffer its output gathers
// in. An encoder writes every few hundred bytes it produces (gzip's
// bit writer, 248 bytes); each such write would go through the
// ResponseWriter and every wrapper of it (a write deadline armed each
// time), and out of net/http's 2 KiB buffer as a chunk of its own.
// Gathered, a 16 KiB page that compresses to 2 to 4 KB reaches the
// ResponseWriter in one or two writes.
type compressWriter struct {
	enc encoder
	out *bufio.Writer
}

func newCompressWriter(enc func(io.Writer) encoder) any {
	out := bufio.NewWriterSize(io.Discard, outBuffer)
	return &compressWriter{enc: enc(out), out: out}
}

// Write compresses p.
func (c *compressWriter) Write(p []byte) (int, error) { return c.enc.Write(p) }

// Flush sends everything written so far: the encoder's pending output,
// ended at a byte boundary, then the buffer.
func (c *compressWriter) Flush() error {
	if err := c.enc.Flush(); err != nil {
		return err
	}
	return c.out.Flush()
}

// Close ends the compressed stream and sends the rest.
func (c *compressWriter) Close() error {
	if err := c.enc.Close(); err != nil {
		return err
	}
	return c.out.Flush()
}

var encoderPools = [codingCount]sync.Pool{
	codingGzip: {New: func() any {
		return newCompressWriter(func(out io.Writer) encoder {
			return &gzipEncoder{out: out, in: make([]byte, 0, gzipGather)}
		})
	}},
	codingZstd: {New: func() any {
		return newCompressWriter(func(out io.Writer) encoder {
			w, _ := zstd.NewWriter(out, zstd.WithEncoderLevel(zstd.SpeedFastest),
				zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true), zstd.WithWindowSize(1<<18))
			return zstdEncoder{w}
		})
	}},
	codingBrotli: {New: func() any {
		return newCompressWriter(func(out io.Writer) encoder { return brotli.NewWriterLevel(out, brotli.BestSpeed) })
	}},
}

// getEncoder returns a pooled compressWriter of coding c that writes to w.
func getEncoder(c coding, w io.Writer) *compressWriter {
	e := encoderPools[c].Get().(*compressWriter)
	e.out.Reset(w)
	e.enc.Reset(e.out)
	return e
}

// putEncoder puts e back in its pool, holding nothing of its response
// (its encoder writes only to its buffer; getEncoder resets both).
func putEncoder(c coding, e *compressWriter) {
	if g, ok := e.enc.(*gzipEncoder); ok {
		g.release()
	}
	e.out.Reset(io.Discard)
	encoderPools[c].Put(e)
}

// gzipGather is the most of a body a gzipEncoder gathers before it
// compresses: a page of up to 32 KiB is compressed in one call.
const gzipGather = 32 << 10

// gzipHeader is the header of every gzip stream: deflate, no name or
// time, the fastest level (XFL 4), unknown OS; klauspost's gzip.Writer
// at BestSpeed writes the same.
var gzipHeader = [10]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255}

// flatePool holds the level 1 deflate writers of the bodies a
// gzipEncoder streams (about 500 KB each).
var flatePool = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

// gzipEncoder writes gzip, choosing its deflate encoder by the body (see
// "Compression" in the package doc). It gathers the body until it is
// flushed or outgrows gzipGather; a body that ends first is compressed at
// Close by flate.StatelessDeflate, whose hash table is on the stack and so
// in the cache. Any other body goes through a pooled level 1 flate.Writer
// from then on, as a stream.
type gzipEncoder struct {
	out     io.Writer
	in      []byte        // the body so far, until fw is taken
	fw      *flate.Writer // from flatePool once the body is streamed
	digest  uint32        // CRC-32 of the body
	size    uint32        // length of the body, modulo 2^32
	trailer [8]byte
}

func (g *gzipEncoder) Write(p []byte) (int, error) {
	g.digest = crc32.Update(g.digest, crc32.IEEETable, p)
	g.size += uint32(len(p))
	if g.fw == nil {
		if len(p) <= cap(g.in)-len(g.in) {
			g.in = append(g.in, p...)
			return len(p), nil
		}
		if err := g.stream(); err != nil {
			return 0, err
		}
	}
	return g.fw.Write(p)
}

// stream starts the stream and hands what was gathered to a level 1
// writer.
func (g *gzipEncoder) stream() error {
	if _, err := g.out.Write(gzipHeader[:]); err != nil {
		return err
	}
	g.fw = flatePool.Get().(*flate.Writer)
	g.fw.Reset(g.out)
	_, err := g.fw.Write(g.in)
	g.in = g.in[:0]
	return err
}

// Flush streams the body from now on and sends what was written so far,
// ended at a byte boundary.
func (g *gzipEncoder) Flush() error {
	if g.fw == nil {
		if err := g.stream(); err != nil {
			return err
		}
	}
	return g.fw.Flush()
}

// Close ends the deflate stream and writes the trailer.
func (g *gzipEncoder) Close() error {
	var err error
	if g.fw == nil {
		if _, err = g.out.Write(gzipHeader[:]); err == nil {
			err = flate.StatelessDeflate(g.out, g.in, true, nil)
		}
		g.in = g.in[:0]
	} else {
		err = g.fw.Close()
		g.release()
	}
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(g.trailer[:4], g.digest)
	binary.LittleEndian.PutUint32(g.trailer[4:], g.size)
	_, err = g.out.Write(g.trailer[:])
	return err
}

// Reset starts a new stream to w.
func (g *gzipEncoder) Reset(w io.Writer) {
	g.release()
	*g = gzipEncoder{out: w, in: g.in[:0]}
}

// release puts the level 1 writer back in its pool, if g has one.
func (g *gzipEncoder) release() {
	if g.fw != nil {
		flatePool.Put(g.fw)
		g.fw = nil
	}
}
