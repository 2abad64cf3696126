package proxy

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Rewrite changes the path a route forwards. The zero value forwards the
// client's raw path untouched.
type Rewrite struct {
	// StripPrefix is the route's path to take off the front of the
	// forwarded path, as the route matched it (decoded form, "/app"):
	// /app/x goes as /x and /app as /. It is compared with the raw path in
	// its percent-encoded spelling, ignoring ASCII case; any other spelling
	// that reached the route (/%61pp/x, //app/x) is answered 404. Empty
	// means no strip; "/" is refused.
	StripPrefix string
	// AddPrefix is put in front of the forwarded path: it starts with /,
	// has no trailing /, no empty, . or .. segment, and only URL path
	// characters and valid escapes; at most 256 bytes.
	AddPrefix string
	// KeepLocation turns off the mapping of the upstream's Location back
	// under the client's prefix (see [Route]); the mapping is on by default
	// on a rewriting route.
	KeepLocation bool
}

// Errors of [CheckRewrite].
var (
	ErrStripRoot     = errors.New("proxy: stripPrefix on the root route")
	ErrStripInvalid  = errors.New("proxy: invalid stripPrefix")
	ErrAddPrefixPath = errors.New("proxy: invalid addPrefix")
)

// CheckRewrite reports every problem of a rewrite, joined, or nil.
func CheckRewrite(rw Rewrite) error {
	var errs []error
	if p := rw.StripPrefix; p != "" {
		switch t := strings.TrimSuffix(p, "/"); {
		case t == "":
			errs = append(errs, ErrStripRoot)
		case p[0] != '/' || strings.ContainsAny(p, "?#%\x00") || hasDotSegment(t) || !validRoutePath(t):
			errs = append(errs, fmt.Errorf("%w: %q", ErrStripInvalid, p))
		}
	}
	if p := rw.AddPrefix; p != "" && !validAddPrefix(p) {
		errs = append(errs, fmt.Errorf("%w: %q (want /segments of URL path characters, no trailing /, no . or .. segment, at most 256 bytes)", ErrAddPrefixPath, p))
	}
	return errors.Join(errs...)
}

func validRoutePath(p string) bool {
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return !strings.Contains(p, "//")
}

// validAddPrefix holds an added prefix to RFC 3986 path characters, valid
// escapes, no empty, dot or loosely escaped segment.
func validAddPrefix(p string) bool {
	if len(p) < 2 || len(p) > 256 || p[0] != '/' || p[len(p)-1] == '/' || strings.Contains(p, "//") {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/", c) >= 0:
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return false
			}
		default:
			return false
		}
	}
	return !hasDotSegment(p) && !hasLooseEscape(p)
}

// rewriter is a compiled Rewrite.
type rewriter struct {
	active   bool
	strip    string // the prefix in its percent-encoded spelling
	stripAlt string // the decoded spelling, when it differs
	add      string
	location bool
}

func newRewriter(rw Rewrite) (rewriter, error) {
	if err := CheckRewrite(rw); err != nil {
		return rewriter{}, err
	}
	r := rewriter{add: rw.AddPrefix, location: !rw.KeepLocation}
	if rw.StripPrefix != "" {
		p := strings.TrimSuffix(rw.StripPrefix, "/")
		r.strip = (&url.URL{Path: p}).EscapedPath()
		if r.strip != p {
			r.stripAlt = p
		}
	}
	r.active = r.strip != "" || r.add != ""
	return r, nil
}

// rawPath returns the path the client sent, undecoded: the request target
// up to the query (origin form), or the path of an absolute-form target.
func rawPath(r *http.Request) string {
	p := r.RequestURI
	if p == "" || p[0] != '/' {
		if i := strings.Index(p, "://"); i > 0 {
			p = p[i+3:]
			if j := strings.IndexByte(p, '/'); j >= 0 {
				p = p[j:]
			} else {
				p = "/"
			}
		} else {
			return r.URL.EscapedPath()
		}
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	return p
}

// apply returns the path to forward for a raw client path, or the status
// that refuses it: 404 for a spelling of the prefix that cannot be
// stripped, 400 for a dot segment or a loose escape. It allocates only when
// it adds a prefix.
func (rw *rewriter) apply(raw string) (string, int) {
	rest := raw
	if rw.strip != "" {
		n := prefixLen(raw, rw.strip)
		if n < 0 && rw.stripAlt != "" {
			n = prefixLen(raw, rw.stripAlt)
		}
		if n < 0 {
			return "", http.StatusNotFound
		}
		rest = raw[n:]
	}
	var out string
	switch {
	case rw.add != "":
		out = rw.add + rest
	case rest == "":
		out = "/"
	default:
		out = rest
	}
	if hasDotSegment(out) || hasLooseEscape(out) {
		return "", http.StatusBadRequest
	}
	return out, 0
}

// prefixLen returns len(prefix) when s starts with prefix, ignoring ASCII
// case, at a segment boundary; else -1.
func prefixLen(s, prefix string) int {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return -1
	}
	if len(s) > len(prefix) && s[len(prefix)] != '/' {
		return -1
	}
	return len(prefix)
}

// hasDotSegment reports whether a raw path holds a segment that an upstream
// could resolve as . or ..: after dropping its ;parameters and decoding
// %2e and %20 in any case, only dots and spaces with at least one dot.
// Segments are separated by /, \, %2F and %5C in any case.
func hasDotSegment(p string) bool {
	start := 0
	for i := 0; i <= len(p); {
		sep := 0
		switch {
		case i == len(p):
			sep = 1
		case p[i] == '/' || p[i] == '\\':
			sep = 1
		case p[i] == '%' && i+2 < len(p) && (p[i+1] == '2' && (p[i+2] == 'f' || p[i+2] == 'F') ||
			p[i+1] == '5' && (p[i+2] == 'c' || p[i+2] == 'C')):
			sep = 3
		}
		if sep == 0 {
			i++
			continue
		}
		if isDotSegment(p[start:i]) {
			return true
		}
		i += sep
		start = i
	}
	return false
}

func isDotSegment(s string) bool {
	if i := strings.IndexByte(s, ';'); i >= 0 {
		s = s[:i]
	}
	dots := 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '.':
			dots++
		case s[i] == ' ':
		case s[i] == '%' && i+2 < len(s) && s[i+1] == '2' && (s[i+2] == 'e' || s[i+2] == 'E'):
			dots++
			i += 2
		case s[i] == '%' && i+2 < len(s) && s[i+1] == '2' && s[i+2] == '0':
			i += 2
		default:
			return false
		}
	}
	return dots > 0
}

// hasLooseEscape reports whether a raw path holds an escape that an
// upstream decoding loosely could turn into something the gate never saw:
// %25 (double encoding), %c0 and %c1 (overlong UTF-8), IIS's %u, encoded
// controls (%00-%1f, %7f), a malformed escape, or a raw control character.
func hasLooseEscape(p string) bool {
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < 0x20 || c == 0x7f {
			return true
		}
		if c != '%' {
			continue
		}
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return true // includes %u
		}
		v := unhex(p[i+1])<<4 | unhex(p[i+2])
		if v == 0x25 || v == 0xc0 || v == 0xc1 || v < 0x20 || v == 0x7f {
			return true
		}
		i += 2
	}
	return false
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
