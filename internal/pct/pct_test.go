package pct

import (
	"net/url"
	"testing"
)

func TestEqual(t *testing.T) {
	for _, c := range []struct {
		raw, want string
		eq        bool
	}{
		{"a", "a", true},
		{"a+b", "a b", true},
		{"a%20b", "a b", true},
		{"%41", "A", true},
		{"%4a", "J", true},
		{"%4A", "J", true},
		{"a%2", "a%2", false},
		{"%zz", "%zz", false},
		{"ab", "a", false},
		{"a", "ab", false},
		{"", "", true},
		{"%2B", "+", true},
	} {
		if got := Equal(c.raw, c.want); got != c.eq {
			t.Errorf("Equal(%q, %q) = %v, want %v", c.raw, c.want, got, c.eq)
		}
	}
}

// FuzzEqual checks Equal against net/url's decoding of a query component:
// a component equals its decoding, and nothing else.
func FuzzEqual(f *testing.F) {
	for _, s := range []string{"a+b", "%41%4a", "%zz", "x%2", "%C3%A9"} {
		f.Add(s, "a b")
	}
	f.Fuzz(func(t *testing.T, raw, other string) {
		dec, err := url.QueryUnescape(raw)
		if err != nil {
			if Equal(raw, dec) || Equal(raw, other) {
				t.Fatalf("Equal(%q, ...) holds for a malformed escape", raw)
			}
			return
		}
		if !Equal(raw, dec) {
			t.Fatalf("Equal(%q, %q) = false, its decoding", raw, dec)
		}
		if got := Equal(raw, other); got != (other == dec) {
			t.Fatalf("Equal(%q, %q) = %v, decoding %q", raw, other, got, dec)
		}
	})
}

func TestEqualAllocations(t *testing.T) {
	eq := false
	if n := testing.AllocsPerRun(100, func() { eq = Equal("a%20b+c", "a b c") }); n != 0 || !eq {
		t.Fatalf("Equal allocates %v times (equal: %v)", n, eq)
	}
}
