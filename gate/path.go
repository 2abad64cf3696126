package gate

import (
	"errors"
	"net/http"
	"strings"
)

// The path view.
//
// A gateway that decides on one reading of a path and forwards another
// lets a client pick the reading: "/secret/..;/" matched the open route "/"
// of gateways that cleaned the path for matching and forwarded it raw,
// while Tomcat resolved it to "/secret/". The gate reads a path once, with
// [ReadPath], into the view routes, rules, limits and the trace see
// ([PathView.Match]) and the spelling it forwards ([PathView.Forward]).
// Every spelling that some upstream could resolve to another path is
// refused with 400, so the two cannot disagree:
//
//   - dot segments in any spelling: ".", "..", "..;x", ". .", and any
//     escape of a dot (%2E), which is refused wherever it stands;
//   - backslashes, raw ("\") everywhere, and escaped (%5C) by default:
//     Windows and some frameworks take them for "/";
//   - escaped "/", "?", "#", ";" and "%" (double encoding) by default:
//     an upstream that decodes them splits, cuts or decodes the path
//     again after the gate matched it;
//   - empty segments ("//") by default: nginx and others merge them;
//   - control characters and NUL, raw or escaped; raw spaces and "#";
//     malformed escapes; overlong UTF-8 (%C0, %C1, %E0%80-%9F,
//     %F0%80-%8F), which lax decoders read as "/" and ".".
//
// A route may allow the default refusals one by one ([PathAllow]); the
// upstream behind it then has to guarantee what each name says.
//
// What remains has one reading. Escapes of unreserved characters
// (letters, digits, "-", "_", "~") are decoded and other escapes get upper
// case hex, in the view and in the forwarded spelling alike (RFC 3986
// section 6.2.2), so "/%73ecret" is "/secret" to the route and to the
// upstream. Segment parameters (";v=1") are dropped from the view and
// forwarded as sent: "/secret;x/" matches the routes and rules of
// "/secret/", which is how Tomcat, Jetty and Spring resolve it; servers
// that read ";" as a plain character resolve it to a path that is not
// under "/secret" at all, so the view is the most privileged reading of
// every upstream. For the same reason the view drops what Windows drops
// from a name: trailing dots and spaces ("/secret./" is "/secret/") and
// the default NTFS stream ("/secret::$DATA"). Route prefixes and rule
// paths match ASCII letters in any case ("/ADMIN" is under "/admin"),
// because case-insensitive upstreams (Windows, IIS, some frameworks)
// resolve them so; the forwarded spelling keeps the client's case.

// PathAllow is a set of path spellings the gate refuses by default and a
// route may accept. The zero value accepts none of them.
type PathAllow uint16

const (
	// AllowEncodedSlash accepts %2F inside a segment. The upstream must
	// not decode it before it routes (GitLab's and Nexus' project paths
	// need it).
	AllowEncodedSlash PathAllow = 1 << iota
	// AllowEncodedBackslash accepts %5C. The upstream must not read "\"
	// as a separator.
	AllowEncodedBackslash
	// AllowEncodedQuestionMark accepts %3F. The upstream must not decode
	// the path and parse it again as a URL.
	AllowEncodedQuestionMark
	// AllowEncodedHash accepts %23 (Matrix room aliases need it). The
	// upstream must not decode the path and parse it again as a URL.
	AllowEncodedHash
	// AllowEncodedSemicolon accepts %3B. The upstream must not decode it
	// before it splits segment parameters.
	AllowEncodedSemicolon
	// AllowEncodedPercent accepts %25. The upstream must decode the path
	// once only.
	AllowEncodedPercent
	// AllowEmptySegments accepts "//". The upstream must not merge
	// slashes (nginx's merge_slashes off; Go's ServeMux redirects the
	// client to the merged path, which comes back through the gate).
	AllowEmptySegments

	pathAllowAll = AllowEmptySegments<<1 - 1
)

var pathAllowNames = [...]string{
	"encodedSlash", "encodedBackslash", "encodedQuestionMark", "encodedHash",
	"encodedSemicolon", "encodedPercent", "emptySegments",
}

// PathAllowNames returns the names of the PathAllow values, in order:
// the names a config document uses.
func PathAllowNames() []string { return pathAllowNames[:] }

