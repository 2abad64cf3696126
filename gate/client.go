package gate

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ConnInfo is what the server knows about a connection that the request
// does not carry: the PROXY-protocol source, and for QUIC the TLS facts.
// The server stores one per connection with [WithConnInfo] (or uses
// [ConnContext] as http.Server.ConnContext); the gate reads it from the
// request's context, which costs a short context walk and no allocation.
// A ConnInfo must not change once requests can see it.
type ConnInfo struct {
	// Peer is the connection's peer: the PROXY-protocol source when the
	// connection had a PROXY header, else the socket peer. The zero
	// value means "parse r.RemoteAddr".
	Peer netip.AddrPort
	// ProxyProtocol reports whether Peer came from a PROXY header.
	ProxyProtocol bool
	// TLSVersion and ALPN describe the connection's TLS; zero values mean
	// "read r.TLS" (net/http fills it for TCP).
	TLSVersion uint16
	ALPN       string
	// HTTP3 reports a QUIC connection.
	HTTP3 bool
}

type connInfoKey struct{}

// WithConnInfo returns ctx carrying ci, for http.Server.ConnContext or
// quic-go's ConnContext hooks.
func WithConnInfo(ctx context.Context, ci *ConnInfo) context.Context {
	return context.WithValue(ctx, connInfoKey{}, ci)
}

// ConnInfoFrom returns the ConnInfo a context carries, or nil. It
// allocates nothing.
func ConnInfoFrom(ctx context.Context) *ConnInfo {
	ci, _ := ctx.Value(connInfoKey{}).(*ConnInfo)
	return ci
}

// ProxyConn is implemented by connections whose RemoteAddr is a PROXY
// header's source rather than the socket's peer (proxyproto.Conn does).
type ProxyConn interface {
	net.Conn
	Raw() net.Conn
}

// ConnContext is an http.Server.ConnContext: it records the connection's
// peer once, so requests do not parse r.RemoteAddr, and whether it came
// from a PROXY header (the connection, or the one under *tls.Conn,
// implements [ProxyConn]). It costs two allocations per connection, none
// per request.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	ci := &ConnInfo{}
	inner := c
	if tc, ok := c.(*tls.Conn); ok {
		inner = tc.NetConn()
	}
	// Listener wrappers (connection limits, listener limits) sit between
	// the server's connection and the PROXY-protocol one; each says what
	// it wraps with NetConn, as crypto/tls does.
	for wrapped := inner; wrapped != nil; {
		if _, ok := wrapped.(ProxyConn); ok {
			ci.ProxyProtocol = true
			break
		}
		u, ok := wrapped.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		wrapped = u.NetConn()
	}
	switch a := inner.RemoteAddr().(type) {
	case *net.TCPAddr:
		ap := a.AddrPort()
		ci.Peer = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	default:
		if ap, err := netip.ParseAddrPort(a.String()); err == nil {
			ci.Peer = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		}
	}
	return WithConnInfo(ctx, ci)
}

// ClientSource says where the client address came from.
type ClientSource uint8

const (
	// FromPeer: the connection's peer is the client.
	FromPeer ClientSource = iota
	// FromForwardedFor: a trusted proxy supplied it in X-Forwarded-For.
	FromForwardedFor
	// FromUnknown: no address could be read (not a TCP peer).
	FromUnknown
	// FromCloudflare: a trusted Cloudflare peer supplied it in
	// CF-Connecting-IP.
	FromCloudflare
)

// String returns the source's name.
func (s ClientSource) String() string {
	switch s {
	case FromPeer:
		return "peer"
	case FromForwardedFor:
		return "x-forwarded-for"
	case FromCloudflare:
		return "cf-connecting-ip"
	}
	return "unknown"
}

const (
	schemeHTTP  = "http"
	schemeHTTPS = "https"
)

