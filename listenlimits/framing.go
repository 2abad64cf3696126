package listenlimits

import (
	"bytes"
	"math"
)

// framer follows the HTTP/1.x requests of one connection in the bytes
// net/http's server reads, to refuse the framings RFC 9112 forbids and
// net/http serves: Content-Length beside Transfer-Encoding (section 6.1:
// the server must close after answering), and Transfer-Encoding on an
// HTTP/1.0 request (section 6.1: treat the framing as faulty and close).
//
// It reads each request as net/http does (net/textproto's header lines,
// its internal chunked reader, its trailer reader) closely enough to find
// the same request boundaries on every stream net/http serves. Where
// net/http refuses a stream it closes the connection, so the framer's view
// of the bytes after that no longer matters; there it may be lenient.
//
// On a forbidden combination it overwrites, in the buffer being returned
// to net/http, the ':' of the header line that completes it with a NUL.
// net/textproto then refuses the header block ("malformed MIME header"),
// and net/http answers 400 Bad Request with Connection: close and closes
// before it serves the request or anything after it.
//
// Whenever the bytes stop being HTTP/1.x text it can follow, it stops
// for good (st == sPass) and never alters a byte again. Its state is a
// few words carried across reads; it neither buffers nor allocates.
type framer struct {
	st   uint8
	why  uint8 // why st is sPass: one of the pass* values
	hdr  uint8 // the header of the line being read: one of the h* values
	pos  uint8 // bytes of a method, version, name or value word matched
	sub  uint8 // state of a Content-Length or Transfer-Encoding value
	req  uint8 // the current request's r* flags
	tes  uint8 // Transfer-Encoding lines of the current request (up to 2)
	hexN uint8 // hex digits of the current chunk size
	// cl is the current request's Content-Length, -1 while none was read;
	// val is the value being read.
	cl, val int64
	// remain is the rest of a Content-Length body, or of a chunk's data.
	remain uint64
	// requests counts the request heads read whole.
	requests int
}

// States.
const (
	sStart       uint8 = iota // before a request line; CR and LF are skipped
	sMethod                   // in the method
	sTarget                   // in the request target
	sVersion                  // in "HTTP/x.y"
	sLineCR                   // after the version: CR LF or LF
	sLineLF                   // after the request line's CR
	sHeader                   // at the start of a header line, or of the blank line
	sName                     // in a header name that may be one the framer follows
	sValue                    // in the value of Content-Length or Transfer-Encoding
	sValueLF                  // after a CR in such a value
	sSkipLine                 // in any other header line
	sHeadLF                   // after a CR at the start of a header line
	sBody                     // in a Content-Length body
	sChunkSize                // in a chunk size
	sChunkWS                  // in white space after a chunk size
	sChunkExt                 // in a chunk extension
	sChunkLF                  // after the CR of a chunk-size line
	sChunkData                // in a chunk's data
	sChunkDataCR              // after a chunk's data: CR
	sChunkDataLF              // after a chunk's data and CR: LF
	sTrailer                  // at the start of a trailer line, or of the blank line
	sTrailerLine              // in a trailer line
	sTrailerLF                // after a CR at the start of a trailer line
	sPass                     // not followed any more: bytes pass untouched
)

// Why the framer stopped following the connection.
const (
	passNone     uint8 = iota
	passNotHTTP        // not HTTP/1.x it can follow (TLS, or a request net/http refuses)
	passHTTP2          // an HTTP/2 request line: the h2c preface "PRI * HTTP/2.0"
	passTunnel         // after a request that asks for an upgrade or is CONNECT
	passHijacked       // the server handed the connection to a handler
	passConflict       // a forbidden framing was refused
)

// Headers the framer follows.
const (
	hOther uint8 = iota
	hContentLength
	hTransferEncoding
	hUpgrade
)

