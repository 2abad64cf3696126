package listenlimits

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// How a stream ends for net/http's server, in reference.
const (
	endEOF      = "eof"      // at a request boundary
	endBroken   = "broken"   // net/http refuses the next request and closes
	endClosed   = "closed"   // net/http closes after the last request served
	endConflict = "conflict" // the next request has a forbidden framing
	endTunnel   = "tunnel"   // the next request turns the stream into something else
)

type outcome struct {
	served int    // requests read whole, bodies included
	end    int    // offset just after the last of them
	last   string // one of the end* values
}

// countingReader counts what bufio takes from the stream, to find offsets.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// reference follows stream as net/http's server reads it: http.ReadRequest
// in a loop on one bufio.Reader, each body read whole, with the checks
// net/http's conn.readRequest and conn.serve add (version, Host, header
// names and values, Expect, the CR LF tolerance after a POST). It never
// uses the framer. A request whose head net/textproto reads with both
// Content-Length and Transfer-Encoding (or Transfer-Encoding on HTTP/1.0)
// is a conflict. With follow false, a request with Upgrade or CONNECT ends
// the stream as a tunnel (the framer has no word of hijacks); with follow
// true it is an ordinary request (no handler hijacked it).
func reference(stream []byte, follow bool) outcome {
	cr := &countingReader{r: bytes.NewReader(stream)}
	br := bufio.NewReader(cr)
	at := func() int { return cr.n - br.Buffered() }
	var o outcome
	lastMethod := ""
	for {
		if lastMethod == "POST" {
			peek, _ := br.Peek(4)
			n := 0
			for n < len(peek) && (peek[n] == '\r' || peek[n] == '\n') {
				n++
			}
			_, _ = br.Discard(n)
		}
		if _, err := br.Peek(1); err != nil {
			o.last = endEOF
			return o
		}
		start := at()
		req, err := http.ReadRequest(br)
		if err != nil {
			o.last = endBroken
			return o
		}
		// The head once more, as net/textproto reads it, before net/http
		// drops Host, Content-Length and Transfer-Encoding.
		tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(stream[start:])))
		_, _ = tp.ReadLine()
		h, _ := tp.ReadMIMEHeader()
		if !serverTakes(req, h["Host"]) {
			o.last = endBroken
			return o
		}
		if req.ProtoMajor == 2 {
			o.last = endTunnel
			return o
		}
		_, te := h["Transfer-Encoding"]
		_, cl := h["Content-Length"]
		if te && (cl || req.ProtoMinor == 0) {
			o.last = endConflict
			return o
		}
		if !follow && (req.Method == "CONNECT" || h["Upgrade"] != nil) {
			o.last = endTunnel
			return o
		}
		if e := req.Header.Get("Expect"); e != "" && !strings.EqualFold(e, "100-continue") {
			o.last = endClosed // 417, and close
			return o
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			o.last = endBroken
			return o
		}
		o.served++
		o.end = at()
		if req.Close {
			o.last = endClosed
			return o
		}
		lastMethod = req.Method
	}
}

