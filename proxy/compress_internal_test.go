package proxy

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/testpages"
)

// TestGzipEncoder: every body, however it is written and flushed, decodes
// with the standard library's reader (which checks the CRC and the
// length) to the bytes written; a body that fits and is not flushed is
// compressed by the stateless encoder, any other is streamed.
func TestGzipEncoder(t *testing.T) {
	big := bytes.Repeat(testpages.Varied(), 6) // 96 KiB
	for _, tc := range []struct {
		name     string
		body     []byte
		piece    int  // bytes a Write; 0: the whole body at once
		flush    bool // Flush after the first Write
		streamed bool
	}{
		{"empty", nil, 0, false, false},
		{"one byte", []byte("x"), 0, false, false},
		{"repetitive page at once", testpages.Repetitive(), 0, false, false},
		{"varied page in 8 KiB pieces", testpages.Varied(), 8 << 10, false, false},
		{"as much as is gathered", big[:gzipGather], 1000, false, false},
		{"a byte more", big[:gzipGather+1], 1000, false, true},
		{"a write past the buffer", big, 0, false, true},
		{"big body in pieces", big, 8 << 10, false, true},
		{"flushed page", testpages.Repetitive(), 8 << 10, true, true},
		{"flushed before anything", testpages.Repetitive(), 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			e := getEncoder(codingGzip, &out)
			defer putEncoder(codingGzip, e)
			g := e.enc.(*gzipEncoder)
			if tc.flush && tc.piece == 0 {
				require.NoError(t, e.Flush())
			}
			rest := tc.body
			for first := true; len(rest) > 0; first = false {
				n := len(rest)
				if tc.piece > 0 {
					n = min(n, tc.piece)
				}
				w, err := e.Write(rest[:n])
				require.NoError(t, err)
				require.Equal(t, n, w)
				rest = rest[n:]
				if first && tc.flush && tc.piece > 0 {
					require.NoError(t, e.Flush())
				}
			}
			assert.Equal(t, tc.streamed, g.fw != nil, "streamed")
			require.NoError(t, e.Close())
			assert.Nil(t, g.fw, "the level 1 writer goes back at Close")
			zr, err := gzip.NewReader(bytes.NewReader(out.Bytes()))
			require.NoError(t, err)
			plain, err := io.ReadAll(zr)
			require.NoError(t, err)
			assert.Equal(t, len(tc.body), len(plain))
			assert.True(t, bytes.Equal(tc.body, plain), "the body comes back")
		})
	}
}

// TestGzipEncoderSizes: the stateless encoder's output stays within 10 %
// of nginx's (zlib level 1: 2296 and 4238 bytes) on both pages.
func TestGzipEncoderSizes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		page  []byte
		nginx int
	}{{"repetitive", testpages.Repetitive(), 2296}, {"varied", testpages.Varied(), 4238}} {
		var out bytes.Buffer
		e := getEncoder(codingGzip, &out)
		_, err := e.Write(tc.page)
		require.NoError(t, err)
		require.NoError(t, e.Close())
		putEncoder(codingGzip, e)
		assert.InDelta(t, tc.nginx, out.Len(), float64(tc.nginx)/10, tc.name)
	}
}

// TestGzipEncoderWriteError: a failed write of the output is returned, on
// either path.
func TestGzipEncoderWriteError(t *testing.T) {
	broken := errors.New("broken")
	for _, flush := range []bool{false, true} {
		e := getEncoder(codingGzip, failWriter{broken})
		_, err := e.Write(testpages.Varied())
		require.NoError(t, err, "gathered")
		if flush {
			assert.ErrorIs(t, e.Flush(), broken)
		} else {
			assert.ErrorIs(t, e.Close(), broken)
		}
		putEncoder(codingGzip, e)
	}
}

type failWriter struct{ err error }

func (f failWriter) Write([]byte) (int, error) { return 0, f.err }

// BenchmarkGzipEncoder is the gzip encoder alone on each page, written in
// 8 KiB pieces as the forwarder reads an upstream: with one encoder, as
// one connection at a time uses, and with 64 taken in turn, as 64
// connections compressing at once do, where what an encoder holds is out
// of the cache when its turn comes.
func BenchmarkGzipEncoder(b *testing.B) {
	for _, page := range []struct {
		name string
		body []byte
	}{{"varied", testpages.Varied()}, {"repetitive", testpages.Repetitive()}} {
		for _, n := range []int{1, 64} {
			b.Run(page.name+"/encoders="+strconv.Itoa(n), func(b *testing.B) {
				var out bytes.Buffer
				es := make([]*compressWriter, n)
				for i := range es {
					es[i] = getEncoder(codingGzip, &out)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					e := es[i%n]
					i++
					out.Reset()
					e.out.Reset(&out)
					e.enc.Reset(e.out)
					e.Write(page.body[:8<<10])
					e.Write(page.body[8<<10:])
					if err := e.Close(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(out.Len()), "out-bytes")
				for _, e := range es {
					putEncoder(codingGzip, e)
				}
			})
		}
	}
}
