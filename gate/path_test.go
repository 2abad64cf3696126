package gate

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadPath(t *testing.T) {
	for _, tc := range []struct {
		raw            string
		match, forward string
		needs          PathAllow
		err            error
	}{
		{raw: "/", match: "/", forward: "/"},
		{raw: "/a/b/", match: "/a/b/", forward: "/a/b/"},
		{raw: "/a.b/...x/.well-known/x", match: "/a.b/...x/.well-known/x", forward: "/a.b/...x/.well-known/x"},
		// What Windows drops from a name is dropped from the view.
		{raw: "/secret./x", match: "/secret/x", forward: "/secret./x"},
		{raw: "/secret.%20.", match: "/secret", forward: "/secret.%20."},
		{raw: "/secret%20", match: "/secret", forward: "/secret%20"},
		{raw: "/secret::$DATA", match: "/secret", forward: "/secret::$DATA"},
		{raw: "/secret::$data./x", match: "/secret/x", forward: "/secret::$data./x"},
		{raw: "/secret.;x/", match: "/secret/", forward: "/secret.;x/"},
		{raw: "/a$b", match: "/a$b", forward: "/a$b"},
		{raw: "/%E2%82%AC", match: "/€", forward: "/%E2%82%AC"},
		{raw: "/\xe2\x82\xac", match: "/\xe2\x82\xac", forward: "/\xe2\x82\xac"},
		// Unreserved escapes are decoded both ways; other escapes get
		// upper case hex, decoded in the view unless reserved.
		{raw: "/%73ecret/%7Euser", match: "/secret/~user", forward: "/secret/~user"},
		{raw: "/caf%c3%a9/a%20b", match: "/café/a b", forward: "/caf%C3%A9/a%20b"},
		{raw: "/a%40b%3a", match: "/a@b:", forward: "/a%40b%3A"},
		// Segment parameters: dropped from the view, forwarded as sent.
		{raw: "/secret;x=1/", match: "/secret/", forward: "/secret;x=1/"},
		{raw: "/a;b/c;d", match: "/a/c", forward: "/a;b/c;d"},
		{raw: "/a;%2e%2e", err: ErrPathEscape},
		// What a route must allow.
		{raw: "/a%2Fb", match: "/a%2Fb", forward: "/a%2Fb", needs: AllowEncodedSlash},
		{raw: "/a%2fb", match: "/a%2Fb", forward: "/a%2Fb", needs: AllowEncodedSlash},
		{raw: "/a%5Cb", match: "/a%5Cb", forward: "/a%5Cb", needs: AllowEncodedBackslash},
		{raw: "/a%3f", match: "/a%3F", forward: "/a%3F", needs: AllowEncodedQuestionMark},
		{raw: "/r/%23room%3Ahs", match: "/r/%23room:hs", forward: "/r/%23room%3Ahs", needs: AllowEncodedHash},
		{raw: "/a%3Bb", match: "/a%3Bb", forward: "/a%3Bb", needs: AllowEncodedSemicolon},
		{raw: "/a%252Fb", match: "/a%252Fb", forward: "/a%252Fb", needs: AllowEncodedPercent},
		{raw: "//a", match: "//a", forward: "//a", needs: AllowEmptySegments},
		{raw: "/a//b", match: "/a//b", forward: "/a//b", needs: AllowEmptySegments},
		{raw: "/;x/secret", match: "//secret", forward: "/;x/secret", needs: AllowEmptySegments},
		{raw: "/a/%20/b", match: "/a//b", forward: "/a/%20/b", needs: AllowEmptySegments},
		{raw: "/::$DATA/secret", match: "//secret", forward: "/::$DATA/secret", needs: AllowEmptySegments},
		// Refused on every route.
		{raw: "", err: ErrPathNotAbsolute},
		{raw: "a/b", err: ErrPathNotAbsolute},
		{raw: "*", err: ErrPathNotAbsolute},
		{raw: "/secret/../x", err: ErrPathDotSegment},
		{raw: "/secret/..", err: ErrPathDotSegment},
		{raw: "/./secret", err: ErrPathDotSegment},
		{raw: "/secret/..;/", err: ErrPathDotSegment},
		{raw: "/secret/.;x/", err: ErrPathDotSegment},
		{raw: "/secret/.%20./", err: ErrPathDotSegment},
		{raw: "/secret/...", err: ErrPathDotSegment},
		{raw: "/secret/%2e%2e/", err: ErrPathEscape},
		{raw: "/secret/.%2E/", err: ErrPathEscape},
		{raw: "/file%2ejson", err: ErrPathEscape},
		{raw: "/a%00", err: ErrPathEscape},
		{raw: "/a%0d%0a", err: ErrPathEscape},
		{raw: "/a%7f", err: ErrPathEscape},
		{raw: "/%c0%ae%c0%ae/", err: ErrPathEscape},
		{raw: "/%C1%9C", err: ErrPathEscape},
		{raw: "/%e0%80%ae%e0%80%ae/", err: ErrPathEscape},
		{raw: "/%F0%80%80%AF", err: ErrPathEscape},
		{raw: "/\xe0\x80\xae", err: ErrPathEscape},
		{raw: "/\xc0\xae", err: ErrPathEscape},
		{raw: "/a%", err: ErrPathEscape},
		{raw: "/a%2", err: ErrPathEscape},
		{raw: "/a%zz", err: ErrPathEscape},
		{raw: "/%u002e%u002e/", err: ErrPathEscape},
		{raw: "/a\\..\\secret", err: ErrPathCharacter},
		{raw: "/a#frag", err: ErrPathCharacter},
		{raw: "/a b", err: ErrPathCharacter},
		{raw: "/a\x00", err: ErrPathCharacter},
		{raw: "/a\tb", err: ErrPathCharacter},
		{raw: "/a\x7f", err: ErrPathCharacter},
	} {
		v, err := ReadPath(tc.raw)
		if tc.err != nil {
			assert.ErrorIs(t, err, tc.err, "%q", tc.raw)
			continue
		}
		require.NoError(t, err, "%q", tc.raw)
		assert.Equal(t, PathView{Match: tc.match, Forward: tc.forward, Needs: tc.needs}, v, "%q", tc.raw)
	}
}

