package proxy

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// Rewrite changes the path a route forwards. The zero value forwards the
// gate's forwarded spelling of the path ([gate.Request.ForwardPath])
// untouched.
type Rewrite struct {
	// StripPrefix is the route's path to take off the front of the
	// forwarded path, as the route matched it ("/app"): /app/x goes as /x
	// and /app as /. The gate has matched the request's path view on it,
	// so the forwarded path's first segments are its spelling of the
	// prefix, whatever their case, escapes or ;parameters; a request whose
	// view is not under the prefix (a Route used as the target of another
	// prefix) is answered 404. Empty means no strip; "/" is refused.
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

// CheckRewrite reports every problem of a rewrite, each a
// [ValidationError] with a path relative to it, joined, or nil.
func CheckRewrite(rw Rewrite) error {
	var errs problem.List
	if p := rw.StripPrefix; p != "" {
		switch t := strings.TrimSuffix(p, "/"); {
		case t == "":
			errs.Add(CodeRewriteStripPrefixRoot, "stripPrefix", "the route \"/\" has no prefix to strip")
		case gate.CheckPrefix(p) != nil:
			errs.Add(CodeRewriteStripPrefixInvalid, "stripPrefix", quote(p)+" is not a prefix the gate can match")
		}
	}
	if p := rw.AddPrefix; p != "" && !validAddPrefix(p) {
		errs.Add(CodeRewriteAddPrefixInvalid, "addPrefix", quote(p)+": want /segments of URL path characters and valid escapes, no trailing /, no empty, . or .. segment, at most 256 bytes")
	}
	return errs.Err()
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
		case c == '%': // ReadPath checks the escape
		default:
			return false
		}
	}
	// One reading only: no dot segment, no escape the gate would refuse
	// in a request, hex in upper case.
	v, err := gate.ReadPath(p)
	return err == nil && v.Needs == 0 && v.Forward == p
}

// rewriter is a compiled Rewrite.
type rewriter struct {
	active    bool
	strip     string // the prefix in its percent-encoded spelling, for Location
	stripView string // the prefix as the view spells it
	stripSegs int    // its segments
	add       string
	location  bool
}

func newRewriter(rw Rewrite) (rewriter, error) {
	if err := CheckRewrite(rw); err != nil {
		return rewriter{}, err
	}
	r := rewriter{add: rw.AddPrefix, location: !rw.KeepLocation}
	if rw.StripPrefix != "" {
		p := strings.TrimSuffix(rw.StripPrefix, "/")
		r.stripView = p
		r.stripSegs = strings.Count(p, "/")
		r.strip = (&url.URL{Path: p}).EscapedPath()
	}
	r.active = r.strip != "" || r.add != ""
	return r, nil
}

// apply returns the path to forward for the gate's forwarded spelling and
// path view, or 404 when the view is not under the prefix to strip. It
// allocates only when it adds a prefix.
func (rw *rewriter) apply(forward, view string) (string, int) {
	rest := forward
	if rw.strip != "" {
		if !gate.HasPathPrefix(view, rw.stripView) {
			return "", http.StatusNotFound
		}
		// The view and the forwarded spelling have the same segments:
		// drop as many as the prefix has.
		i := 0
		for n := 0; n < rw.stripSegs; n++ {
			j := strings.IndexByte(forward[i+1:], '/')
			if j < 0 {
				i = len(forward)
				break
			}
			i += 1 + j
		}
		rest = forward[i:]
	}
	switch {
	case rw.add != "":
		return rw.add + rest, 0
	case rest == "":
		return "/", 0
	}
	return rest, 0
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
