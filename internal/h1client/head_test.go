package h1client

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wireConn is a net.Conn that reads canned bytes and discards writes.
type wireConn struct{ r io.Reader }

func (c *wireConn) Read(p []byte) (int, error)      { return c.r.Read(p) }
func (c *wireConn) Write(p []byte) (int, error)     { return len(p), nil }
func (c *wireConn) Close() error                    { return nil }
func (c *wireConn) LocalAddr() net.Addr             { return &net.TCPAddr{} }
func (c *wireConn) RemoteAddr() net.Addr            { return &net.TCPAddr{} }
func (c *wireConn) SetDeadline(time.Time) error     { return nil }
func (c *wireConn) SetReadDeadline(time.Time) error { return nil }
func (*wireConn) SetWriteDeadline(time.Time) error  { return nil }

// directRead reads a response to a request of the method from raw with
// the client's reader, informational heads skipped: the head, the body
// and the first error.
func directRead(raw []byte, method string) (*http.Response, []byte, error) {
	c := newConn(&wireConn{r: iotestOneByte(raw)}, New(Config{}), Destination{Addr: "x"})
	for n := 0; ; n++ {
		if _, err := c.readHead(); err != nil {
			return nil, nil, err
		}
		if c.head.code < 100 || c.head.code > 199 || c.head.code == 101 {
			break
		}
		if n == Max1xx {
			return nil, nil, errTooMany1xx
		}
	}
	ex := new(Exchange)
	ex.hdr = make(http.Header)
	ex.start(c, method, nil)
	res := &ex.Response
	res.Header = res.Header.Clone()
	body, err := io.ReadAll(res.Body)
	return res, body, err
}

// iotestOneByte returns a reader of raw in small uneven pieces, so that
// every buffer boundary is crossed.
func iotestOneByte(raw []byte) io.Reader { return &piecewise{b: raw} }

type piecewise struct {
	b []byte
	n int
}

func (p *piecewise) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	p.n++
	k := min(len(b), len(p.b), 1+p.n%7*p.n%13)
	copy(b, p.b[:k])
	p.b = p.b[k:]
	return k, nil
}

func TestParsesStrictly(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		want error // nil: accepted
		body string
	}{
		{"length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", nil, "ok"},
		{"no reason", "HTTP/1.1 204\r\n\r\n", nil, ""},
		{"identical lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", nil, "ok"},
		{"differing lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", errLengths, ""},
		{"length list", "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok", errContentLength, ""},
		{"signed length", "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok", errContentLength, ""},
		{"length and chunked", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", errLengthAndChunks, ""},
		{"gzip coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", errTransferCoding, ""},
		{"chunked on 1.0", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", errTransferCoding, ""},
		{"bare LF in head", "HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", errBareLF, ""},
		{"bare LF ends head", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\n", errBareLF, ""},
		{"bare CR", "HTTP/1.1 200 OK\r\nX-A: 1\r2\r\nContent-Length: 0\r\n\r\n", errBareCR, ""},
		{"obs-fold", "HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n", errObsFold, ""},
		{"space before colon", "HTTP/1.1 200 OK\r\nX-A : 1\r\nContent-Length: 0\r\n\r\n", errFieldName, ""},
		{"NUL in value", "HTTP/1.1 200 OK\r\nX-A: 1\x002\r\nContent-Length: 0\r\n\r\n", errFieldValue, ""},
		{"HTTP/2.0", "HTTP/2.0 200 OK\r\n\r\n", errVersion, ""},
		{"short code", "HTTP/1.1 20 OK\r\n\r\n", errStatusLine, ""},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;ext=1\r\nok\r\nA\r\n0123456789\r\n0\r\nX-T: 1\r\n\r\n", nil, "ok0123456789"},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n", errChunkSize, ""},
		{"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\nok\r\n0\r\n\r\n", errChunkSize, ""},
		{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokXX0\r\n\r\n", errChunkEnd, ""},
		{"bare LF chunk line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n", errBareLF, ""},
		{"length in trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 5\r\n\r\n", errTrailerName, ""},
		{"head over the limit", "HTTP/1.1 200 OK\r\n" + strings.Repeat("X-A: "+strings.Repeat("a", 1000)+"\r\n", 1100) + "\r\n", errHeadTooLarge, ""},
		{"informational first", "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", nil, "ok"},
		{"six informational", strings.Repeat("HTTP/1.1 103 Early Hints\r\n\r\n", 6) + "HTTP/1.1 204\r\n\r\n", errTooMany1xx, ""},
		{"until close", "HTTP/1.1 200 OK\r\n\r\nall of it", nil, "all of it"},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok", io.ErrUnexpectedEOF, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, body, err := directRead([]byte(tc.raw), "GET")
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.body, string(body))
		})
	}
}

