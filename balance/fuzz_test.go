package balance

import (
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzCookieValue checks the allocation-free cookie reader against
// net/http's.
func FuzzCookieValue(f *testing.F) {
	for _, s := range []string{
		"sid=abc", "a=1; sid=xyz", ` sid = "q" `, "sid=a\\b; sid=ok", "sid", "sid=;sid=2",
		"=x; sid=é", "sid=\"unterminated", "a=1;;; sid=2 ;", "SID=upper; sid=lower",
	} {
		f.Add(s, "sid")
	}
	f.Fuzz(func(t *testing.T, line, name string) {
		if !isToken(name) {
			return
		}
		lines := strings.Split(line, "\n")
		got, ok := cookieValue(lines, name)
		r := &http.Request{Header: http.Header{"Cookie": lines}}
		c, err := r.Cookie(name)
		if err != nil {
			require.False(t, ok, "net/http found no cookie %q, we found %q", name, got)
			return
		}
		require.True(t, ok, "net/http found %q", c.Value)
		require.Equal(t, c.Value, got)
	})
}

// FuzzAffinityKey feeds arbitrary keys to Find: it never panics, and a key
// that matches is exactly a destination's key, in either case.
func FuzzAffinityKey(f *testing.F) {
	c := nDests(f, 4)
	a, err := NewAffinity(AffinityConfig{Mode: AffinityHeader}, testKey)
	require.NoError(f, err)
	for _, d := range c.Members().All {
		f.Add(a.Key(d))
	}
	f.Add("")
	f.Add("0123456789abcdeg")
	f.Add(strings.Repeat("f", 64))
	f.Fuzz(func(t *testing.T, v string) {
		r := &http.Request{Header: http.Header{}}
		r.Header.Set(DefaultAffinityKeyName, v)
		d, st := a.Find(r, c.Members())
		if d == nil {
			require.NotEqual(t, AffinityMatched, st)
			return
		}
		require.Equal(t, AffinityMatched, st)
		require.Equal(t, a.Key(d), strings.ToLower(v))

		var buf [8]byte
		require.True(t, decodeHex(buf[:], v))
		require.Equal(t, strings.ToLower(v), hex.EncodeToString(buf[:]))
	})
}
