package h1client

import (
	"context"
	"net"
	"net/netip"
	"time"

	"github.com/paduraksa/paduraksa/proxyproto"
)

// ProxyHeader is the PROXY protocol header a connection starts with,
// before any TLS. It is comparable: a [Destination] with one is pooled
// apart from the same address with another, so that a connection only
// ever carries the requests of the client its header names.
type ProxyHeader struct {
	// Version is 1 or 2; 0 sends no header.
	Version uint8
	// Source is the client's address and Destination the local address
	// the client reached. An invalid Source (a health probe, a client
	// without an address) sends a LOCAL header (version 2) or "PROXY
	// UNKNOWN" (version 1), which tell the upstream to use the socket's
	// own addresses.
	Source, Destination netip.AddrPort
}

// Header returns the proxyproto header h stands for. Addresses of two
// families are both written as IPv6 (IPv4-mapped), and a Destination
// that is not valid is the unspecified address of Source's family.
func (h ProxyHeader) Header() proxyproto.Header {
	out := proxyproto.Header{Version: h.Version, Command: proxyproto.Local}
	s, d := h.Source, h.Destination
	if !s.IsValid() {
		return out
	}
	sa, da := s.Addr().WithZone(""), d.Addr().WithZone("")
	if !da.IsValid() {
		da = netip.IPv4Unspecified()
		if sa.Is6() {
			da = netip.IPv6Unspecified()
		}
	}
	out.Command, out.Protocol = proxyproto.Proxy, proxyproto.TCP4
	if !sa.Is4() || !da.Is4() {
		out.Protocol = proxyproto.TCP6
		sa, da = netip.AddrFrom16(sa.As16()), netip.AddrFrom16(da.As16())
	}
	out.Source, out.Destination = netip.AddrPortFrom(sa, s.Port()), netip.AddrPortFrom(da, d.Port())
	return out
}

// WriteProxyHeader writes h to c, by the context's deadline when it has
// one; with a Version of 0 it writes nothing. It is what every
// connection of a Destination with a header starts with, and what
// net/http's dialer of the same upstream writes.
func WriteProxyHeader(ctx context.Context, c net.Conn, h ProxyHeader) error {
	if h.Version == 0 {
		return nil
	}
	var buf [108]byte // a v1 line is at most 107 bytes, a v2 TCP6 header 52
	b, err := h.Header().AppendTo(buf[:0])
	if err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetWriteDeadline(dl)
		defer c.SetWriteDeadline(time.Time{})
	}
	_, err = c.Write(b)
	return err
}