// refStrictViolation reports whether a response that net/http's reader
// accepts breaks a rule of RFC 9112 the direct client enforces, read
// from the specification with regular expressions (none of the direct
// client's code): every line of the head and of the chunk framing ends in
// CRLF, a field line is a token, a colon, and a value of VCHAR, obs-text,
// SP and HTAB; no obs-fold; Content-Length is one number (repeated only
// identically) and never with Transfer-Encoding, which is chunked alone
// and only on HTTP/1.1; a chunk-size line is hex digits and extensions;
// the head is at most MaxHeadBytes; the trailers carry no framing field.
var (
	strictFieldLine  = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e\\x{80}-\\x{10FFFF}]*$")
	strictStatusLine = regexp.MustCompile("^HTTP/1\\.[0-9] [0-9]{3}( [\t\x20-\x7e\\x{80}-\\x{10FFFF}]*)?$")
	strictChunkLine  = regexp.MustCompile("^[0-9a-fA-F]+[ \t]*(;[\t\x20-\x7e\\x{80}-\\x{10FFFF}]*)?$")
	strictLength     = regexp.MustCompile("^[0-9]{1,18}$")
)

func refStrictViolation(raw []byte, method string) bool {
	rest := string(raw)
	line := func() (string, bool) {
		i := strings.Index(rest, "\n")
		if i < 0 || i == 0 || rest[i-1] != '\r' || strings.Contains(rest[:i-1], "\r") {
			return "", false
		}
		l := rest[:i-1]
		rest = rest[i+1:]
		return l, true
	}
	for {
		start := len(rest)
		st, ok := line()
		if !ok || !strictStatusLine.MatchString(st) {
			return true
		}
		var lengths []string
		var codings []string
		for {
			l, ok := line()
			if !ok {
				return true
			}
			if l == "" {
				break
			}
			if !strictFieldLine.MatchString(l) {
				return true
			}
			name, value, _ := strings.Cut(l, ":")
			value = strings.Trim(value, " \t")
			switch strings.ToLower(name) {
			case "content-length":
				lengths = append(lengths, value)
			case "transfer-encoding":
				codings = append(codings, value)
			}
		}
		if start-len(rest) > MaxHeadBytes {
			return true
		}
		for _, l := range lengths {
			if !strictLength.MatchString(l) || l != lengths[0] {
				return true
			}
		}
		if len(codings) > 0 && (len(lengths) > 0 || len(codings) > 1 || !strings.EqualFold(codings[0], "chunked") || st[7] == '0') {
			return true
		}
		code := st[9:12]
		if code[0] == '1' && code != "101" {
			continue // the next head
		}
		if method == "HEAD" || code == "204" || code == "304" || code[0] == '1' || len(codings) == 0 {
			return false
		}
		for {
			l, ok := line()
			if !ok || !strictChunkLine.MatchString(l) {
				return true
			}
			size := strings.TrimLeft(strings.TrimRight(strings.SplitN(l, ";", 2)[0], " \t"), "0")
			if len(size) > 15 {
				return true
			}
			n := 0
			for _, c := range size {
				n = n*16 + strings.IndexRune("0123456789abcdef", c|0x20)
			}
			if n == 0 {
				break
			}
			if n+2 > len(rest) || rest[n:n+2] != "\r\n" {
				return true
			}
			rest = rest[n+2:]
		}
		for {
			l, ok := line()
			if !ok {
				return true
			}
			if l == "" {
				return false
			}
			name, _, _ := strings.Cut(l, ":")
			if !strictFieldLine.MatchString(l) {
				return true
			}
			switch strings.ToLower(name) {
			case "content-length", "transfer-encoding", "trailer", "host":
				return true
			}
		}
	}
}

