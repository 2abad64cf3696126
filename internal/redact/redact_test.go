package redact_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/internal/redact"
)

func TestName(t *testing.T) {
	for _, name := range []string{
		"Authorization", "authorization", "AUTHORIZATION",
		"Proxy-Authorization", "proxy-authorization",
		"Cookie", "cookie", "Set-Cookie", "SET-COOKIE",
		"X-Api-Key", "x-api-key", "Api-KEY", "X-Auth-Token", "x-csrf-token",
		"X-Client-Secret", "client-SECRET",
	} {
		if !redact.Name(name) {
			t.Errorf("Name(%q) = false, want true", name)
		}
	}
	for _, name := range []string{
		"", "X-Keyboard", "Tokens", "X-Tokens", "Token", "Key", "Secret", "-Key", "-Token", "-Secret",
		"X-Secretary", "X-Key-Id", "Keys", "X-Monkey", "X-Tokenized", "Cookies", "X-Cookie",
		"Authorization-Hint", "Proxy-Authenticate", "WWW-Authenticate", "Host", "User-Agent",
		"X-Apikey", "XToken",
	} {
		if redact.Name(name) {
			t.Errorf("Name(%q) = true, want false", name)
		}
	}
}

func TestValue(t *testing.T) {
	if got := redact.Value("Cookie", "a=b"); got != redact.Shown {
		t.Errorf("Value(Cookie) = %q", got)
	}
	if got := redact.Value("Accept", "a/b"); got != "a/b" {
		t.Errorf("Value(Accept) = %q", got)
	}
	if redact.Shown != "(redacted)" {
		t.Errorf("Shown = %q", redact.Shown)
	}
}

func TestHeader(t *testing.T) {
	h := http.Header{
		"Authorization": {"Bearer s3cret"},
		"Set-Cookie":    {"a=1", "b=2"},
		"X-Api-Key":     {"k"},
		"X-Keyboard":    {"qwerty"},
	}
	got := redact.Header(h)
	want := http.Header{
		"Authorization": {redact.Shown},
		"Set-Cookie":    {redact.Shown, redact.Shown},
		"X-Api-Key":     {redact.Shown},
		"X-Keyboard":    {"qwerty"},
	}
	if !equal(got, want) {
		t.Errorf("Header = %v, want %v", got, want)
	}
	if h["Authorization"][0] != "Bearer s3cret" || h["Set-Cookie"][1] != "b=2" || h["X-Api-Key"][0] != "k" {
		t.Errorf("the original changed: %v", h)
	}
	plain := http.Header{"Accept": {"*/*"}}
	if got := redact.Header(plain); len(got) != 1 || got["Accept"][0] != "*/*" {
		t.Errorf("Header(plain) = %v", got)
	}
	if got := redact.Header(nil); got != nil {
		t.Errorf("Header(nil) = %v", got)
	}
}

func TestPairs(t *testing.T) {
	in := []redact.Pair{{"Cookie", "sid=1"}, {"Tokens", "3"}, {"proxy-authorization", "Basic x"}}
	got := redact.Pairs(in)
	want := []redact.Pair{{"Cookie", redact.Shown}, {"Tokens", "3"}, {"proxy-authorization", redact.Shown}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Pairs[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if in[0].Value != "sid=1" || in[2].Value != "Basic x" {
		t.Errorf("the original changed: %v", in)
	}
}

func TestNameAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { redact.Name("X-Client-Secret"); redact.Name("Accept-Encoding") }); n != 0 {
		t.Errorf("Name allocates %v times", n)
	}
}

func equal(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb := b[k]
		if len(va) != len(vb) {
			return false
		}
		for i := range va {
			if va[i] != vb[i] {
				return false
			}
		}
	}
	return true
}

// FuzzName checks Name against the rule written the plain way.
func FuzzName(f *testing.F) {
	for _, s := range []string{"Authorization", "proxy-authorization", "Cookie", "Set-Cookie", "X-Api-Key", "X-Auth-Token",
		"X-Client-Secret", "X-Keyboard", "Tokens", "-Key", "", "K\u212aY", "x-\u212aey"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		want := false
		lower := strings.ToLower(name)
		switch lower {
		case "authorization", "proxy-authorization", "cookie", "set-cookie":
			want = true
		}
		for _, s := range []string{"-key", "-token", "-secret"} {
			if len(name) > len(s) && strings.EqualFold(name[len(name)-len(s):], s) {
				want = true
			}
		}
		if got := redact.Name(name); got != want {
			t.Errorf("Name(%q) = %v, want %v", name, got, want)
		}
	})
}