func TestReadPathAllocations(t *testing.T) {
	for _, p := range []string{"/", "/api/v1/users/42", "/a.b/c-d_e~f/"} {
		var v PathView
		n := testing.AllocsPerRun(100, func() { v, _ = ReadPath(p) })
		assert.Zero(t, n, p)
		assert.Equal(t, p, v.Match)
	}
}

func TestRequestPath(t *testing.T) {
	for in, want := range map[string]string{
		"/a%2Fb?x=1":               "/a%2Fb",
		"http://h.test/p%20q?x":    "/p%20q",
		"https://h.test":           "/",
		"https://h.test?x=/secret": "/",
		"/":                        "/",
		"*":                        "*",
	} {
		r, err := http.NewRequest("GET", "http://h.test/", nil)
		require.NoError(t, err)
		r.RequestURI = in
		assert.Equal(t, want, RequestPath(r), in)
	}
	r, err := http.NewRequest("GET", "http://h.test/a%2Fb", nil)
	require.NoError(t, err)
	assert.Equal(t, "/a%2Fb", RequestPath(r), "without RequestURI")
}

func TestPathAllowNames(t *testing.T) {
	for i, n := range PathAllowNames() {
		a, ok := ParsePathAllow(n)
		require.True(t, ok, n)
		assert.Equal(t, PathAllow(1)<<i, a)
		assert.Equal(t, n, a.String())
		assert.NotEmpty(t, a.refusal())
	}
	_, ok := ParsePathAllow("EncodedSlash")
	assert.False(t, ok, "names are exact")
	assert.Equal(t, "encodedSlash,emptySegments", (AllowEncodedSlash | AllowEmptySegments).String())
}

func TestCheckPrefix(t *testing.T) {
	for _, p := range []string{"", "/", "/api", "/api/", "/wp-", "/café", "/a.b/c"} {
		assert.NoError(t, CheckPrefix(p), p)
	}
	for p, want := range map[string]error{
		"admin":  ErrPathNotAbsolute,
		"/x?y=1": ErrPrefixSpelling,
		"/a;b":   ErrPrefixSpelling,
		"/a%2Fb": ErrPrefixSpelling,
		"/a%41":  ErrPrefixSpelling,
		"/a//b":  ErrPrefixSpelling,
		"/a/../": ErrPathDotSegment,
		"/a\\b":  ErrPathCharacter,
		"/a#b":   ErrPathCharacter,
		"/a b":   ErrPathCharacter,
	} {
		assert.ErrorIs(t, CheckPrefix(p), want, p)
	}
}

func TestHasPathPrefix(t *testing.T) {
	for _, tc := range []struct {
		path, prefix string
		want         bool
	}{
		{"/api", "/api", true},
		{"/api/x", "/api", true},
		{"/API/x", "/api", true},
		{"/api/x", "/API/", true},
		{"/apix", "/api", false},
		{"/ap", "/api", false},
		{"/anything", "", true},
		{"/anything", "/", true},
		{"/CAFé/x", "/café", true},
		{"/cafÉ/x", "/café", false}, // ASCII letters only
		{"/\u212a", "/k", false},    // the Kelvin sign is not k
	} {
		assert.Equal(t, tc.want, HasPathPrefix(tc.path, tc.prefix), "%q under %q", tc.path, tc.prefix)
	}
}