// ParsePathAllow returns the PathAllow value a name stands for.
func ParsePathAllow(name string) (PathAllow, bool) {
	for i, n := range pathAllowNames {
		if n == name {
			return 1 << i, true
		}
	}
	return 0, false
}

// String returns the names in the set, comma-separated.
func (a PathAllow) String() string {
	var b strings.Builder
	for i, n := range pathAllowNames {
		if a&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(n)
		}
	}
	if rest := a &^ pathAllowAll; rest != 0 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString("invalid")
	}
	return b.String()
}

// refusal returns the constant reason a route that does not allow need
// gives in its 400.
func (a PathAllow) refusal() string {
	for i := range pathAllowNames {
		if a&(1<<i) != 0 {
			return pathNeedReasons[i]
		}
	}
	return ""
}

var pathNeedReasons = [...]string{
	"path has %2F, which the route does not allow",
	"path has %5C, which the route does not allow",
	"path has %3F, which the route does not allow",
	"path has %23, which the route does not allow",
	"path has %3B, which the route does not allow",
	"path has %25, which the route does not allow",
	"path has an empty segment (//), which the route does not allow",
}

// Errors of [ReadPath]. Each is answered 400 by the gate.
var (
	ErrPathNotAbsolute = errors.New("gate: path does not start with /")
	ErrPathDotSegment  = errors.New("gate: path has a dot segment")
	ErrPathCharacter   = errors.New("gate: path has a control character, space, backslash or #")
	ErrPathEscape      = errors.New("gate: path has a malformed escape or an escaped dot, control character or overlong UTF-8 byte")
)

// PathView is how the gate reads a request path.
type PathView struct {
	// Match is what routes, rules, limits and the trace see: the path
	// with unreserved escapes decoded, other escapes of reserved
	// characters kept (upper case hex) so they never act as delimiters,
	// the rest decoded, and segment parameters dropped.
	Match string
	// Forward is the spelling to send upstream: the client's path with
	// unreserved escapes decoded and other escapes in upper case hex;
	// segment parameters kept.
	Forward string
	// Needs lists the default refusals the path would need a route to
	// allow.
	Needs PathAllow
}

// ReadPath reads a path as received (percent-encoded, without the query)
// into its view, or returns one of the ErrPath errors. A path with no
// escape and no ";" is its own view, read without allocation; any other
// costs at most two strings.
func ReadPath(raw string) (PathView, error) {
	if raw == "" || raw[0] != '/' {
		return PathView{}, ErrPathNotAbsolute
	}
	if plainPath(raw) {
		return PathView{Match: raw, Forward: raw}, nil
	}
	var needs PathAllow
	rebuild := false
	params := false         // a ';' was seen in the current segment
	dots, other := 0, false // what the current segment's name holds
	var last, prev byte     // the name's last byte; the byte before (decoded)
	for i := 1; ; i++ {
		if i == len(raw) || raw[i] == '/' {
			if dots > 0 && !other {
				return PathView{}, ErrPathDotSegment
			}
			if i < len(raw) && dots == 0 && !other {
				needs |= AllowEmptySegments // "//" or "/;x/"
			}
			if last == '.' || last == ' ' {
				rebuild = true // Windows drops the name's trailing dots and spaces
			}
			if i == len(raw) {
				break
			}
			dots, other, params, last, prev = 0, false, false, 0, 0
			continue
		}
		c := raw[i]
		v := c
		switch {
		case c == ';':
			params, rebuild = true, true
			continue
		case c == '%':
			if i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2]) {
				return PathView{}, ErrPathEscape
			}
			v = unhex(raw[i+1])<<4 | unhex(raw[i+2])
			switch {
			case v < 0x20, v == 0x7f, v == '.':
				return PathView{}, ErrPathEscape
			case v == ' ':
				// A space counts as neither a dot nor a name: Windows
				// trims ". ." to "..".
			default:
				if !params {
					other = true
				}
				needs |= reservedNeed(v)
			}
			rebuild = true
			i += 2
		case c <= ' ' || c == 0x7f || c == '\\' || c == '#':
			return PathView{}, ErrPathCharacter
		case c == '.':
			if !params {
				dots++
			}
		default:
			if !params {
				other = true
			}
			if c == '$' {
				rebuild = true // perhaps an NTFS "::$DATA" stream
			}
		}
		if v == 0xc0 || v == 0xc1 || overlong(prev, v) {
			return PathView{}, ErrPathEscape
		}
		prev = v
		if !params {
			last = v
		}
	}
	if !rebuild {
		return PathView{Match: raw, Forward: raw, Needs: needs}, nil
	}
	match := matchView(raw)
	if strings.Contains(match, "//") {
		needs |= AllowEmptySegments // a name Windows reads as empty
	}
	return PathView{Match: match, Forward: forwardSpelling(raw), Needs: needs}, nil
}