// FuzzDirectResponse checks the direct client's reader against net/http's
// ReadResponse: what it accepts, net/http reads the same (status, fields,
// length, body, trailers); what net/http refuses, it refuses; what it
// refuses and net/http accepts breaks a rule of RFC 9112 that
// refStrictViolation finds independently.
func FuzzResponse(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: text/plain\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n2\r\nok\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 204 No Content\r\nContent-Length: 7\r\n\r\n",
		"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\nuntil close",
		"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 304 Not Modified\r\nEtag: \"x\"\r\n\r\n",
		"HTTP/1.1 200 OK\nContent-Length: 0\n\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10;a=b\r\n0123456789abcdef\r\n0\r\n\r\n",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n"), true)
	f.Fuzz(func(t *testing.T, raw []byte, head bool) {
		if len(raw) > 64<<10 {
			return // the limits are TestParsesStrictly's and TestHeadCostIsLinear's
		}
		method := "GET"
		if head {
			method = "HEAD"
		}
		res, body, err := directRead(raw, method)
		ref, refBody, refErr := stdRead(raw, method)
		if err != nil {
			if refErr == nil && !refStrictViolation(raw, method) {
				t.Fatalf("refused what net/http reads and breaks no rule: %v\n%q", err, raw)
			}
			return
		}
		if refErr != nil {
			t.Fatalf("read what net/http refuses (%v)\n%q", refErr, raw)
		}
		if refStrictViolation(raw, method) {
			t.Fatalf("read a response that breaks a rule\n%q", raw)
		}
		if res.StatusCode != ref.StatusCode || res.ProtoMinor != min(ref.ProtoMinor, 1) || res.ContentLength != ref.ContentLength { // HTTP/1.2 and later read as 1.1
			t.Fatalf("status %d/1.%d/%d, net/http %d/1.%d/%d\n%q", res.StatusCode, res.ProtoMinor, res.ContentLength, ref.StatusCode, ref.ProtoMinor, ref.ContentLength, raw)
		}
		for _, h := range []http.Header{res.Header, ref.Header} {
			delete(h, "Connection") // net/http's reader acts on close and drops it
		}
		if ref.Header["Cache-Control"] != nil && ref.Header["Pragma"] != nil && res.Header["Cache-Control"] == nil {
			delete(ref.Header, "Cache-Control") // net/http adds it for Pragma: no-cache
		}
		assert.Equal(t, ref.Header, res.Header, "fields of %q", raw)
		assert.Equal(t, string(refBody), string(body), "body of %q", raw)
		assert.Equal(t, nonEmpty(ref.Trailer), nonEmpty(res.Trailer), "trailers of %q", raw)
	})
}

func nonEmpty(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if v != nil {
			out[k] = v
		}
	}
	return out
}

// stdRead is net/http's reading of the same bytes, 1xx heads skipped as
// its client skips them.
func stdRead(raw []byte, method string) (*http.Response, []byte, error) {
	br := bufio.NewReader(bytes.NewReader(raw))
	req := &http.Request{Method: method, URL: &url.URL{Scheme: "http", Host: "x", Path: "/"}}
	for n := 0; ; n++ {
		res, err := http.ReadResponse(br, req)
		if err != nil {
			return nil, nil, err
		}
		if res.StatusCode >= 100 && res.StatusCode <= 199 && res.StatusCode != 101 {
			if n == Max1xx {
				return nil, nil, errors.New("too many 1xx")
			}
			continue
		}
		body, err := io.ReadAll(res.Body)
		return res, body, err
	}
}