// resolveClient sets Peer, Client, ClientSource, Scheme and the trust
// flags of rq. It allocates nothing.
func (g *Gate) resolveClient(r *http.Request, rq *Request) {
	ci := rq.Conn
	rq.Scheme = schemeHTTP
	if r.TLS != nil || (ci != nil && ci.HTTP3) {
		rq.Scheme = schemeHTTPS
	}
	connScheme := rq.Scheme
	if ci != nil && ci.Peer.IsValid() {
		rq.Peer, rq.ProxyProtocol = ci.Peer, ci.ProxyProtocol
	} else {
		peer, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil {
			rq.ClientSource = FromUnknown
			return
		}
		rq.Peer = netip.AddrPortFrom(peer.Addr().Unmap(), peer.Port())
	}
	rq.Client, rq.ClientSource = rq.Peer.Addr(), FromPeer
	if !g.probes.Empty() {
		rq.Probe = rq.Client.IsValid() && g.probes.ContainsNum(rq.clientNum())
	}
	if g.trusted.Empty() || !rq.Client.IsValid() || !g.trusted.ContainsNum(rq.clientNum()) {
		return
	}
	rq.TrustedPeer = true
	h := r.Header
	if g.cloudflare {
		rq.CloudflareTrusted = true
		if v := h["Cf-Connecting-Ip"]; len(v) == 1 {
			if a, err := netip.ParseAddr(strings.Trim(v[0], " \t")); err == nil && a.Zone() == "" {
				rq.Client, rq.ClientSource = a.Unmap(), FromCloudflare
			}
		}
		if rq.ClientSource != FromCloudflare {
			g.fallback(rq)
			g.fromForwardedFor(h, rq)
		}
		switch parseCFVisitor(h["Cf-Visitor"]) {
		case schemeHTTPS:
			rq.Scheme = schemeHTTPS
		case schemeHTTP:
			rq.Scheme = schemeHTTP
			if connScheme == schemeHTTP && !rq.DryRun {
				g.state.counters.CloudflarePlainHTTP.Add(1)
			}
		default:
			rq.Scheme = forwardedProto(h["X-Forwarded-Proto"], rq.Scheme)
		}
		return
	}
	if !g.fromForwardedFor(h, rq) {
		g.fallback(rq)
	}
	if g.trustProto {
		rq.Scheme = forwardedProto(h["X-Forwarded-Proto"], rq.Scheme)
	}
}

func (g *Gate) fallback(rq *Request) {
	if !rq.DryRun {
		g.state.counters.HeaderFallback.Add(1)
	}
}

// fromForwardedFor sets the client from X-Forwarded-For and reports
// whether it could.
func (g *Gate) fromForwardedFor(h http.Header, rq *Request) bool {
	v := h["X-Forwarded-For"]
	if len(v) == 0 {
		return false
	}
	if c, ok := RightmostUntrusted(v, g.trusted.Contains); ok {
		rq.Client, rq.ClientSource = c, FromForwardedFor
		return true
	}
	return false
}

func forwardedProto(v []string, def string) string {
	if len(v) == 1 {
		switch v[0] {
		case schemeHTTPS:
			return schemeHTTPS
		case schemeHTTP:
			return schemeHTTP
		}
	}
	return def
}

// parseCFVisitor returns "https" or "http" for a CF-Visitor header that is
// exactly {"scheme":"https"} or {"scheme":"http"}, else "".
func parseCFVisitor(v []string) string {
	if len(v) != 1 {
		return ""
	}
	switch v[0] {
	case `{"scheme":"https"}`:
		return schemeHTTPS
	case `{"scheme":"http"}`:
		return schemeHTTP
	}
	return ""
}

// RightmostUntrusted walks X-Forwarded-For values (every header line, in
// order) from the right and returns the first address that trusted does
// not report, IPv4-mapped addresses unmapped. When every address is
// trusted, the leftmost is the client. A malformed element (or one with a
// zone) stops the walk: nothing left of it can be believed, and the last
// trusted hop found so far is returned, if any. It allocates nothing.
func RightmostUntrusted(values []string, trusted func(netip.Addr) bool) (netip.Addr, bool) {
	var last netip.Addr
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		end := len(v)
		for {
			start := strings.LastIndexByte(v[:end], ',')
			a, err := netip.ParseAddr(strings.Trim(v[start+1:end], " \t"))
			if err != nil || a.Zone() != "" {
				return last, last.IsValid()
			}
			a = a.Unmap()
			if !trusted(a) {
				return a, true
			}
			last = a
			if start < 0 {
				break
			}
			end = start
		}
	}
	return last, last.IsValid()
}
