package balance

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http/httpguts"
)

// FuzzCookieValue checks the allocation-free cookie reader against
// net/http's, for every name that is a token by x/net's reckoning.
func FuzzCookieValue(f *testing.F) {
	for _, s := range []string{
		"sid=abc", "a=1; sid=xyz", ` sid = "q" `, "sid=a\\b; sid=ok", "sid", "sid=;sid=2",
		"=x; sid=é", "sid=\"unterminated", "a=1;;; sid=2 ;", "SID=upper; sid=lower",
	} {
		f.Add(s, "sid")
	}
	f.Fuzz(func(t *testing.T, line, name string) {
		if !httpguts.ValidHeaderFieldName(name) { // a token: cookieValue's contract
			return
		}
		lines := strings.Split(line, "\n")
		got, ok := cookieValue(lines, name)
		r := &http.Request{Header: http.Header{"Cookie": lines}}
		want, err := r.Cookie(name)
		if err != nil {
			if ok {
				t.Fatalf("cookie %q in %q: found %q; net/http finds none", name, line, got)
			}
			return
		}
		if !ok || got != want.Value {
			t.Fatalf("cookie %q in %q: %q, %v; net/http finds %q", name, line, got, ok, want.Value)
		}
	})
}

// FuzzAffinityKey feeds arbitrary keys to Find, in Header mode (64-bit
// keys) and ArrCookie mode (256-bit keys in a cookie), and requires the
// answer refKey gives: the destination whose key the value is, hex
// digits in either case; no key at all when the value is absent; a
// redistribution for anything else.
func FuzzAffinityKey(f *testing.F) {
	c := nDests(f, 4)
	modes := []AffinityMode{AffinityHeader, AffinityArrCookie}
	var affs []*Affinity
	for _, m := range modes {
		a, err := NewAffinity(AffinityConfig{Mode: m}, testKey)
		require.NoError(f, err)
		affs = append(affs, a)
	}
	for i, m := range modes {
		for _, d := range c.Members().All {
			k := refKey(d, m)
			require.Equal(f, k, affs[i].Key(d), "the key of %s is the documented HMAC", d.ID())
			f.Add(uint8(i), k)
			f.Add(uint8(i), strings.ToUpper(k))
		}
		f.Add(uint8(i), "")
	}
	f.Add(uint8(0), "0123456789abcdeg")
	f.Add(uint8(1), strings.Repeat("f", 64))
	f.Add(uint8(1), `"`+refKey(c.Members().All[0], AffinityArrCookie)+`"`)
	f.Fuzz(func(t *testing.T, mode uint8, v string) {
		i := int(mode) % len(modes)
		r := &http.Request{Header: http.Header{}}
		value, present := v, v != ""
		if modes[i] == AffinityHeader {
			r.Header.Set(DefaultAffinityKeyName, v)
		} else {
			r.Header.Set("Cookie", DefaultAffinityKeyName+"="+v)
			ck, err := r.Cookie(DefaultAffinityKeyName)
			value, present = "", err == nil
			if present {
				value = ck.Value
			}
		}
		var want *upstream.Destination
		wantStatus := AffinityRedistributed
		if !present {
			wantStatus = AffinityNone
		}
		for _, d := range c.Members().All {
			if present && asciiLower(value) == refKey(d, modes[i]) {
				want, wantStatus = d, AffinityMatched
			}
		}
		d, st := affs[i].Find(r, c.Members())
		if d != want || st != wantStatus {
			t.Fatalf("%s %q: Find = %s, %v; want %s, %v", modes[i], v, idOf(d), st, idOf(want), wantStatus)
		}
	})
}

// refKey is the documented affinity key of d: HMAC-SHA-256 under testKey of
// the cluster ID, a zero byte and the destination ID, in hex, the first 64
// bits of it except in ArrCookie mode.
func refKey(d *upstream.Destination, m AffinityMode) string {
	h := hmac.New(sha256.New, testKey)
	h.Write([]byte(d.ClusterID() + "\x00" + d.ID()))
	sum := h.Sum(nil)
	if m != AffinityArrCookie {
		sum = sum[:8]
	}
	return hex.EncodeToString(sum)
}

func idOf(d *upstream.Destination) string {
	if d == nil {
		return "no destination"
	}
	return d.ID()
}

// asciiLower lowercases ASCII letters only (strings.ToLower would also map
// other letters, such as the Kelvin sign, onto "k").
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