// Flags of a request.
const (
	rHTTP10   uint8 = 1 << iota // HTTP/1.0: Transfer-Encoding is refused
	rConnect                    // the method is CONNECT
	rUpgrade                    // an Upgrade header was read
	rLength                     // a Content-Length header was read
	rEncoding                   // a Transfer-Encoding header was read
	rChunked                    // the last Transfer-Encoding value was "chunked"
	rBad                        // a framing net/http refuses (it closes after it)
)

// States of a value.
const (
	vLead  uint8 = iota // white space before the value
	vWord               // in the digits, or in "chunked"
	vTrail              // white space after the value
	vBad                // not a value net/http accepts
)

var names = [...]string{
	hContentLength:    "content-length",
	hTransferEncoding: "transfer-encoding",
	hUpgrade:          "upgrade",
}

const connect = "CONNECT"

// token reports the bytes of an RFC 9110 token (a method, a header name).
var token = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()

func lower(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + 'a' - 'A'
	}
	return b
}

func (f *framer) pass(why uint8) {
	f.st, f.why = sPass, why
}

// scan follows p, the next bytes of the connection, and overwrites the
// ':' of a header line that completes a forbidden framing. Bytes after a
// request that asks for an upgrade or is CONNECT are followed only when
// hijacks are reported (see conn.Read); otherwise the framer stops there.
func (f *framer) scan(p []byte, hijacksReported bool) {
	for i := 0; i < len(p); {
		switch f.st {
		case sPass:
			return
		case sStart:
			b := p[i]
			if b == '\r' || b == '\n' {
				// net/http skips up to four after a POST; elsewhere it
				// refuses them.
				i++
				continue
			}
			if !token[b] {
				f.pass(passNotHTTP) // TLS records start with 0x16
				return
			}
			f.req, f.tes, f.cl, f.pos, f.st = 0, 0, -1, 0, sMethod
		case sMethod:
			b := p[i]
			i++
			switch {
			case b == ' ':
				if int(f.pos) == len(connect) {
					f.req |= rConnect
				}
				f.st = sTarget
			case !token[b]:
				f.pass(passNotHTTP)
			case int(f.pos) < len(connect) && b == connect[f.pos]:
				f.pos++
			default:
				f.pos = uint8(len(connect)) + 1 // not CONNECT
			}
		case sTarget:
			j := bytes.IndexByte(p[i:], ' ')
			if j < 0 {
				return
			}
			i += j + 1
			f.pos, f.st = 0, sVersion
		case sVersion:
			f.version(p[i])
			i++
		case sLineCR:
			b := p[i]
			i++
			switch b {
			case '\r':
				f.st = sLineLF
			case '\n':
				f.hdr, f.st = hOther, sHeader
			default:
				f.pass(passNotHTTP)
			}
		case sHeader:
			b := p[i]
			if b == ' ' || b == '\t' {
				// A continued line (obs-fold): net/textproto joins it to
				// the value above with one space.
				i++
				if f.hdr == hContentLength || f.hdr == hTransferEncoding {
					f.value(' ')
					f.st = sValue
				} else {
					f.st = sSkipLine
				}
				continue
			}
			f.endValue()
			switch {
			case b == '\r':
				i++
				f.st = sHeadLF
			case b == '\n':
				i++
				f.endHead(hijacksReported)
			default:
				f.hdr, f.pos, f.st = hOther, 0, sSkipLine
				switch lower(b) {
				case 'c':
					f.hdr, f.st = hContentLength, sName
				case 't':
					f.hdr, f.st = hTransferEncoding, sName
				case 'u':
					f.hdr, f.st = hUpgrade, sName
				}
			}
		case sName:
			b := p[i]
			name := names[f.hdr]
			switch {
			case int(f.pos) < len(name) && lower(b) == name[f.pos]:
				f.pos++
				i++
			case int(f.pos) == len(name) && b == ':':
				f.named(p, i)
				i++
			default:
				f.hdr, f.st = hOther, sSkipLine
			}
		case sValue:
			b := p[i]
			i++
			switch b {
			case '\r':
				f.st = sValueLF
			case '\n':
				f.st = sHeader
			default:
				f.value(b)
			}
		case sLineLF, sValueLF, sHeadLF, sChunkLF, sChunkDataCR, sChunkDataLF, sTrailerLF:
			// One byte fits here: the LF after a CR, or the CR LF after
			// chunk data. net/http refuses anything else.
			want := byte('\n')
			if f.st == sChunkDataCR {
				want = '\r'
			}
			if p[i] != want {
				f.pass(passNotHTTP)
				return
			}
			i++
			f.expected(hijacksReported)
		case sSkipLine, sTrailerLine:
			j := bytes.IndexByte(p[i:], '\n')
			if j < 0 {
				return
			}
			i += j + 1
			if f.st == sSkipLine {
				f.st = sHeader
			} else {
				f.st = sTrailer
			}
		case sBody, sChunkData:
			n := uint64(len(p) - i)
			if n < f.remain {
				f.remain -= n
				return
			}
			i += int(f.remain)
			f.remain = 0
			if f.st == sBody {
				f.st = sStart
			} else {
				f.st = sChunkDataCR
			}
		case sChunkSize:
			f.chunkSize(p[i])
			i++
		case sChunkWS:
			b := p[i]
			i++
			switch b {
			case ' ', '\t':
			case '\r':
				f.st = sChunkLF
			default: // "5 ;ext" too: net/http cuts the extension first
				f.pass(passNotHTTP)
			}
		case sChunkExt:
			// net/http ignores the extension; a bare LF, or a CR that
			// does not end the line, is refused.
			j := bytes.IndexAny(p[i:], "\r\n")
			if j < 0 {
				return
			}
			i += j
			if p[i] == '\n' {
				f.pass(passNotHTTP)
				return
			}
			i++
			f.st = sChunkLF
		case sTrailer:
			switch p[i] {
			case '\r':
				f.st = sTrailerLF
			case '\n':
				f.st = sStart
			default:
				f.st = sTrailerLine
			}
			i++
		}
	}
}

