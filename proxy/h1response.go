package proxy

import (
	"bytes"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// The direct HTTP/1.1 client parses response heads strictly, as RFC 9112
// asks of a proxy: every line ends in CRLF (a bare LF or CR is refused),
// no obs-fold, a field name is a token followed at once by the colon, a
// field value holds no control character, Content-Length is one decimal
// number (duplicates only when identical), Transfer-Encoding is "chunked"
// alone, on HTTP/1.1 only and never with a Content-Length, and the head
// is at most maxHeadBytes. A refused head is a *headError: the exchange
// fails as a bad response header (502) and the connection is closed.

// headError is a response head or chunk framing the direct client refuses.
type headError struct{ msg string }

func (e *headError) Error() string { return "proxy: upstream response: " + e.msg }

var (
	errBareLF          = &headError{"line ends in a bare LF"}
	errBareCR          = &headError{"CR not followed by LF"}
	errStatusLine      = &headError{"malformed status line"}
	errVersion         = &headError{"not HTTP/1.x"}
	errObsFold         = &headError{"obs-fold (a line starting with whitespace)"}
	errFieldName       = &headError{"malformed field name"}
	errFieldValue      = &headError{"control character in a field value"}
	errContentLength   = &headError{"malformed Content-Length"}
	errLengths         = &headError{"differing Content-Length values"}
	errTransferCoding  = &headError{"Transfer-Encoding other than chunked"}
	errLengthAndChunks = &headError{"both Content-Length and Transfer-Encoding"}
	errHeadTooLarge    = &headError{"head larger than the limit"}
	errChunkSize       = &headError{"malformed chunk size"}
	errChunkEnd        = &headError{"chunk data not followed by CRLF"}
	errTrailerName     = &headError{"framing field in the trailers"}
)

// maxHeadBytes bounds a response head (net/http's client is configured
// with the same limit) and maxChunkLine a chunk-size line with its
// extensions.
const (
	maxHeadBytes = 1 << 20
	maxChunkLine = 4 << 10
)

// h1Field is one field line of a head, both parts slices of the read
// buffer: the name as received (canonicalised in place later), the value
// without surrounding whitespace.
type h1Field struct{ name, value []byte }

// h1Head is a parsed response head.
type h1Head struct {
	code     int
	minor    int // 0 or 1 (HTTP/1.2 and later read as 1.1)
	fields   []h1Field
	length   int64 // Content-Length, -1 when none
	chunked  bool
	close    bool // the connection cannot carry another exchange
	trailers bool // a Trailer field is present
}

// headEnd finds the end of the head that starts b: it returns the length
// of the head through its blank line, or 0 when b holds no complete head
// yet. from is where a previous call stopped, so that a head arriving in
// pieces is scanned once; next is where to resume.
func headEnd(b []byte, from int) (n, next int, err error) {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return 0, len(b), nil
		}
		end := i + j
		if end == 0 || b[end-1] != '\r' {
			return 0, 0, errBareLF
		}
		if end >= 2 && b[end-2] == '\n' {
			return end + 1, end + 1, nil // the blank line
		}
		i = end + 1
	}
	return 0, len(b), nil
}

// parseHead parses a complete head (as headEnd delimits it) into h. The
// fields reuse h.fields' storage.
func parseHead(b []byte, h *h1Head) error {
	h.fields = h.fields[:0]
	h.length, h.chunked, h.close, h.trailers = -1, false, false, false
	line, rest := cutLine(b)
	if err := parseStatusLine(line, h); err != nil {
		return err
	}
	sawLength, sawTE := false, false
	for {
		line, rest = cutLine(rest)
		if len(line) == 0 {
			break
		}
		f, err := parseField(line)
		if err != nil {
			return err
		}
		switch {
		case asciiEqualFold(f.name, "content-length"):
			n, ok := parseLength(f.value)
			switch {
			case !ok:
				return errContentLength
			case sawLength && n != h.length:
				return errLengths
			}
			sawLength, h.length = true, n
		case asciiEqualFold(f.name, "transfer-encoding"):
			if sawTE || h.minor == 0 || !asciiEqualFold(f.value, "chunked") {
				return errTransferCoding
			}
			sawTE, h.chunked = true, true
		case asciiEqualFold(f.name, "connection"):
			if hasToken(f.value, "close") {
				h.close = true
			}
		case asciiEqualFold(f.name, "trailer"):
			h.trailers = true
		}
		h.fields = append(h.fields, f)
	}
	if sawLength && sawTE {
		return errLengthAndChunks
	}
	if h.minor == 0 {
		h.close = true
	}
	return nil
}

