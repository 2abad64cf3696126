package proxy

import (
	"context"
	"net"
	"net/http"
	"net/netip"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/h1client"
)

// The PROXY protocol toward upstreams. A header names one client, and is
// written once, first on a connection: so a connection of a cluster with
// the protocol on carries the requests of one client connection only.
//
// The direct HTTP/1.1 client pools connections per destination and
// header ([h1client.Destination.Proxy]): the requests of one client
// connection reuse its upstream connection, and no other client's ever
// do; at most h1client.DefaultMaxIdleProxied clients keep one idle, and
// past that a connection closes when its exchange ends. net/http's pool (HTTP/2 to TLS destinations, h2c, the requests the
// direct client does not carry) cannot be keyed by client, so with the
// protocol on its transports keep no connection alive: each such request
// dials (and over TLS, handshakes) a connection of its own. Its dialer
// reads the header from the request's context, the only way into
// net/http's dial; a dial without one (a health probe) sends LOCAL
// (v2) or "PROXY UNKNOWN" (v1).

// proxyHeaderKey is the context key of a request's PROXY header (a
// *h1client.ProxyHeader), set by traceCtx.
type proxyHeaderKey struct{}

// proxyHeader returns the PROXY header of the forward's client (see
// [ProxyAddresses]).
func (f *forward) proxyHeader(v ProxyProtocol) h1client.ProxyHeader {
	var local netip.AddrPort
	if a, ok := f.r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok {
		local = a.AddrPort()
	}
	rq := f.rq
	src, dst := ProxyAddresses(rq.Client, rq.ClientSource, rq.Peer, local)
	return h1client.ProxyHeader{Version: uint8(v), Source: src, Destination: dst}
}

// ProxyAddresses returns the addresses the PROXY header of a request's
// upstream connections carries: the client's address as the gate
// resolved it (after a PROXY header from the client side and trusted
// forwarders) with the peer's port when the peer is the client, else
// port 0, and the local address the client reached (IPv4-mapped
// addresses unmapped). An invalid source, for a client without an
// address, makes the header LOCAL (v1: "PROXY UNKNOWN"). The simulator
// reports these.
func ProxyAddresses(client netip.Addr, from gate.ClientSource, peer, local netip.AddrPort) (src, dst netip.AddrPort) {
	if from == gate.FromUnknown || !client.IsValid() {
		return src, dst
	}
	var port uint16
	if from == gate.FromPeer {
		port = peer.Port()
	}
	src = netip.AddrPortFrom(client, port)
	if local.IsValid() {
		dst = netip.AddrPortFrom(local.Addr().Unmap(), local.Port())
	}
	return src, dst
}

// withProxyHeader puts ph on the outgoing request's context, for
// net/http's dialer. It allocates the header.
func (o *exchange) withProxyHeader(ph h1client.ProxyHeader) {
	if tc, ok := o.req.Context().(*traceCtx); ok {
		tc.proxy = &ph
	}
}

// proxyHeaderOf returns the PROXY header a dial's context carries, or
// the LOCAL one of version v.
func proxyHeaderOf(ctx context.Context, v ProxyProtocol) h1client.ProxyHeader {
	if ph, ok := ctx.Value(proxyHeaderKey{}).(*h1client.ProxyHeader); ok && ph != nil {
		return *ph
	}
	return h1client.ProxyHeader{Version: uint8(v)}
}

// dialProxy dials addr and writes the PROXY header of the dial's
// context; a failed write is a dial error, as nothing of the request
// left.
func dialProxy(ctx context.Context, d *net.Dialer, v ProxyProtocol, network, addr string) (net.Conn, error) {
	c, err := d.DialContext(ctx, network, addr)
	if err != nil || v == ProxyProtocolOff {
		return c, err
	}
	if err := h1client.WriteProxyHeader(ctx, c, proxyHeaderOf(ctx, v)); err != nil {
		c.Close()
		return nil, &net.OpError{Op: "dial", Net: network, Addr: c.RemoteAddr(), Err: err}
	}
	return c, nil
}
