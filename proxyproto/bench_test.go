package proxyproto_test

import (
	"bufio"
	"bytes"
	"testing"

	goproxyproto "github.com/pires/go-proxyproto"

	"github.com/paduraksa/paduraksa/proxyproto"
)

// Benchmark inputs: the header followed by the first payload bytes, the
// same four cases as the go-proxyproto study.
var (
	benchV1TCP4 = []byte("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\nGET")
	benchV1TCP6 = []byte("PROXY TCP6 2001:db8:85a3::8a2e:370:7334 2001:db8:85a3::8a2e:370:7335 56324 443\r\nGET")
	benchV2TCP4 = []byte(v2(0x21, 0x11, "\xc0\xa8\x00\x01", "\xc0\xa8\x00\x0b", u16(56324), u16(443)) + "GET")
	benchV2TCP6 = []byte(v2(0x21, 0x21, block6, tlv(0x01, "h2"), tlv(0x02, "example.com")) + "GET")
)

func benchParse(b *testing.B, in []byte) {
	want := bytes.Index(in, []byte("GET"))
	b.ReportAllocs()
	b.SetBytes(int64(want))
	for b.Loop() {
		_, n, err := proxyproto.Parse(in)
		if err != nil || n != want {
			b.Fatalf("Parse = %d, %v", n, err)
		}
	}
}

// benchGoProxyproto measures go-proxyproto's fastest public stream path,
// as its own Conn uses it: Read over a 256-byte bufio.Reader over the
// input. Both readers are reused with Reset, so their buffers are not
// counted; what remains is the cost of Read itself. The consumed length is
// checked as for ours.
func benchGoProxyproto(b *testing.B, in []byte) {
	want := bytes.Index(in, []byte("GET"))
	src := bytes.NewReader(in)
	br := bufio.NewReaderSize(src, 256)
	b.ReportAllocs()
	b.SetBytes(int64(want))
	for b.Loop() {
		src.Reset(in)
		br.Reset(src)
		h, err := goproxyproto.Read(br)
		if err != nil || h == nil || len(in)-br.Buffered() != want {
			b.Fatalf("Read: %v, consumed %d", err, len(in)-br.Buffered())
		}
	}
}

func BenchmarkParseV1TCP4(b *testing.B)                 { benchParse(b, benchV1TCP4) }
func BenchmarkParseV1TCP4GoProxyproto(b *testing.B)     { benchGoProxyproto(b, benchV1TCP4) }
func BenchmarkParseV1TCP6(b *testing.B)                 { benchParse(b, benchV1TCP6) }
func BenchmarkParseV1TCP6GoProxyproto(b *testing.B)     { benchGoProxyproto(b, benchV1TCP6) }
func BenchmarkParseV2TCP4(b *testing.B)                 { benchParse(b, benchV2TCP4) }
func BenchmarkParseV2TCP4GoProxyproto(b *testing.B)     { benchGoProxyproto(b, benchV2TCP4) }
func BenchmarkParseV2TCP6TLVs(b *testing.B)             { benchParse(b, benchV2TCP6) }
func BenchmarkParseV2TCP6TLVsGoProxyproto(b *testing.B) { benchGoProxyproto(b, benchV2TCP6) }

// BenchmarkParseV2TCP6TLVsIterate adds walking the TLVs, which Parse has
// already validated; go-proxyproto's equivalent is Read plus TLVs().
func BenchmarkParseV2TCP6TLVsIterate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		h, _, err := proxyproto.Parse(benchV2TCP6)
		if err != nil {
			b.Fatal(err)
		}
		it := h.TLVs()
		k := 0
		for _, ok := it.Next(); ok; _, ok = it.Next() {
			k++
		}
		if k != 2 {
			b.Fatal(k)
		}
	}
}

func BenchmarkParseV2TCP6TLVsIterateGoProxyproto(b *testing.B) {
	src := bytes.NewReader(benchV2TCP6)
	br := bufio.NewReaderSize(src, 256)
	b.ReportAllocs()
	for b.Loop() {
		src.Reset(benchV2TCP6)
		br.Reset(src)
		h, err := goproxyproto.Read(br)
		if err != nil {
			b.Fatal(err)
		}
		tlvs, err := h.TLVs()
		if err != nil || len(tlvs) != 2 {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendV2TCP6TLVs(b *testing.B) {
	h, _, err := proxyproto.Parse(benchV2TCP6)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = h.AppendTo(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseAllocs(t *testing.T) {
	for name, in := range map[string][]byte{
		"v1/tcp4": benchV1TCP4, "v1/tcp6": benchV1TCP6, "v2/tcp4": benchV2TCP4, "v2/tcp6-tlvs": benchV2TCP6,
		"v2/crc32c": []byte(withCRC(v2(0x21, 0x11, block4, tlv(0x03, "\x00\x00\x00\x00")), 16+12+3)),
		"v2/ssl":    []byte(v2(0x21, 0x11, block4, tlv(0x20, "\x07\x00\x00\x00\x00"+tlv(0x21, "TLSv1.3")))),
		"invalid":   []byte("PROXY TCP4 1.2.3.4 5.6.7.8 1 65536\r\n"),
		"no-header": []byte("GET / HTTP/1.1\r\n"),
	} {
		t.Run(name, func(t *testing.T) {
			allocs := testing.AllocsPerRun(100, func() {
				h, _, _ := proxyproto.Parse(in)
				it := h.TLVs()
				for tv, ok := it.Next(); ok; tv, ok = it.Next() {
					if s, ok := tv.SSL(); ok {
						sub := s.TLVs()
						for _, ok := sub.Next(); ok; _, ok = sub.Next() {
						}
					}
				}
				_, _ = h.FindTLV(proxyproto.TypeAuthority)
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per Parse and TLV walk, want 0", allocs)
			}
		})
	}
}

func TestAppendToAllocs(t *testing.T) {
	buf := make([]byte, 0, 256)
	for _, in := range [][]byte{benchV1TCP4, benchV1TCP6, benchV2TCP4, benchV2TCP6} {
		h, _, err := proxyproto.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		allocs := testing.AllocsPerRun(100, func() {
			buf, _ = h.AppendTo(buf[:0])
		})
		if allocs != 0 {
			t.Fatalf("%v allocations per AppendTo, want 0", allocs)
		}
	}
}
