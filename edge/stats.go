package edge

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"

	"github.com/quic-go/quic-go"

	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/paduraksa/paduraksa/proxyproto"
)

// Listeners of [Stats.Open], as [Server.Addr] names them.
const (
	ListenerHTTP  = "http"
	ListenerHTTPS = "https"
	ListenerHTTP3 = "http3"
)

// Stats are the edge's connection counts. The deny list and per-address
// refusals are the [Server.Limiter]'s (connlimit.Stats), the TLS
// selection's refusals the tlsselect.Selector's.
type Stats struct {
	// Open counts the connections open now, by listener, parked idle
	// HTTP/1.1 connections included (listenlimits.Limits.IdleRelease).
	Open map[string]int64
	// Parked counts the idle HTTP/1.1 connections parked now
	// (listenlimits.Limits.IdleRelease); they are among Open.
	Parked int64
	// TLSHandshakeFailures counts TLS connections over TCP whose
	// handshake failed (an unknown name, no shared version or cipher, a
	// client certificate refused, a client that went away).
	TLSHandshakeFailures uint64
	// ProxyProtocol sums the refusals of the PROXY-protocol listeners.
	ProxyProtocol proxyproto.ListenerStats
}

// The listeners, as indices of counts and listenerNames.
const (
	kindHTTP = iota
	kindHTTPS
	kindHTTP3
)

// counts are a Server's live connection counts.
type counts struct {
	open      [3]atomic.Int64 // by kind
	handshake atomic.Uint64
	pp        []*proxyproto.Listener
	limits    [2]*listenlimits.Listener // http, https: their parked connections
}

var listenerNames = [...]string{kindHTTP: ListenerHTTP, kindHTTPS: ListenerHTTPS, kindHTTP3: ListenerHTTP3}

// Stats returns the server's connection counts.
func (s *Server) Stats() Stats {
	st := Stats{Open: make(map[string]int64, len(listenerNames)), TLSHandshakeFailures: s.counts.handshake.Load()}
	for i, n := range listenerNames {
		if s.addrs[n] != nil {
			st.Open[n] = s.counts.open[i].Load()
			if i < len(s.counts.limits) && s.counts.limits[i] != nil {
				p := int64(s.counts.limits[i].Parked())
				st.Open[n] += p
				st.Parked += p
			}
		}
	}
	for _, l := range s.counts.pp {
		ls := l.Stats()
		st.ProxyProtocol.Untrusted += ls.Untrusted
		st.ProxyProtocol.Invalid += ls.Invalid
		st.ProxyProtocol.Timeout += ls.Timeout
	}
	return st
}

// connState counts a TCP listener's open connections (index i).
func (s *Server) connState(i int) func(net.Conn, http.ConnState) {
	return func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			s.counts.open[i].Add(1)
		case http.StateClosed, http.StateHijacked:
			s.counts.open[i].Add(-1)
			if s.closing.Load() {
				select {
				case s.connClosed <- struct{}{}:
				default:
				}
			}
		}
	}
}

// quicOpened counts a QUIC connection until it ends.
func (s *Server) quicOpened(c *quic.Conn) {
	s.counts.open[kindHTTP3].Add(1)
	context.AfterFunc(c.Context(), func() { s.counts.open[kindHTTP3].Add(-1) })
}

// errorLog is net/http's ErrorLog writer: it counts the TLS handshake
// failures the server reports there, tells Config.OnHandshakeFailure, and
// passes every line on.
type errorLog struct {
	s    *Server
	next interface{ Write([]byte) (int, error) }
}

// handshakeError starts the line net/http's server logs for a failed TLS
// handshake: "http: TLS handshake error from ADDR: REASON".
var handshakeError = []byte("http: TLS handshake error from ")

func (e errorLog) Write(p []byte) (int, error) {
	if i := bytes.Index(p, handshakeError); i >= 0 {
		e.s.counts.handshake.Add(1)
		if e.s.onFailure != nil {
			e.s.onFailure(parseHandshakeFailure(p[i+len(handshakeError):]))
		}
	}
	return e.next.Write(p)
}

// parseHandshakeFailure reads "ADDR: REASON\n", the end of net/http's
// line. An address holds no ": " (an IPv6 one is in brackets).
func parseHandshakeFailure(p []byte) HandshakeFailure {
	p = bytes.TrimSuffix(p, []byte("\n"))
	addr, reason, ok := bytes.Cut(p, []byte(": "))
	if !ok {
		return HandshakeFailure{Reason: string(p)}
	}
	ap, _ := netip.ParseAddrPort(string(addr))
	return HandshakeFailure{Remote: ap, Reason: string(reason)}
}
