package h1client

import (
	"bytes"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// The rules of a response, read the same by the client and by a
// [CheckedConn]: every line ends in CRLF (a bare LF or CR is refused), no
// obs-fold, a field name is a token followed at once by the colon, a
// field value holds no control character, Content-Length is one decimal
// number (duplicates only when identical), Transfer-Encoding is "chunked"
// alone, on HTTP/1.1 only and never with a Content-Length, and a head is
// at most MaxHeadBytes. A chunk-size line is hex digits and extensions of
// at most maxChunkLine bytes, chunk data is followed by CRLF, and the
// trailers follow the head's rules, within MaxHeadBytes all together,
// and carry no framing field. A refusal is a *ResponseError.

// ResponseError is a response head or framing the rules refuse: the
// exchange fails as a bad response (a head that never arrived, or a body
// cut short) and the connection is closed.
type ResponseError struct{ msg string }

func (e *ResponseError) Error() string { return "h1client: upstream response: " + e.msg }

var (
	errBareLF          = &ResponseError{"line ends in a bare LF"}
	errBareCR          = &ResponseError{"CR not followed by LF"}
	errStatusLine      = &ResponseError{"malformed status line"}
	errVersion         = &ResponseError{"not HTTP/1.x"}
	errObsFold         = &ResponseError{"obs-fold (a line starting with whitespace)"}
	errFieldName       = &ResponseError{"malformed field name"}
	errFieldValue      = &ResponseError{"control character in a field value"}
	errContentLength   = &ResponseError{"malformed Content-Length"}
	errLengths         = &ResponseError{"differing Content-Length values"}
	errTransferCoding  = &ResponseError{"Transfer-Encoding other than chunked"}
	errLengthAndChunks = &ResponseError{"both Content-Length and Transfer-Encoding"}
	errHeadTooLarge    = &ResponseError{"head larger than the limit"}
	errChunkSize       = &ResponseError{"malformed chunk size"}
	errChunkEnd        = &ResponseError{"chunk data not followed by CRLF"}
	errTrailerName     = &ResponseError{"framing field in the trailers"}
)

// MaxHeadBytes bounds a response head, and the trailers; maxChunkLine
// bounds a chunk-size line with its extensions and CRLF.
const (
	MaxHeadBytes = 1 << 20
	maxChunkLine = 4 << 10
)

// field is one field line of a head, both parts slices of the read
// buffer: the name as received (canonicalised in place later), the value
// without surrounding whitespace.
type field struct{ name, value []byte }

// head is a parsed response head.
type head struct {
	code     int
	minor    int // 0 or 1 (HTTP/1.2 and later read as 1.1)
	fields   []field
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
func parseHead(b []byte, h *head) error {
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
func parseStatusLine(l []byte, h *head) error {
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
func parseField(l []byte) (field, error) {
	if l[0] == ' ' || l[0] == '\t' {
		return field{}, errObsFold
	}
	i := bytes.IndexByte(l, ':')
	if i <= 0 {
		return field{}, errFieldName
	}
	name := l[:i]
	for _, c := range name {
		if !tokenByte(c) {
			return field{}, errFieldName
		}
	}
	v := l[i+1:]
	for _, c := range v {
		if !fieldValueByte(c) {
			if c == '\r' {
				return field{}, errBareCR
			}
			return field{}, errFieldValue
		}
	}
	return field{name: name, value: trimOWS(v)}, nil
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

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
