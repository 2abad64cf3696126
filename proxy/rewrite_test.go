package proxy

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRewriteApply(t *testing.T) {
	strip := mustRewriter(t, Rewrite{StripPrefix: "/app"})
	both := mustRewriter(t, Rewrite{StripPrefix: "/app", AddPrefix: "/api"})
	add := mustRewriter(t, Rewrite{AddPrefix: "/v2"})
	cafe := mustRewriter(t, Rewrite{StripPrefix: "/café"})
	for _, tc := range []struct {
		rw     *rewriter
		in     string
		out    string
		status int
	}{
		{strip, "/app/x", "/x", 0},
		{strip, "/app", "/", 0},
		{strip, "/APP/x", "/x", 0},
		{strip, "/app/group%2Fproject", "/group%2Fproject", 0},
		{both, "/app/x", "/api/x", 0},
		{both, "/app", "/api", 0},
		{add, "/x/y", "/v2/x/y", 0},
		{cafe, "/caf%C3%A9/x", "/x", 0},
		{cafe, "/caf%c3%a9/x", "/x", 0},
		// Spellings of the prefix that cannot be stripped.
		{strip, "/%61pp/x", "", 404},
		{strip, "//app/x", "", 404},
		{strip, "/app;v=1/x", "", 404},
		{strip, "/apple", "", 404},
		// Dot segments in any spelling, on any rewritten route.
		{strip, "/app/../x", "", 400},
		{strip, "/app/%2e%2e/x", "", 400},
		{strip, "/app/%2E%2e/x", "", 400},
		{strip, "/app/.%2e/x", "", 400},
		{strip, "/app/..;x/y", "", 400},
		{strip, "/app/./x", "", 400},
		{strip, "/app/x/..", "", 400},
		{strip, "/app/x\\..\\y", "", 400},
		{strip, "/app/x%2F..%2Fy", "", 400},
		{strip, "/app/x%5c..%5Cy", "", 400},
		{strip, "/app/.%20./y", "", 400},
		{add, "/../../v2/x", "", 400},
		// Loose escapes.
		{strip, "/app/%252e%252e/x", "", 400},
		{strip, "/app/%c0%ae/x", "", 400},
		{strip, "/app/%C1%9c", "", 400},
		{strip, "/app/%u002e", "", 400},
		{strip, "/app/a%00b", "", 400},
		{strip, "/app/a%1fb", "", 400},
		{strip, "/app/a%7Fb", "", 400},
		{strip, "/app/a\x01b", "", 400},
		{strip, "/app/a%zz", "", 400},
		{strip, "/app/a%", "", 400},
		// Ordinary segments that merely hold dots go.
		{strip, "/app/...x/a.b/.well-known", "/...x/a.b/.well-known", 0},
	} {
		out, status := tc.rw.apply(tc.in)
		assert.Equal(t, tc.status, status, tc.in)
		assert.Equal(t, tc.out, out, tc.in)
	}
}

func TestCheckRewrite(t *testing.T) {
	assert.ErrorIs(t, CheckRewrite(Rewrite{StripPrefix: "/"}), ErrStripRoot)
	assert.ErrorIs(t, CheckRewrite(Rewrite{StripPrefix: "/a/../b"}), ErrStripInvalid)
	for _, p := range []string{"api", "/api/", "/a//b", "/a/%2e%2e", "/a/./b", "/a b", "/a%2", "/a/%252e", "/" + strings.Repeat("a", 300)} {
		assert.ErrorIs(t, CheckRewrite(Rewrite{AddPrefix: p}), ErrAddPrefixPath, p)
	}
	assert.NoError(t, CheckRewrite(Rewrite{StripPrefix: "/app", AddPrefix: "/api/v1;x=1/~me"}))
}

func TestRawPath(t *testing.T) {
	for in, want := range map[string]string{
		"/a%2Fb?x=1":            "/a%2Fb",
		"http://h.test/p%20q?x": "/p%20q",
		"https://h.test":        "/",
		"/":                     "/",
	} {
		r, err := http.NewRequest("GET", in, nil)
		require.NoError(t, err)
		r.RequestURI = in
		assert.Equal(t, want, rawPath(r), in)
	}
}

func mustRewriter(t testing.TB, rw Rewrite) *rewriter {
	r, err := newRewriter(rw)
	require.NoError(t, err)
	return &r
}

