package h1client

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/netip"
	"testing"

	goproxyproto "github.com/pires/go-proxyproto"

	"github.com/paduraksa/paduraksa/proxyproto"
)

// FuzzProxyHeader: every ProxyHeader the forwarder can build, from any
// two addresses of either family, with or without a zone, and either
// version, encodes; the bytes parse back with proxyproto's parser and
// with go-proxyproto's to the same client and local addresses (IPv4
// within IPv6 when the families differ), and an invalid source is LOCAL
// (v1: UNKNOWN) to both.
func FuzzProxyHeader(f *testing.F) {
	f.Add(uint8(2), []byte{203, 0, 113, 7}, []byte{127, 0, 0, 1}, uint16(5000), uint16(8080), false)
	f.Add(uint8(1), []byte{203, 0, 113, 7}, []byte{127, 0, 0, 1}, uint16(5000), uint16(8080), false)
	f.Add(uint8(2), []byte(net.ParseIP("2001:db8::1").To16()), []byte{127, 0, 0, 1}, uint16(1), uint16(443), true)
	f.Add(uint8(1), []byte(net.ParseIP("2001:db8::1").To16()), []byte(net.ParseIP("::1").To16()), uint16(0), uint16(0), false)
	f.Add(uint8(2), []byte(nil), []byte{127, 0, 0, 1}, uint16(0), uint16(80), false)
	f.Add(uint8(1), []byte(nil), []byte(nil), uint16(0), uint16(0), false)
	f.Add(uint8(2), []byte{10, 0, 0, 1}, []byte(nil), uint16(7), uint16(0), false)
	f.Fuzz(func(t *testing.T, version uint8, src, dst []byte, sp, dp uint16, zoned bool) {
		version = 1 + version%2
		h := ProxyHeader{Version: version}
		if a, ok := netip.AddrFromSlice(src); ok {
			if zoned && a.Is6() {
				a = a.WithZone("eth0")
			}
			h.Source = netip.AddrPortFrom(a, sp)
		}
		if a, ok := netip.AddrFromSlice(dst); ok {
			h.Destination = netip.AddrPortFrom(a, dp)
		}
		var w bytes.Buffer
		c := &bufConn{w: &w}
		if err := WriteProxyHeader(context.Background(), c, h); err != nil {
			t.Fatalf("WriteProxyHeader(%+v): %v", h, err)
		}
		enc := w.Bytes()
		got, n, err := proxyproto.Parse(enc)
		if err != nil || n != len(enc) {
			t.Fatalf("Parse(%q) = %d, %v", enc, n, err)
		}
		ref, err := goproxyproto.Read(bufio.NewReader(bytes.NewReader(enc)))
		if err != nil {
			t.Fatalf("go-proxyproto refuses %q: %v", enc, err)
		}
		if !h.Source.IsValid() {
			if got.Command != proxyproto.Local || ref.Command.IsProxy() {
				t.Fatalf("%q: want LOCAL from both, got %v and %v", enc, got.Command, ref.Command)
			}
			return
		}
		if got.Command != proxyproto.Proxy || !ref.Command.IsProxy() {
			t.Fatalf("%q: want PROXY from both, got %v and %v", enc, got.Command, ref.Command)
		}
		if got.Source.Addr().Unmap() != h.Source.Addr().WithZone("").Unmap() || got.Source.Port() != sp {
			t.Fatalf("%q: source %v, want %v", enc, got.Source, h.Source)
		}
		if h.Destination.IsValid() && (got.Destination.Addr().Unmap() != h.Destination.Addr().WithZone("").Unmap() || got.Destination.Port() != dp) {
			t.Fatalf("%q: destination %v, want %v", enc, got.Destination, h.Destination)
		}
		rs, ok := ref.SourceAddr.(*net.TCPAddr)
		if !ok {
			t.Fatalf("%q: go-proxyproto source %v", enc, ref.SourceAddr)
		}
		if ra, _ := netip.AddrFromSlice(rs.IP); ra.Unmap() != got.Source.Addr().Unmap() || uint16(rs.Port) != sp {
			t.Fatalf("%q: go-proxyproto reads source %v, proxyproto %v", enc, rs, got.Source)
		}
	})
}

// bufConn is a net.Conn that writes into a buffer.
type bufConn struct {
	net.Conn
	w *bytes.Buffer
}

func (c *bufConn) Write(b []byte) (int, error) { return c.w.Write(b) }