// overlong reports whether the bytes b1 b2 start an overlong UTF-8
// sequence of three or four bytes (%E0%80%AE is "." to a lax decoder).
func overlong(b1, b2 byte) bool {
	return b1 == 0xe0 && b2 >= 0x80 && b2 < 0xa0 || b1 == 0xf0 && b2 >= 0x80 && b2 < 0x90
}

// plainPath reports whether a path has no byte that needs a second look
// (escapes, ";", controls, spaces, backslashes, "#", "$", non-ASCII) and no
// segment that starts or ends with a dot or is empty: the common path, its
// own view. It reads each byte once.
func plainPath(p string) bool {
	n, ok := plainPrefix(p)
	return ok && n == len(p)
}

// plainPrefix is plainPath for an origin-form request target: it stops at
// a "?" and returns the length of the path before it.
func plainPrefix(p string) (int, bool) {
	for i := 0; i < len(p); i++ {
		switch pathClass[p[i]] {
		case pathPlain:
		case pathSlash:
			if i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.') {
				return 0, false // "//", or a name that starts with a dot
			}
		case pathDot:
			if i+1 == len(p) || p[i+1] == '/' || p[i+1] == '?' {
				return 0, false // a name that ends with a dot
			}
		case pathQuery:
			return i, true
		default:
			return 0, false
		}
	}
	return len(p), true
}

// Byte classes of plainPath.
const (
	pathPlain = iota
	pathSlash
	pathDot
	pathQuery   // "?": plainPrefix stops there
	pathSpecial // ReadPath must look at it
)

var pathClass = func() (t [256]uint8) {
	for c := 0; c <= ' '; c++ {
		t[c] = pathSpecial
	}
	for c := 0x7f; c < 0x100; c++ {
		t[c] = pathSpecial
	}
	for _, c := range "%;\\#$" {
		t[c] = pathSpecial
	}
	t['/'], t['.'], t['?'] = pathSlash, pathDot, pathQuery
	return t
}()

// reservedNeed returns the PathAllow an escaped byte needs, or 0.
func reservedNeed(v byte) PathAllow {
	switch v {
	case '/':
		return AllowEncodedSlash
	case '\\':
		return AllowEncodedBackslash
	case '?':
		return AllowEncodedQuestionMark
	case '#':
		return AllowEncodedHash
	case ';':
		return AllowEncodedSemicolon
	case '%':
		return AllowEncodedPercent
	}
	return 0
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '~'
}

const upperHex = "0123456789ABCDEF"

// forwardSpelling decodes unreserved escapes and upper-cases the hex of
// the others. raw has passed ReadPath's checks.
func forwardSpelling(raw string) string {
	changed := false
	for i := 0; i < len(raw); i++ {
		if raw[i] == '%' {
			v := unhex(raw[i+1])<<4 | unhex(raw[i+2])
			if isUnreserved(v) || raw[i+1] != upperHex[v>>4] || raw[i+2] != upperHex[v&15] {
				changed = true
				break
			}
			i += 2
		}
	}
	if !changed {
		return raw
	}
	b := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '%' {
			b = append(b, c)
			continue
		}
		v := unhex(raw[i+1])<<4 | unhex(raw[i+2])
		if isUnreserved(v) {
			b = append(b, v)
		} else {
			b = append(b, '%', upperHex[v>>4], upperHex[v&15])
		}
		i += 2
	}
	return string(b)
}

// matchView drops segment parameters, keeps escapes of reserved
// characters (upper case) and decodes the others, and drops what Windows
// drops from a name: trailing dots and spaces, and the "::$DATA" of the
// default NTFS stream. raw has passed ReadPath's checks.
func matchView(raw string) string {
	b := make([]byte, 0, len(raw))
	params := false
	start := 1 // of the current name in b
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '/':
			if i > 0 {
				b = windowsName(b, start)
			}
			params = false
			b = append(b, c)
			start = len(b)
		case params:
		case c == ';':
			params = true
		case c == '%':
			v := unhex(raw[i+1])<<4 | unhex(raw[i+2])
			if reservedNeed(v) != 0 {
				b = append(b, '%', upperHex[v>>4], upperHex[v&15])
			} else {
				b = append(b, v)
			}
			i += 2
		default:
			b = append(b, c)
		}
	}
	return string(windowsName(b, start))
}