// serverTakes reports whether net/http's server goes on with a request
// http.ReadRequest returned, whose head had the Host lines hosts
// (server.go, conn.readRequest).
func serverTakes(req *http.Request, hosts []string) bool {
	isH2Upgrade := req.Method == "PRI" && len(req.Header) == 0 && len(hosts) == 0 && req.URL.Path == "*" && req.Proto == "HTTP/2.0"
	if req.ProtoMajor != 1 && (req.ProtoMajor != 2 || req.ProtoMinor != 0 || req.Method != "PRI" || req.RequestURI != "*") {
		return false
	}
	if len(hosts) > 1 {
		return false // http.ReadRequest refuses them before it drops Host
	}
	if req.ProtoAtLeast(1, 1) && len(hosts) == 0 && !isH2Upgrade && req.Method != "CONNECT" {
		return false
	}
	if len(hosts) == 1 && !httpguts.ValidHostHeader(hosts[0]) {
		return false
	}
	for k, vv := range req.Header {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// runFramer runs a framer over a copy of stream, in reads whose sizes
// cut picks (0: the whole stream in one read), and returns the bytes as
// the framer left them.
func runFramer(stream []byte, cut uint8, follow bool) ([]byte, framer) {
	out := bytes.Clone(stream)
	var f framer
	x := uint32(cut)*2654435761 | 1
	for rest := out; len(rest) > 0; {
		n := len(rest)
		if cut != 0 {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			n = min(n, 1+int(x%uint32(cut)))
		}
		f.scan(rest[:n], follow)
		rest = rest[n:]
	}
	return out, f
}

const (
	get       = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
	chunkPost = "POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nX-Sum: 1\r\n\r\n"
	clPost    = "POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"
)

var framingSeeds = []string{
	"",
	get + get,
	get + chunkPost + clPost + get,
	"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + get,
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + get,
	"POST / HTTP/1.1\r\nHost: x\r\ntransfer-encoding: Chunked\r\ncontent-length: 0\r\n\r\n0\r\n\r\n" + get,
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
	"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n0\r\n\r\n" + get,
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding:\r\n chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + get,
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n 3\r\n\r\nabc" + get,
	"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc\r\n\r\n" + get,
	"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nA \r\n0123456789\r\n0\r\n\r\n" + get,
	"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n\x81\x05hello" + get,
	"GET / HTTP/1.1\r\nHost: x\r\nUpgrade-Insecure-Requests: 1\r\n\r\n" + get,
	"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n\x16\x03\x01",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04",
	"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
	"GET / HTTP/1.1\nHost: x\n\n" + get,
	"GET / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok" + get,
}

func FuzzFraming(f *testing.F) {
	for i, s := range framingSeeds {
		f.Add([]byte(s), uint8(i), i%2 == 0)
	}
	f.Fuzz(checkFraming)
}

// fragments are the words FuzzFramingWords builds streams of: the pieces
// of requests, in the spellings net/http accepts and a few it refuses.
var fragments = []string{
	"GET", "POST", "CONNECT", "PRI", "X", " ", "/", "*", "x:443",
	" HTTP/1.1", " HTTP/1.0", " HTTP/2.0", " HTTP/1.9", " HTTP/0.9",
	"\r\n", "\n", "\r", "\t", ":", ";", "0", "5", "a", "F", "10", "ffffffffffffffff",
	"Host: x", "Content-Length: ", "content-length:", "CONTENT-LENGTH :",
	"Transfer-Encoding: ", "transfer-encoding:", "Transfer-Encoding : ", "Transfer_Encoding: ",
	"chunked", "Chunked", "CHUNKED", "identity", "gzip, chunked",
	"Upgrade: websocket", "Upgrade-Insecure-Requests: 1", "Connection: keep-alive", "Connection: close",
	"Expect: 100-continue", "Expect: x", "X-A: b", "Trailer: X-S",
	"hello", "\x16\x03\x01", "\x00", "\x81\x05",
}

// FuzzFramingWords runs the checks of FuzzFraming on streams made of
// fragments, where byte random mutations rarely form a valid request.
func FuzzFramingWords(f *testing.F) {
	index := map[string]byte{}
	for i, s := range fragments {
		index[s] = byte(i)
	}
	words := func(ws ...string) []byte {
		var b []byte
		for _, w := range ws {
			i, ok := index[w]
			if !ok {
				f.Fatalf("no fragment %q", w)
			}
			b = append(b, i)
		}
		return b
	}
	f.Add(words("GET", " ", "/", " HTTP/1.1", "\r\n", "Host: x", "\r\n", "\r\n"), uint8(3), false)
	f.Add(words("POST", " ", "/", " HTTP/1.1", "\r\n", "Host: x", "\r\n", "Transfer-Encoding: ", "chunked", "\r\n", "\r\n",
		"5", "\r\n", "hello", "\r\n", "0", "\r\n", "X-A: b", "\r\n", "\r\n",
		"GET", " ", "/", " HTTP/1.1", "\r\n", "Host: x", "\r\n", "\r\n"), uint8(9), true)
	f.Add(words("CONNECT", " ", "x:443", " HTTP/1.1", "\r\n", "Host: x", "\r\n", "\r\n",
		"GET", " ", "/", " HTTP/1.1", "\r\n", "Host: x", "\r\n", "\r\n"), uint8(1), false)
	f.Fuzz(func(t *testing.T, ws []byte, cut uint8, follow bool) {
		var stream []byte
		for _, w := range ws {
			stream = append(stream, fragments[int(w)%len(fragments)]...)
		}
		checkFraming(t, stream, cut, follow)
	})
}

// checkFraming runs the framer over stream, in reads cut picks, and
// compares what it makes of it with reference.
func checkFraming(t *testing.T, stream []byte, cut uint8, follow bool) {
	whole, fw := runFramer(stream, 0, follow)
	out, fr := runFramer(stream, cut, follow)
	if !bytes.Equal(whole, out) || fw != fr {
		t.Fatalf("the framer depends on how reads cut the stream: %+v vs %+v", fw, fr)
	}
	ref := reference(stream, follow)
	if ref.served > 0 {
		// The framer followed every request net/http served, unchanged.
		head, fp := runFramer(stream[:ref.end], cut, follow)
		if !bytes.Equal(head, stream[:ref.end]) || fp.st != sStart || fp.requests != ref.served {
			t.Fatalf("after %d requests served (%d bytes) the framer is at %+v", ref.served, ref.end, fp)
		}
	}
	switch ref.last {
	case endEOF:
		if !bytes.Equal(out, stream) || fr.st != sStart || fr.requests != ref.served {
			t.Fatalf("stream served whole (%d requests); framer at %+v, changed %v", ref.served, fr, !bytes.Equal(out, stream))
		}
	case endTunnel:
		if !bytes.Equal(out, stream) || fr.st != sPass || (fr.why != passTunnel && fr.why != passHTTP2) {
			t.Fatalf("tunnel after %d requests; framer at %+v, changed %v", ref.served, fr, !bytes.Equal(out, stream))
		}
	case endConflict:
		if fr.why != passConflict || fr.requests != ref.served {
			t.Fatalf("conflict in request %d; framer at %+v", ref.served+1, fr)
		}
		if again := reference(out, follow); again.served != ref.served || again.last != endBroken {
			t.Fatalf("net/http would not refuse the altered request %d: %+v", ref.served+1, again)
		}
	}
}

// TestFramingVerdicts names what the framer makes of a few streams.
func TestFramingVerdicts(t *testing.T) {
	for _, tc := range []struct {
		name, stream string
		follow       bool
		why          uint8
		requests     int
	}{
		{"keep-alive", get + chunkPost + clPost + get, false, passNone, 4},
		{"CL then TE", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", false, passConflict, 0},
		{"TE then CL", get + "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", false, passConflict, 1},
		{"TE on 1.0", "POST / HTTP/1.0\r\ntransfer-encoding: identity\r\n\r\n", false, passConflict, 0},
		{"TLS", "\x16\x03\x01\x00", false, passNotHTTP, 0},
		{"h2c preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false, passHTTP2, 0},
		{"upgrade", "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: x\r\n\r\n", false, passTunnel, 1},
		{"upgrade, hijacks reported", "GET / HTTP/1.1\r\nHost: x\r\nUpgrade: x\r\n\r\n" + get, true, passNone, 2},
		{"CONNECT", "CONNECT x:1 HTTP/1.1\r\n\r\n", false, passTunnel, 1},
		{"two TE lines", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", false, passNotHTTP, 1},
		{"gzip TE", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false, passNotHTTP, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cut := range []uint8{0, 1, 2, 7, 64} {
				out, f := runFramer([]byte(tc.stream), cut, tc.follow)
				if f.why != tc.why || f.requests != tc.requests {
					t.Fatalf("cut %d: why %d, %d requests; want %d, %d", cut, f.why, f.requests, tc.why, tc.requests)
				}
				if changed := !bytes.Equal(out, []byte(tc.stream)); changed != (tc.why == passConflict) {
					t.Fatalf("cut %d: changed %v", cut, changed)
				}
			}
		})
	}
}

// streamConn is a net.Conn whose reads replay data for ever.
type streamConn struct {
	net.Conn
	data []byte
	off  int
}

func (c *streamConn) Read(p []byte) (int, error) {
	n := copy(p, c.data[c.off:])
	c.off = (c.off + n) % len(c.data)
	return n, nil
}

func TestFramingReadAllocs(t *testing.T) {
	c := &conn{Conn: &streamConn{data: []byte(get + chunkPost + clPost)}, ln: &Listener{}}
	c.reported.Store(true)
	buf := make([]byte, 64)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per Read", allocs)
	}
	if c.fr.st == sPass || c.fr.requests < 1000 {
		t.Fatalf("the framer stopped following: %+v", c.fr)
	}
}

// A browser-like GET: the head of most keep-alive requests.
const browserGET = "GET /assets/app.js?v=12 HTTP/1.1\r\n" +
	"Host: www.example.test\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0\r\n" +
	"Accept: */*\r\n" +
	"Accept-Language: en-US,en;q=0.5\r\n" +
	"Accept-Encoding: gzip, deflate, br, zstd\r\n" +
	"Referer: https://www.example.test/\r\n" +
	"Connection: keep-alive\r\n" +
	"Cookie: session=0123456789abcdef0123456789abcdef; theme=dark\r\n" +
	"Sec-Fetch-Dest: script\r\n" +
	"Sec-Fetch-Mode: no-cors\r\n" +
	"Sec-Fetch-Site: same-origin\r\n" +
	"\r\n"

// BenchmarkFramingGET: one op is the guard's work on one keep-alive GET.
func BenchmarkFramingGET(b *testing.B) {
	req := []byte(browserGET)
	var f framer
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		f.scan(req, true)
	}
	if f.st != sStart || f.requests == 0 {
		b.Fatalf("the framer stopped following: %+v", f)
	}
}

// BenchmarkFramingChunkedUpload: one op is the guard's work on 1 MiB of a
// chunked upload in 16 KiB chunks, read 32 KiB at a time.
func BenchmarkFramingChunkedUpload(b *testing.B) {
	const chunk = 16 << 10
	var body []byte
	for range (1 << 20) / chunk {
		body = append(body, strconv.FormatInt(chunk, 16)+"\r\n"...)
		body = append(body, bytes.Repeat([]byte{'x'}, chunk)...)
		body = append(body, "\r\n"...)
	}
	f := framer{st: sChunkSize} // in the body of a chunked request
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	for b.Loop() {
		for rest := body; len(rest) > 0; {
			n := min(len(rest), 32<<10)
			f.scan(rest[:n], true)
			rest = rest[n:]
		}
	}
	if f.st != sChunkSize {
		b.Fatalf("the framer stopped following: %+v", f)
	}
}