// cutLine returns the line that starts b without its CRLF, and the rest.
// b is a head headEnd accepted, so every line ends in CRLF.
func cutLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return nil, nil
	}
	return b[:i-1], b[i+1:]
}

// parseStatusLine reads "HTTP/1.x NNN[ reason]". The reason phrase may
// be absent with its space (net/http and most clients accept that).
func parseStatusLine(l []byte, h *h1Head) error {
	if len(l) < 12 || string(l[:7]) != "HTTP/1." || l[8] != ' ' {
		if len(l) >= 5 && string(l[:5]) == "HTTP/" {
			return errVersion
		}
		return errStatusLine
	}
	if !isDigit(l[7]) || !isDigit(l[9]) || !isDigit(l[10]) || !isDigit(l[11]) {
		return errStatusLine
	}
	h.minor = min(int(l[7]-'0'), 1)
	h.code = int(l[9]-'0')*100 + int(l[10]-'0')*10 + int(l[11]-'0')
	if len(l) > 12 {
		if l[12] != ' ' {
			return errStatusLine
		}
		for _, c := range l[13:] {
			if !fieldValueByte(c) {
				return errStatusLine
			}
		}
	}
	return nil
}

// parseField splits a field line into a token name and a value without
// its surrounding whitespace.
func parseField(l []byte) (h1Field, error) {
	if l[0] == ' ' || l[0] == '\t' {
		return h1Field{}, errObsFold
	}
	i := bytes.IndexByte(l, ':')
	if i <= 0 {
		return h1Field{}, errFieldName
	}
	name := l[:i]
	for _, c := range name {
		if !tokenByte(c) {
			return h1Field{}, errFieldName
		}
	}
	v := l[i+1:]
	for _, c := range v {
		if !fieldValueByte(c) {
			if c == '\r' {
				return h1Field{}, errBareCR
			}
			return h1Field{}, errFieldValue
		}
	}
	return h1Field{name: name, value: trimOWS(v)}, nil
}

// parseLength reads 1*DIGIT without sign or list, at most 18 digits.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// parseChunkSize reads a chunk-size line without its CRLF: 1*HEXDIG,
// then optional extensions (BWS ";" ...), which are ignored but may hold
// no control character.
func parseChunkSize(l []byte) (int64, error) {
	var n int64
	i := 0
	for ; i < len(l); i++ {
		d, ok := hexDigit(l[i])
		if !ok {
			break
		}
		if n > (1<<62)>>4 {
			return 0, errChunkSize
		}
		n = n<<4 | int64(d)
	}
	if i == 0 {
		return 0, errChunkSize
	}
	ext := trimOWS(l[i:])
	if len(ext) > 0 && ext[0] != ';' {
		return 0, errChunkSize
	}
	for _, c := range ext {
		if !fieldValueByte(c) {
			return 0, errChunkSize
		}
	}
	return n, nil
}

// hexDigit returns the value of a hexadecimal digit.
func hexDigit(c byte) (byte, bool) {
	i := strings.IndexByte("0123456789abcdef", lower(c))
	return byte(i), i >= 0
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// tokenByte reports whether c is a tchar of RFC 9110 section 5.6.2.
func tokenByte(c byte) bool { return httpguts.IsTokenRune(rune(c)) }

// fieldValueByte reports whether c may appear in a field value: VCHAR,
// obs-text, SP or HTAB.
func fieldValueByte(c byte) bool { return c == '\t' || (c >= ' ' && c != 0x7f) }

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// asciiEqualFold reports whether b is s (lower case) in any case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != s[i] {
			return false
		}
	}
	return true
}

// hasToken reports whether the comma-separated list v holds tok (lower
// case) in any case.
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, comma)
		if asciiEqualFold(trimOWS(t), tok) {
			return true
		}
	}
	return false
}

// canonicalInPlace writes the canonical spelling of a token field name
// over itself, as textproto.CanonicalMIMEHeaderKey spells it.
func canonicalInPlace(b []byte) {
	upper := true
	for i, c := range b {
		switch {
		case upper && 'a' <= c && c <= 'z':
			b[i] = c - 'a' + 'A'
		case !upper && 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		}
		upper = c == '-'
	}
}