// TestHeadCostIsLinear: the heads an upstream can make most
// expensive (a 1 MiB line in small pieces, a 1 MiB head of one repeated
// field) are read in time linear in their size: each takes well under a
// second, where a quadratic scan or copy takes minutes.
func TestHeadCostIsLinear(t *testing.T) {
	for _, raw := range []string{
		"HTTP/1.1 200 OK\r\nX-A: " + strings.Repeat("a", MaxHeadBytes-100),
		"HTTP/1.1 200 OK\r\n" + strings.Repeat("X: a\r\n", (MaxHeadBytes-100)/6) + "Content-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-A: " + strings.Repeat("a", MaxHeadBytes-100),
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			directRead([]byte(raw), "GET")
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("reading %.40q... takes over 10 s", raw)
		}
	}
}

// TestChunkLineLimitHoldsHoweverItArrives: a chunk-size line over
// maxChunkLine is refused when it arrives in one read as when it arrives
// in pieces, so that the client and a CheckedConn, which sees other
// reads, agree.
func TestChunkLineLimitHoldsHoweverItArrives(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;" + strings.Repeat("e", maxChunkLine) + "\r\nok\r\n0\r\n\r\n"
	c := newConn(&wireConn{r: strings.NewReader(raw)}, New(Config{}), Destination{Addr: "x"})
	_, err := c.readHead()
	require.NoError(t, err)
	ex := &Exchange{hdr: make(http.Header)}
	ex.start(c, "GET", nil)
	_, err = io.ReadAll(ex)
	assert.ErrorIs(t, err, errChunkSize)
}

// pieces returns its pieces one Read each, as they would arrive.
type pieces struct{ p [][]byte }

func (r *pieces) Read(b []byte) (int, error) {
	if len(r.p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, r.p[0])
	if r.p[0] = r.p[0][n:]; len(r.p[0]) == 0 {
		r.p = r.p[1:]
	}
	return n, nil
}

// TestPendingTellsWhereTheUpstreamPaused: Pending is true in the middle
// of a chunk and while bytes are buffered, false where the connection
// has given everything the upstream sent and after the end.
func TestPendingTellsWhereTheUpstreamPaused(t *testing.T) {
	wire := &pieces{p: [][]byte{
		[]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"),
		[]byte("3\r\nabc\r\n0\r\n\r\n"),
	}}
	c := newConn(&wireConn{r: wire}, New(Config{}), Destination{Addr: "x"})
	_, err := c.readHead()
	require.NoError(t, err)
	ex := new(Exchange)
	ex.hdr = make(http.Header)
	ex.start(c, "GET", nil)
	read := func(size int) string {
		t.Helper()
		b := make([]byte, size)
		n, err := ex.Read(b)
		require.NoError(t, err)
		return string(b[:n])
	}
	assert.Equal(t, "he", read(2))
	assert.True(t, ex.Pending(), "the rest of the chunk")
	assert.Equal(t, "llo", read(64))
	assert.False(t, ex.Pending(), "the first piece is all read")
	assert.Equal(t, "abc", read(64))
	assert.True(t, ex.Pending(), "the last chunk is buffered")
	n, err := ex.Read(make([]byte, 64))
	assert.Zero(t, n)
	assert.Equal(t, io.EOF, err)
	assert.False(t, ex.Pending(), "the body ended")
}