// windowsName trims the name b[start:] as Windows reads it ("::$DATA"
// alone becomes empty).
func windowsName(b []byte, start int) []byte {
	for {
		n := len(b)
		for n > start && (b[n-1] == '.' || b[n-1] == ' ') {
			n--
		}
		const stream = "::$data"
		if n-start >= len(stream) && equalLower(string(b[n-len(stream):n]), stream) {
			b = b[:n-len(stream)]
			continue
		}
		return b[:n]
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// readRequestPath reads the path of r's request target: the common
// origin-form target without anything to look at is its own view, read in
// one pass.
func readRequestPath(r *http.Request) (PathView, error) {
	if u := r.RequestURI; len(u) > 0 && u[0] == '/' {
		if n, ok := plainPrefix(u); ok {
			return PathView{Match: u[:n], Forward: u[:n]}, nil
		}
	}
	return ReadPath(RequestPath(r))
}

// RequestPath returns the path of r's request target as the client sent
// it, undecoded and without the query: from the origin form, or the path
// of an absolute-form target ("/" when it has none). A request built by
// hand without RequestURI gives r.URL.EscapedPath().
func RequestPath(r *http.Request) string {
	p := r.RequestURI
	if p == "" {
		return r.URL.EscapedPath()
	}
	if p[0] != '/' {
		i := strings.Index(p, "://")
		if i <= 0 {
			return p // "*" or garbage: ReadPath refuses it
		}
		p = p[i+3:]
		j := strings.IndexAny(p, "/?")
		if j < 0 || p[j] == '?' {
			return "/"
		}
		p = p[j:]
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
}

// CheckPrefix reports whether p can be a route prefix or a rule's path:
// empty, or starting with "/", in the view's own spelling (no escapes, no
// ";", no dot or empty segment, no control character, space, backslash,
// "?" or "#"). The error is one of the ErrPath errors or
// [ErrPrefixSpelling].
func CheckPrefix(p string) error {
	if p == "" {
		return nil
	}
	if p[0] != '/' {
		return ErrPathNotAbsolute
	}
	if strings.ContainsAny(p, "%;?") {
		return ErrPrefixSpelling
	}
	v, err := ReadPath(p)
	if err != nil {
		return err
	}
	if v.Needs != 0 || v.Match != p {
		return ErrPrefixSpelling
	}
	return nil
}

// ErrPrefixSpelling reports a route prefix or rule path that requests can
// never match: it holds an escape, ";", "?", an empty segment, or a name
// that ends with a dot or "::$DATA", none of which the view ever has.
var ErrPrefixSpelling = errors.New("gate: a prefix is written as the view spells paths: no %, ;, ? or //")

// HasPathPrefix reports whether a path view is under prefix, as routes
// match: at a segment boundary, ASCII letters in any case. An empty prefix
// or "/" matches everything; a trailing "/" of prefix is ignored.
func HasPathPrefix(path, prefix string) bool {
	prefix = strings.TrimSuffix(prefix, "/")
	if prefix == "" {
		return true
	}
	return len(path) >= len(prefix) && equalFoldASCII(path[:len(prefix)], prefix) &&
		(len(path) == len(prefix) || path[len(prefix)] == '/')
}

// lowerASCII returns s with ASCII letters in lower case (and nothing else
// folded, unlike strings.ToLower).
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// equalLower reports whether s equals lower, a string already in lower
// case, with ASCII letters of s in any case.
func equalLower(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// underLower is HasPathPrefix for a prefix already in lower case and
// without a trailing "/".
func underLower(path, lower string) bool {
	return lower == "" || len(path) >= len(lower) && equalLower(path[:len(lower)], lower) &&
		(len(path) == len(lower) || path[len(lower)] == '/')
}

// equalFoldASCII reports whether a and b are equal with ASCII letters in
// any case. Unlike strings.EqualFold it folds nothing else, so lengths in
// bytes always agree.
func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