// expected moves on from a state that took its one expected byte.
func (f *framer) expected(hijacksReported bool) {
	switch f.st {
	case sLineLF:
		f.hdr, f.st = hOther, sHeader
	case sValueLF:
		f.st = sHeader
	case sHeadLF:
		f.endHead(hijacksReported)
	case sChunkLF:
		if f.remain == 0 {
			f.st = sTrailer
		} else {
			f.st = sChunkData
		}
	case sChunkDataCR:
		f.st = sChunkDataLF
	case sChunkDataLF:
		f.hexN, f.st = 0, sChunkSize
	case sTrailerLF:
		f.st = sStart
	}
}

// version reads a byte of "HTTP/1.x" (net/http's ParseHTTPVersion).
func (f *framer) version(b byte) {
	const prefix = "HTTP/"
	switch {
	case int(f.pos) < len(prefix):
		if b != prefix[f.pos] {
			f.pass(passNotHTTP)
			return
		}
	case int(f.pos) == len(prefix): // major
		if b == '2' {
			f.pass(passHTTP2)
			return
		}
		if b != '1' { // net/http answers 505 and closes
			f.pass(passNotHTTP)
			return
		}
	case int(f.pos) == len(prefix)+1:
		if b != '.' {
			f.pass(passNotHTTP)
			return
		}
	default: // minor
		if b < '0' || b > '9' {
			f.pass(passNotHTTP)
			return
		}
		if b == '0' {
			f.req |= rHTTP10
		}
		f.st = sLineCR
	}
	f.pos++
}

// named handles the ':' at p[i] that ends the name of a header the framer
// follows, and refuses a forbidden framing there.
func (f *framer) named(p []byte, i int) {
	f.pos, f.sub, f.val = 0, vLead, 0
	f.st = sValue
	conflict := false
	switch f.hdr {
	case hUpgrade:
		f.req |= rUpgrade
		f.st = sSkipLine
	case hContentLength:
		conflict = f.req&rEncoding != 0
		f.req |= rLength
	case hTransferEncoding:
		conflict = f.req&(rLength|rHTTP10) != 0
		f.req |= rEncoding
	}
	if conflict {
		// The line is still in p, unread by net/http: without its ':'
		// net/textproto refuses the header block, and net/http answers
		// 400 and closes.
		p[i] = 0
		f.pass(passConflict)
	}
}

