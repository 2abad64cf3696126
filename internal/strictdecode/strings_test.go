package strictdecode

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// TestAppendString compares the bytes written, not the strings they
// decode to: decoding would turn a raw invalid byte into U+FFFD as well
// and hide it.
func TestAppendString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"quote\" back\\slash", `"quote\" back\\slash"`},
		{"ctl\x00\x01\x1f\n\r\t\x7f", `"ctl\u0000\u0001\u001f\n\r\t` + "\x7f" + `"`},
		{"ünï€😀", `"ünï€😀"`},
		{"bad\xffutf8\xc3", `"bad` + "\uFFFD" + `utf8` + "\uFFFD" + `"`},
		{"\xed\xa0\x80", `"` + "\uFFFD\uFFFD\uFFFD" + `"`}, // a surrogate half: three invalid bytes
		{"<&>", `"<&>"`},
		{"\u2028", `"` + "\u2028" + `"`},
	} {
		b := AppendString([]byte("x"), tc.in)
		assert.Equal(t, "x"+tc.want, string(b), "%q", tc.in)
		assert.True(t, utf8.Valid(b), "%q", b)
		assert.True(t, json.Valid(b[1:]), "%q", b)
	}
}
