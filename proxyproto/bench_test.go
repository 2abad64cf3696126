package proxyproto_test

import (
	"bufio"
	"bytes"
	"io"
	"testing"
	"time"

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

// Two kinds of benchmarks, named so that they are not compared with each
// other:
//
//   - BenchmarkSliceParse: Parse over a byte slice that holds the header,
//     ours alone (go-proxyproto has no slice parser).
//   - BenchmarkStream: the header read from a connection, the same
//     chunkConn for both, which delivers the input in one Read as a socket
//     does when the header came in one segment. "ReadConn" is ours, as
//     Listener runs it for each connection: a deadline set and cleared,
//     the Conn allocated, the payload then read from the Conn. "go-proxyproto-Read" is its Read over a
//     bufio.Reader on the connection, reused with Reset so that its buffer
//     is not counted; "go-proxyproto-NewConn" is what its Listener runs
//     per connection (NewConn, then the header and the payload through
//     the Conn).
//
// Every case checks that the header was consumed and "GET" is what
// follows.

var benchCases = []struct {
	name string
	in   []byte
}{
	{"v1-tcp4", benchV1TCP4},
	{"v1-tcp6", benchV1TCP6},
	{"v2-tcp4", benchV2TCP4},
	{"v2-tcp6-tlvs", benchV2TCP6},
}

func BenchmarkSliceParse(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			want := bytes.Index(bc.in, []byte("GET"))
			b.ReportAllocs()
			b.SetBytes(int64(want))
			for b.Loop() {
				_, n, err := proxyproto.Parse(bc.in)
				if err != nil || n != want {
					b.Fatalf("Parse = %d, %v", n, err)
				}
			}
		})
	}
}

// BenchmarkSliceParseTLVsIterate adds walking the TLVs, which Parse has
// already validated.
func BenchmarkSliceParseTLVsIterate(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		h, _, err := proxyproto.Parse(benchV2TCP6)
		if err != nil {
			b.Fatal(err)
		}
		if k := countTLVs(h); k != 2 {
			b.Fatal(k)
		}
	}
}

func countTLVs(h proxyproto.Header) int {
	it := h.TLVs()
	k := 0
	for _, ok := it.Next(); ok; _, ok = it.Next() {
		k++
	}
	return k
}

// getBuf receives the payload in readGET; a package variable, so that its
// allocation is not counted for either side.
var getBuf [8]byte

// readGET reads what follows the header from r and fails unless it is
// "GET".
func readGET(b *testing.B, r io.Reader) {
	if n, err := r.Read(getBuf[:]); err != nil || string(getBuf[:n]) != "GET" {
		b.Fatalf("payload %q, %v", getBuf[:n], err)
	}
}

func BenchmarkStream(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name+"/ReadConn", func(b *testing.B) { benchReadConn(b, bc.in, false) })
		b.Run(bc.name+"/go-proxyproto-Read", func(b *testing.B) { benchGoProxyprotoRead(b, bc.in, false) })
		b.Run(bc.name+"/go-proxyproto-NewConn", func(b *testing.B) {
			raw := &chunkConn{data: bc.in}
			b.ReportAllocs()
			for b.Loop() {
				raw.reset()
				c := goproxyproto.NewConn(raw)
				if c.ProxyHeader() == nil {
					b.Fatal("no header")
				}
				readGET(b, c)
			}
		})
	}
}

