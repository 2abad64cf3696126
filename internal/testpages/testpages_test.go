package testpages_test

import (
	"bytes"
	"compress/flate"
	"testing"

	"github.com/paduraksa/paduraksa/internal/testpages"
)

// TestPages: each page is Size bytes, the same on every call, and
// compresses as its documentation says.
func TestPages(t *testing.T) {
	for _, c := range []struct {
		name     string
		page     func() []byte
		min, max int // deflate level 1, bytes
	}{
		{"varied", testpages.Varied, 3800, 4800},
		{"repetitive", testpages.Repetitive, 2000, 2600},
	} {
		p := c.page()
		if len(p) != testpages.Size {
			t.Errorf("%s: %d bytes, want %d", c.name, len(p), testpages.Size)
		}
		if !bytes.Equal(p, c.page()) {
			t.Errorf("%s: differs between calls", c.name)
		}
		var out bytes.Buffer
		w, _ := flate.NewWriter(&out, 1)
		w.Write(p)
		w.Close()
		if n := out.Len(); n < c.min || n > c.max {
			t.Errorf("%s: deflates to %d bytes, want %d to %d", c.name, n, c.min, c.max)
		}
	}
}
