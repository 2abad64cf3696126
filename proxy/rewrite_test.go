package proxy

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRewriteApply(t *testing.T) {
	strip := mustRewriter(t, Rewrite{StripPrefix: "/app"})
	deep := mustRewriter(t, Rewrite{StripPrefix: "/app/v1/"})
	both := mustRewriter(t, Rewrite{StripPrefix: "/app", AddPrefix: "/api"})
	add := mustRewriter(t, Rewrite{AddPrefix: "/v2"})
	cafe := mustRewriter(t, Rewrite{StripPrefix: "/café"})
	for _, tc := range []struct {
		rw     *rewriter
		in     string // as the client spelled it
		out    string
		status int
	}{
		{strip, "/app/x", "/x", 0},
		{strip, "/app", "/", 0},
		{strip, "/app/", "/", 0},
		{strip, "/APP/x", "/x", 0},
		{strip, "/app/group%2Fproject", "/group%2Fproject", 0},
		{deep, "/app/v1/x/y", "/x/y", 0},
		{deep, "/App/V1", "/", 0},
		{both, "/app/x", "/api/x", 0},
		{both, "/app", "/api", 0},
		{add, "/x/y", "/v2/x/y", 0},
		{add, "/", "/v2/", 0},
		{cafe, "/caf%C3%A9/x", "/x", 0},
		{cafe, "/caf%c3%a9/x", "/x", 0},
		// Every spelling of the prefix the gate matched is stripped: the
		// view and the forwarded path have the same segments.
		{strip, "/%61pp/x", "/x", 0},
		{strip, "/app;v=1/x", "/x", 0},
		{strip, "/app/x;y=1/%7ez", "/x;y=1/~z", 0},
		// A view that is not under the prefix.
		{strip, "/apple", "", 404},
		{strip, "//app/x", "", 404},
		{deep, "/app/v2/x", "", 404},
	} {
		v, err := gate.ReadPath(tc.in)
		require.NoError(t, err, tc.in)
		out, status := tc.rw.apply(v.Forward, v.Match, &gate.Request{})
		assert.Equal(t, tc.status, status, tc.in)
		assert.Equal(t, tc.out, out, tc.in)
	}
}

func TestCheckRewrite(t *testing.T) {
	only := func(err error) string {
		t.Helper()
		ps := problem.All(err)
		require.Len(t, ps, 1, "%v", err)
		return ps[0].Code + " " + ps[0].Path
	}
	assert.Equal(t, CodeRewriteStripPrefixRoot+" stripPrefix", only(CheckRewrite(Rewrite{StripPrefix: "/"})))
	for _, p := range []string{"/a/../b", "app", "/a;b", "/a%2Fb", "/a//b", "/a?b", "/a\\b"} {
		assert.Equal(t, CodeRewriteStripPrefixInvalid+" stripPrefix", only(CheckRewrite(Rewrite{StripPrefix: p})), p)
	}
	for _, p := range []string{"api", "/api/", "/a//b", "/a/%2e%2e", "/a/./b", "/a b", "/a%2", "/a/%252e", "/a%2fb", "/a%3Fb", "/a%61", "/" + strings.Repeat("a", 300)} {
		assert.Equal(t, CodeRewriteAddPrefixInvalid+" addPrefix", only(CheckRewrite(Rewrite{AddPrefix: p})), p)
	}
	for _, p := range []string{"api/{rest}", "/a/{rest", "/a/rest}", "/a/{}", "/a/{x y}", "/a/{id:int}", "/a//{x}", "/a/../{x}", "/a/{x}/%2e", "/a b/{x}", "/a%2F/{x}", "/" + strings.Repeat("a", 300)} {
		assert.Equal(t, CodeRewriteTemplateInvalid+" template", only(CheckRewrite(Rewrite{Template: p})), p)
	}
	assert.Equal(t, CodeRewriteTemplateConflict+" template", only(CheckRewrite(Rewrite{Template: "/a/{x}", AddPrefix: "/b"})))
	assert.Equal(t, CodeRewriteTemplateConflict+" template", only(CheckRewrite(Rewrite{Template: "/a/{x}", StripPrefix: "/b"})))
	for _, p := range []string{"/api/{rest}", "/api/{**rest}/", "/{a}{b}", "/v2;x=1/{id}/~me/%C3%A9", "/fixed", "/"} {
		assert.NoError(t, CheckRewrite(Rewrite{Template: p}), p)
	}
	assert.NoError(t, CheckRewrite(Rewrite{StripPrefix: "/app", AddPrefix: "/api/v1;x=1/~me/%C3%A9"}))
	assert.Len(t, problem.All(CheckRewrite(Rewrite{StripPrefix: "/", AddPrefix: "x"})), 2, "every problem at once")
}