// FuzzRewrite checks the path checker: what it forwards holds no dot
// segment (by an independent decoder) and no loose escape, starts with the
// added prefix, and is the raw rest of the input.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{"/app/x", "/app/%2e%2e/x", "/app/..;x", "/app/%252e", "/app/a%5C..", "/APP", "/app/.%2E/", "/app/%u2215"} {
		f.Add(s)
	}
	rw := mustRewriter(f, Rewrite{StripPrefix: "/app", AddPrefix: "/api"})
	f.Fuzz(func(t *testing.T, in string) {
		out, status := rw.apply(in)
		if status != 0 {
			if status != 400 && status != 404 {
				t.Fatalf("%q: status %d", in, status)
			}
			return
		}
		if !strings.HasPrefix(out, "/api") || !strings.EqualFold(in[:4], "/app") || out[4:] != in[4:] {
			t.Fatalf("%q forwarded as %q", in, out)
		}
		for _, seg := range refSegments(out) {
			if refIsDots(seg) {
				t.Fatalf("%q forwarded dot segment %q in %q", in, seg, out)
			}
		}
		if strings.Contains(strings.ToLower(out), "%25") || strings.Contains(strings.ToLower(out), "%c0") {
			t.Fatalf("%q forwarded a loose escape: %q", in, out)
		}
	})
}

var refSep = regexp.MustCompile(`(?i)/|\\|%2f|%5c`)

func refSegments(p string) []string { return refSep.Split(p, -1) }

func refIsDots(seg string) bool {
	seg, _, _ = strings.Cut(seg, ";")
	seg = strings.NewReplacer("%2e", ".", "%2E", ".", "%20", " ").Replace(seg)
	return strings.Trim(seg, ". ") == "" && strings.Contains(seg, ".")
}

func TestMapLocation(t *testing.T) {
	strip := mustRewriter(t, Rewrite{StripPrefix: "/app"})
	both := mustRewriter(t, Rewrite{StripPrefix: "/app", AddPrefix: "/api"})
	add := mustRewriter(t, Rewrite{AddPrefix: "/v2"})
	keep := mustRewriter(t, Rewrite{StripPrefix: "/app", KeepLocation: true})
	const reqHost, sent = "app.test", "backend.internal:8080"
	for _, tc := range []struct {
		rw       *rewriter
		in, want string // want "" means left alone
	}{
		{strip, "/login", "/app/login"},
		{strip, "/login?next=/x#f", "/app/login?next=/x#f"},
		{strip, "/", "/app/"},
		{strip, "/app/login", ""},
		{strip, "/APP/login", ""},
		{strip, "//cdn.test/x", ""},
		{strip, "/\\cdn.test/x", ""},
		{strip, "login", ""},
		{both, "/api/login", "/app/login"},
		{both, "/api", "/app"},
		{both, "/apiary", ""},
		{both, "/other", ""},
		{add, "/v2/x", "/x"},
		{add, "/v2", "/"},
		{add, "/x", ""},
		{both, "https://app.test/api/login", "https://app.test/app/login"},
		{both, "HTTP://APP.TEST/api/x?y", "HTTP://APP.TEST/app/x?y"},
		{both, "http://backend.internal:8080/api/x", "https://app.test/app/x"},
		{strip, "http://backend.internal:8080", "https://app.test/app/"},
		{both, "http://backend.internal:8080/elsewhere", "https://app.test/elsewhere"},
		{add, "http://backend.internal:8080/v2/x", ""},
		{both, "https://other.test/api/x", ""},
		{both, "http://backend.internal:9090/api/x", ""},
		{keep, "/login", ""},
		{strip, "", ""},
	} {
		got, ok := tc.rw.mapLocation(tc.in, reqHost, sent, "https")
		if tc.want == "" {
			assert.False(t, ok, "%q -> %q", tc.in, got)
		} else {
			assert.True(t, ok, tc.in)
			assert.Equal(t, tc.want, got, tc.in)
		}
	}
	var none rewriter
	_, ok := none.mapLocation("/x", reqHost, sent, "http")
	assert.False(t, ok, "a route without a rewrite maps nothing")
}