// BenchmarkStreamRatio reads the same bytes with ReadConn (as in
// BenchmarkStream) and with go-proxyproto's Read over a reused
// bufio.Reader, in alternating batches of ratioBatch connections, so that
// both sides see the same machine load. It reports each side's ns per
// connection, ReadConn's allocations per connection, and "x", how many
// times cheaper ReadConn is (go-proxyproto's ns over ReadConn's). ns/op
// is one connection of each.
func BenchmarkStreamRatio(b *testing.B) {
	for _, bc := range benchCases {
		b.Run(bc.name, func(b *testing.B) {
			ours, theirs := &chunkConn{data: bc.in}, &chunkConn{data: bc.in}
			br := bufio.NewReaderSize(theirs, 256)
			deadline := time.Now().Add(proxyproto.DefaultHeaderTimeout)
			readConn := func() {
				ours.reset()
				c, err := proxyproto.ReadConn(ours, deadline, 0)
				if err != nil {
					b.Fatal(err)
				}
				readGET(b, c)
			}
			goRead := func() {
				theirs.reset()
				br.Reset(theirs)
				if _, err := goproxyproto.Read(br); err != nil {
					b.Fatal(err)
				}
				readGET(b, br)
			}
			var tOurs, tTheirs time.Duration
			for done := 0; done < b.N; done += ratioBatch {
				k := min(ratioBatch, b.N-done)
				t0 := time.Now()
				for range k {
					goRead()
				}
				t1 := time.Now()
				for range k {
					readConn()
				}
				tOurs += time.Since(t1)
				tTheirs += t1.Sub(t0)
			}
			b.ReportMetric(float64(tOurs.Nanoseconds())/float64(b.N), "ReadConn-ns/op")
			b.ReportMetric(float64(tTheirs.Nanoseconds())/float64(b.N), "go-proxyproto-ns/op")
			b.ReportMetric(float64(tTheirs)/float64(tOurs), "x")
			b.ReportMetric(testing.AllocsPerRun(100, readConn), "ReadConn-allocs/op")
		})
	}
}

// ratioBatch is the number of connections BenchmarkStreamRatio reads on
// one side before it switches: enough that the two clock reads around a
// batch cost nothing.
const ratioBatch = 64

// BenchmarkStreamTLVsIterate reads the TLV case and walks its TLVs, which
// go-proxyproto decodes only when asked (Header.TLVs).
func BenchmarkStreamTLVsIterate(b *testing.B) {
	b.Run("ReadConn", func(b *testing.B) { benchReadConn(b, benchV2TCP6, true) })
	b.Run("go-proxyproto-Read", func(b *testing.B) { benchGoProxyprotoRead(b, benchV2TCP6, true) })
}

// benchReadConn reads the header of in with ReadConn, as Listener does,
// then the payload from the Conn; with iterate, it walks the 2 TLVs too.
// The deadline is set and cleared on every connection, but the clock is
// read once: the accept time is the caller's (Listener reads it in its
// accept loop), and a clock read costs about as much as ReadConn's parse.
func benchReadConn(b *testing.B, in []byte, iterate bool) {
	raw := &chunkConn{data: in}
	deadline := time.Now().Add(proxyproto.DefaultHeaderTimeout)
	b.ReportAllocs()
	for b.Loop() {
		raw.reset()
		c, err := proxyproto.ReadConn(raw, deadline, 0)
		if err != nil {
			b.Fatal(err)
		}
		if iterate && countTLVs(c.Header()) != 2 {
			b.Fatal("TLVs")
		}
		readGET(b, c)
	}
}

// benchGoProxyprotoRead reads the header of in with go-proxyproto's Read
// over a reused bufio.Reader, then the payload from that reader; with
// iterate, it decodes the 2 TLVs too.
func benchGoProxyprotoRead(b *testing.B, in []byte, iterate bool) {
	raw := &chunkConn{data: in}
	br := bufio.NewReaderSize(raw, 256)
	b.ReportAllocs()
	for b.Loop() {
		raw.reset()
		br.Reset(raw)
		h, err := goproxyproto.Read(br)
		if err != nil {
			b.Fatal(err)
		}
		if iterate {
			if tlvs, err := h.TLVs(); err != nil || len(tlvs) != 2 {
				b.Fatal("TLVs", err)
			}
		}
		readGET(b, br)
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

// TestReadConnAllocs holds ReadConn to the Conn it returns, which holds its
// read buffer, for every header whose addresses are TCP ones or the socket's.
func TestReadConnAllocs(t *testing.T) {
	for _, in := range [][]byte{benchV1TCP4, benchV1TCP6, benchV2TCP4, benchV2TCP6, []byte("PROXY UNKNOWN\r\nGET")} {
		raw := &chunkConn{data: in}
		allocs := testing.AllocsPerRun(100, func() {
			raw.reset()
			if _, err := proxyproto.ReadConn(raw, time.Now().Add(time.Minute), 0); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 1 {
			t.Errorf("%q: %v allocations per ReadConn, want 1 (the Conn, which holds its buffer)", in, allocs)
		}
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