func mustRewriter(t testing.TB, rw Rewrite) *rewriter {
	t.Helper()
	r, err := newRewriter(rw)
	require.NoError(t, err)
	return &r
}

// FuzzRewrite checks rewriting against a reference written from the
// definition, over several rewriters: for a path the gate accepts, a
// stripping route forwards exactly the added prefix's segments followed by
// the forwarded path's segments after as many as the prefix has, when the
// view's first segments are the prefix's in any ASCII case, and answers
// 404 otherwise.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{"/app/x", "/APP/v1/x", "/app;v=1/x", "/%61pp/x", "/apple", "/app", "/app/", "//app", "/caf%C3%A9/x", "/app/v1"} {
		f.Add(s, uint8(0))
	}
	rws := []Rewrite{
		{StripPrefix: "/app"},
		{StripPrefix: "/app/v1/"},
		{StripPrefix: "/app", AddPrefix: "/api"},
		{AddPrefix: "/v2/x"},
		{StripPrefix: "/café", AddPrefix: "/b"},
		{StripPrefix: "/app", KeepLocation: true},
	}
	compiled := make([]*rewriter, len(rws))
	for i, rw := range rws {
		compiled[i] = mustRewriter(f, rw)
	}
	f.Fuzz(func(t *testing.T, in string, which uint8) {
		v, err := gate.ReadPath(in)
		if err != nil {
			return
		}
		cfg := rws[int(which)%len(rws)]
		out, status := compiled[int(which)%len(rws)].apply(v.Forward, v.Match, &gate.Request{})

		// The reference.
		fwd := strings.Split(v.Forward, "/")[1:] // segments, "" for a trailing slash
		view := strings.Split(v.Match, "/")[1:]
		if len(fwd) != len(view) {
			t.Fatalf("%q: forwarded %q and view %q have different segments", in, v.Forward, v.Match)
		}
		rest := fwd
		if cfg.StripPrefix != "" {
			pre := strings.Split(strings.TrimSuffix(cfg.StripPrefix, "/"), "/")[1:]
			under := len(view) >= len(pre)
			for i := 0; under && i < len(pre); i++ {
				under = asciiFold(view[i]) == asciiFold(pre[i])
			}
			if !under {
				if status != 404 {
					t.Fatalf("%q under %+v: status %d, want 404", in, cfg, status)
				}
				return
			}
			rest = fwd[len(pre):]
		}
		want := cfg.AddPrefix + "/" + strings.Join(rest, "/")
		if len(rest) == 0 {
			want = cmpOr(cfg.AddPrefix, "/")
		}
		if status != 0 || out != want {
			t.Fatalf("%q under %+v: got %q (%d), want %q", in, cfg, out, status, want)
		}
	})
}