// FuzzLocation checks the Location mapper never panics, never turns a
// reference into a protocol-relative one, and never moves a Location to a
// host other than the request's.
func FuzzLocation(f *testing.F) {
	for _, s := range []string{"/login", "/api/x", "http://backend.internal:8080/api/x", "//evil/x", "/\\evil", "https://app.test/api", "http://backend.internal:8080"} {
		f.Add(s)
	}
	rws := []*rewriter{
		mustRewriter(f, Rewrite{StripPrefix: "/app"}),
		mustRewriter(f, Rewrite{StripPrefix: "/app", AddPrefix: "/api"}),
		mustRewriter(f, Rewrite{AddPrefix: "/api"}),
	}
	f.Fuzz(func(t *testing.T, loc string) {
		for _, rw := range rws {
			got, ok := rw.mapLocation(loc, "app.test", "backend.internal:8080", "https")
			if !ok {
				continue
			}
			if strings.HasPrefix(got, "//") || strings.HasPrefix(got, "/\\") {
				t.Fatalf("%q mapped to protocol-relative %q", loc, got)
			}
			if got[0] != '/' {
				rest := got[strings.Index(got, "://")+3:]
				if !strings.HasPrefix(strings.ToLower(rest), "app.test") {
					t.Fatalf("%q mapped to another host: %q", loc, got)
				}
			}
		}
	})
}

func TestNegotiate(t *testing.T) {
	def := []coding{codingGzip, codingZstd, codingBrotli}
	brFirst := []coding{codingBrotli, codingGzip}
	for _, tc := range []struct {
		ae    string
		order []coding
		want  coding
	}{
		{"gzip, deflate, br, zstd", def, codingGzip},
		{"gzip, deflate, br, zstd", brFirst, codingBrotli},
		{"br;q=1.0, gzip;q=0.8", def, codingBrotli},
		{"gzip;q=0, br", def, codingBrotli},
		{"deflate, identity", def, codingNone},
		{"*", def, codingGzip},
		{"*;q=0.5, gzip;q=0.4", def, codingZstd},
		{"x-gzip", def, codingGzip},
		{"GZIP;Q=0.5", def, codingGzip},
		{"gzip;q=1.5", def, codingNone},
		{"gzip;q=abc, zstd;q=0.001", def, codingZstd},
		{"", def, codingNone},
		{"zstd", []coding{codingGzip}, codingNone},
	} {
		assert.Equal(t, tc.want, negotiate([]string{tc.ae}, tc.order), tc.ae)
	}
}

// FuzzAcceptEncoding checks the q-value parser against a reference built
// on the standard library.
func FuzzAcceptEncoding(f *testing.F) {
	for _, s := range []string{"gzip, br;q=0.9", "*;q=0.1, zstd;q=0", "x-gzip;q=0.500", "br;q=1.000;foo=bar", "gzip;q=1.0001"} {
		f.Add(s)
	}
	order := []coding{codingGzip, codingZstd, codingBrotli}
	f.Fuzz(func(t *testing.T, ae string) {
		if got, want := negotiate([]string{ae}, order), refNegotiate(ae, order); got != want {
			t.Fatalf("%q: got %v, reference %v", ae, got, want)
		}
	})
}

var refQ = regexp.MustCompile(`^(0(\.[0-9]{0,3})?|1(\.0{0,3})?)$`)

func refNegotiate(ae string, order []coding) coding {
	q := map[coding]float64{}
	star := -1.0
	for _, el := range strings.Split(ae, ",") {
		parts := strings.Split(el, ";")
		name := strings.ToLower(strings.Trim(parts[0], " \t"))
		qv, ok := 1.0, true
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			if k = strings.Trim(k, " \t"); k == "q" || k == "Q" {
				v = strings.Trim(v, " \t")
				if !refQ.MatchString(v) {
					ok = false
				} else {
					qv, _ = strconv.ParseFloat(v, 64)
				}
				break
			}
		}
		if !ok {
			continue
		}
		var c coding
		switch name {
		case "*":
			star = qv
			continue
		case "gzip", "x-gzip":
			c = codingGzip
		case "zstd":
			c = codingZstd
		case "br":
			c = codingBrotli
		default:
			continue
		}
		if old, seen := q[c]; !seen || qv > old {
			q[c] = qv
		}
	}
	best, pick := 0.0, codingNone
	for _, c := range order {
		qc, seen := q[c]
		if !seen {
			qc = max(star, 0)
		}
		if qc > best+1e-9 {
			best, pick = qc, c
		}
	}
	return pick
}