// value reads a byte of a Content-Length or Transfer-Encoding value (not
// CR or LF).
func (f *framer) value(b byte) {
	if f.sub == vBad {
		return
	}
	if b == ' ' || b == '\t' {
		if f.sub == vWord {
			f.sub = vTrail
		}
		return
	}
	if f.sub == vTrail {
		f.sub = vBad
		return
	}
	f.sub = vWord
	if f.hdr == hContentLength {
		// strconv.ParseUint(v, 10, 63): digits only, below 2^63.
		d := int64(b) - '0'
		if d < 0 || d > 9 || f.val > (math.MaxInt64-d)/10 {
			f.sub = vBad
			return
		}
		f.val = f.val*10 + d
		return
	}
	const chunked = "chunked" // compared as ASCII case-insensitive
	if int(f.pos) < len(chunked) && lower(b) == chunked[f.pos] {
		f.pos++
		return
	}
	f.pos = uint8(len(chunked)) + 1
}

// endValue ends the header above the line starting now.
func (f *framer) endValue() {
	switch f.hdr {
	case hContentLength:
		switch {
		case f.sub == vBad:
			f.req |= rBad
		case f.sub == vLead:
			// Empty: net/http refuses it, unless GODEBUG
			// httplaxcontentlength=1 makes it absent; either way no body.
		case f.cl >= 0 && f.cl != f.val:
			f.req |= rBad // net/http refuses differing lengths
		default:
			f.cl = f.val
		}
	case hTransferEncoding:
		f.tes = min(f.tes+1, 2)
		if f.sub != vBad && f.pos == 7 {
			f.req |= rChunked
		} else {
			f.req &^= rChunked
		}
	}
	f.hdr = hOther
}

// endHead starts the body of a request whose head was read whole.
func (f *framer) endHead(hijacksReported bool) {
	f.requests++
	switch {
	case f.req&(rUpgrade|rConnect) != 0 && !hijacksReported:
		// After a 101 or a CONNECT's 2xx the bytes are not HTTP any more,
		// and without word of hijacks the framer cannot tell.
		f.pass(passTunnel)
	case f.req&rBad != 0:
		f.pass(passNotHTTP)
	case f.req&rEncoding != 0:
		// net/http takes one Transfer-Encoding line, "chunked", and
		// answers 501 to any other and closes.
		if f.tes != 1 || f.req&rChunked == 0 {
			f.pass(passNotHTTP)
			return
		}
		f.hexN, f.remain, f.st = 0, 0, sChunkSize
	case f.cl > 0:
		f.remain, f.st = uint64(f.cl), sBody
	default:
		f.st = sStart
	}
}

// chunkSize reads a byte of a chunk-size line, as net/http's chunked
// reader does: 1 to 16 hex digits, white space, an extension after ';',
// and CR LF.
func (f *framer) chunkSize(b byte) {
	var d byte
	switch {
	case '0' <= b && b <= '9':
		d = b - '0'
	case 'a' <= lower(b) && lower(b) <= 'f':
		d = lower(b) - 'a' + 10
	case f.hexN == 0:
		f.pass(passNotHTTP)
		return
	case b == ';':
		f.st = sChunkExt
		return
	case b == ' ' || b == '\t':
		f.st = sChunkWS
		return
	case b == '\r':
		f.st = sChunkLF
		return
	default:
		f.pass(passNotHTTP)
		return
	}
	if f.hexN == 16 {
		f.pass(passNotHTTP)
		return
	}
	f.hexN++
	f.remain = f.remain<<4 | uint64(d)
}