func asciiFold(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
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

// FuzzLocation checks the Location mapper as a browser would follow what
// it returns: a mapped path-absolute reference never becomes
// protocol-relative, a mapped absolute URL names exactly the request's
// host by net/url, and the mapping round-trips: the request the client
// then makes is rewritten to the path the upstream named (or refused as a
// path the rewriter never forwards).
func FuzzLocation(f *testing.F) {
	for _, s := range []string{"/login", "/api/x", "http://backend.internal:8080/api/x", "//evil/x", "/\\evil", "https://app.test/api", "http://backend.internal:8080",
		"https://app.test.evil/api/x", "https://app.test@evil/api/x", "HTTPS://APP.TEST/api/x?y#z", "/api", "/api/", "/api/\t/evil", "/api?x", "/app/x", "http://backend.internal:8080/app/x"} {
		f.Add(s)
	}
	const reqHost, sentHost = "app.test", "backend.internal:8080"
	rws := []*rewriter{
		mustRewriter(f, Rewrite{StripPrefix: "/app"}),
		mustRewriter(f, Rewrite{StripPrefix: "/app", AddPrefix: "/api"}),
		mustRewriter(f, Rewrite{AddPrefix: "/api"}),
	}
	f.Fuzz(func(t *testing.T, loc string) {
		for _, rw := range rws {
			got, ok := rw.mapLocation(loc, reqHost, sentHost, "https")
			if !ok {
				continue
			}
			v := browserView(got)
			if strings.HasPrefix(v, "/") {
				if strings.HasPrefix(v, "//") || strings.HasPrefix(v, "/\\") {
					t.Fatalf("%q mapped to protocol-relative %q", loc, got)
				}
			} else {
				scheme, rest, _ := strings.Cut(v, "://")
				authority := rest[:refAuthorityEnd(rest)]
				u, err := url.Parse("http://" + authority)
				if (!strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https")) || err != nil || u.User != nil || !strings.EqualFold(u.Host, reqHost) {
					t.Fatalf("%q mapped to %q, not on %s", loc, got, reqHost)
				}
			}
			upstreamPath, clientPath := refLocationPath(loc), refLocationPath(got)
			if clientPath == upstreamPath {
				continue // left as the upstream wrote it (documented cases)
			}
			if rw.strip == "" && upstreamPath == rw.add {
				// No client path is forwarded as the bare added prefix
				// ("/" becomes "/api/"); "/" is the nearest.
				continue
			}
			cv, err1 := gate.ReadPath(clientPath)
			uv, err2 := gate.ReadPath(upstreamPath)
			if err1 != nil || err2 != nil || cv.Needs != 0 {
				continue // a spelling the gate refuses either way
			}
			if back, status := rw.apply(cv.Forward, cv.Match, &gate.Request{}); status == http.StatusNotFound || (status == 0 && back != uv.Forward) {
				t.Fatalf("%q mapped to %q: the client's %q is forwarded as %q (status %d)", loc, got, clientPath, back, status)
			}
		}
	})
}

// browserView is a URL as a browser reads it (WHATWG URL): leading and
// trailing C0 controls and spaces trimmed, tabs and newlines removed.
func browserView(s string) string {
	s = strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	return strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
}

// refAuthorityEnd is where the authority of a URL's rest after "//" ends
// (a backslash ends it in http and https).
func refAuthorityEnd(rest string) int {
	if i := strings.IndexAny(rest, "/?#\\"); i >= 0 {
		return i
	}
	return len(rest)
}

// refLocationPath is the raw path of a Location: a path-absolute reference
// or an http(s) URL, without query and fragment; "/" for an empty path.
func refLocationPath(loc string) string {
	if _, rest, ok := strings.Cut(loc, "://"); ok && !strings.HasPrefix(loc, "/") {
		loc = rest[refAuthorityEnd(rest):]
	}
	if i := strings.IndexAny(loc, "?#"); i >= 0 {
		loc = loc[:i]
	}
	if loc == "" {
		return "/"
	}
	return loc
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
// on the standard library from RFC 9110 section 12.5.3: qvalues by their
// grammar, codings compared in ASCII case only.
func FuzzAcceptEncoding(f *testing.F) {
	for _, s := range []string{"gzip, br;q=0.9", "*;q=0.1, zstd;q=0", "x-gzip;q=0.500", "br;q=1.000;foo=bar", "gzip;q=1.0001", "z\u017ftd", "GZIP;Q=0.5, Br"} {
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
		name := refASCIILower(strings.Trim(parts[0], " \t"))
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