// TestHeaderOfHeadsInTurn: one connection's heads in turn, some like the
// previous one (the same names in the same order) and some not, each give
// the fields net/http reads; a value slice has no spare capacity, and a
// header map already handed out keeps its fields while the next head is
// read.
func TestHeaderOfHeadsInTurn(t *testing.T) {
	heads := []string{
		"A: 1\r\nB: 2\r\nC: 3",
		"A: 1\r\nB: 2\r\nC: 3",         // like the last
		"A: 1\r\nB: 9\r\nC: 3",         // one value changed
		"A: 1\r\nB: 9\r\nC: 3\r\nD: 4", // one field more
		"A: 1\r\nB: 9",                 // fewer
		"b: 9\r\nA: 1",                 // other order, a name not canonical
		"B: 9\r\nA: 1\r\nB: 5",         // a name again after a like prefix
		"B: 9\r\nA: 1",                 // like the one before last's prefix
		"B: 9\r\nA: 1\r\nA: 2\r\nB: 3", // repeated names
		"B: 9\r\nA: 1\r\nC: 3",
		"B: 9\r\nA: 1\r\nC: 3",
		"X-a: 1\r\nx-A: 2", // one name spelt two ways
		"X-A: 1\r\nX-A: 2",
		"X-A: 1\r\nB: 2",
	}
	c := &conn{names: map[string]string{}, vals: map[string][]string{}}
	var kept []http.Header // each head's map, and a copy of it
	var want []http.Header
	for _, fields := range heads {
		raw := "HTTP/1.1 200 OK\r\n" + fields + "\r\nContent-Length: 0\r\n\r\n"
		ref, _, err := stdRead([]byte(raw), "GET")
		require.NoError(t, err)
		require.NoError(t, parseHead([]byte(raw), &c.head))
		h := c.header(make(http.Header))
		assert.Equal(t, ref.Header, h, "fields of %q", fields)
		for k, v := range h {
			assert.Equal(t, len(v), cap(v), "spare capacity in %s of %q", k, fields)
		}
		kept, want = append(kept, h), append(want, ref.Header)
	}
	assert.Equal(t, want, kept, "maps handed out keep their fields")
}

// TestHeaderReusesAnIntactMap: heads read into one map in turn, the caller
// changing it or not in between, or passing another map, each leave it
// with exactly the fields net/http reads.
func TestHeaderReusesAnIntactMap(t *testing.T) {
	const like = "A: 1\r\nB: 2\r\nC: 3"
	other := http.Header{}
	steps := []struct {
		name   string
		fields string
		change func(h http.Header) http.Header // the caller's, before the head is read
	}{
		{"first", like, nil},
		{"untouched", like, nil},
		{"a value changed", "A: 1\r\nB: 9\r\nC: 3", nil},
		{"a field deleted", like, func(h http.Header) http.Header { delete(h, "B"); return h }},
		{"a field added", like, func(h http.Header) http.Header { h["D"] = []string{"4"}; return h }},
		{"deleted and added", like, func(h http.Header) http.Header { delete(h, "C"); h["D"] = []string{"3"}; return h }},
		{"an equal slice", like, func(h http.Header) http.Header { h["A"] = []string{"1"}; return h }},
		{"a value replaced", like, func(h http.Header) http.Header { h["A"] = []string{"0"}; return h }},
		{"a value appended", like, func(h http.Header) http.Header { h["A"] = append(h["A"], "x"); return h }},
		{"untouched again", like, nil},
		{"another map", like, func(http.Header) http.Header { return other }},
		{"back to the first", like, nil}, // replaced below by the map of step "untouched again"
		{"fewer fields", "A: 1\r\nB: 2", nil},
		{"more fields", like, nil},
		{"other names", "A: 1\r\nX: 2\r\nC: 3", nil},
	}
	c := &conn{names: map[string]string{}, vals: map[string][]string{}}
	h := http.Header{}
	var kept http.Header
	for _, st := range steps {
		if st.change != nil {
			h = st.change(h)
		}
		if st.name == "untouched again" {
			kept = h
		}
		if st.name == "back to the first" {
			h = kept // holds this connection's slices from two heads back
		}
		raw := "HTTP/1.1 200 OK\r\n" + st.fields + "\r\n\r\n"
		ref, _, err := stdRead([]byte(raw), "GET")
		require.NoError(t, err)
		require.NoError(t, parseHead([]byte(raw), &c.head))
		h = c.header(h)
		delete(ref.Header, "Content-Length")
		assert.Equal(t, ref.Header, h, st.name)
		for k, v := range h {
			assert.Equal(t, len(v), cap(v), "spare capacity in %s after %s", k, st.name)
		}
	}
}
