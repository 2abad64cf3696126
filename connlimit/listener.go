package connlimit

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
)

// Listener wraps a net.Listener with a Limiter. Accept returns only
// admitted connections: a refused one is closed unread, before any TLS
// handshake, and Accept goes on to the next connection without waiting.
// A counted connection gives its place back when it is closed, however its
// handler ends, because net/http (and any correct server) closes every
// connection it accepts.
//
// The address judged is the accepted connection's RemoteAddr. Put the
// Listener above a PROXY-protocol listener: its connections report the
// PROXY source as RemoteAddr, so each visitor of a load balancer is judged
// by its own address. Set ClientAddr to judge something else.
//
// Use it as a struct literal:
//
//	ln = &connlimit.Listener{Listener: ln, Limiter: lim}
//
// A Listener is safe for concurrent use, like the net.Listener it wraps.
// Without a net.Listener (the zero Listener) it accepts nothing: Accept
// returns [ErrNoListener].
type Listener struct {
	net.Listener

	// Limiter decides. Nil admits every connection.
	Limiter *Limiter

	// ClientAddr, if set, returns the address to judge for c. Nil means
	// AddrOf(c.RemoteAddr()). An invalid result is the unknown client:
	// counted, with every other connection whose address is unknown,
	// under one shared key (see Limiter.Admit).
	ClientAddr func(c net.Conn) netip.Addr
}

// ErrNoListener is the error of Accept on a [Listener] without a
// net.Listener to wrap.
var ErrNoListener = errors.New("connlimit: a Listener without a net.Listener accepts nothing")

// Accept waits for and returns the next admitted connection. Connections
// that do not count (the cap off, trusted proxies, a full table) are
// returned as they are; counted ones are wrapped so that Close releases
// their place. The wrapper forwards CloseWrite and exposes the accepted
// connection through NetConn.
func (ln *Listener) Accept() (net.Conn, error) {
	if ln.Listener == nil {
		return nil, ErrNoListener
	}
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		var addr netip.Addr
		if ln.ClientAddr != nil {
			addr = ln.ClientAddr(c)
		} else {
			addr = AddrOf(c.RemoteAddr())
		}
		t, err := ln.Limiter.Admit(addr, TCP)
		if err != nil {
			// Refused: close unread, so the TLS handshake never starts.
			_ = c.Close()
			continue
		}
		if !t.Counted() {
			return c, nil
		}
		return &conn{Conn: c, lim: ln.Limiter, ticket: t}, nil
	}
}

// AddrOf returns the IP address of a net.Addr without allocating for the
// standard address types (*net.TCPAddr, *net.UDPAddr, *net.IPAddr) and for
// any type with an AddrPort() netip.AddrPort method. A *net.UnixAddr has
// no IP address, whatever its path says. Other types are parsed from their
// String form. It returns the zero Addr when there is no IP address.
func AddrOf(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case nil, *net.UnixAddr:
		return netip.Addr{}
	case *net.IPAddr:
		if a == nil {
			return netip.Addr{}
		}
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.WithZone(a.Zone)
	case *net.TCPAddr:
		if a == nil {
			return netip.Addr{}
		}
		return a.AddrPort().Addr()
	case *net.UDPAddr:
		if a == nil {
			return netip.Addr{}
		}
		return a.AddrPort().Addr()
	case interface{ AddrPort() netip.AddrPort }:
		return a.AddrPort().Addr()
	}
	s := a.String()
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr()
	}
	addr, _ := netip.ParseAddr(s)
	return addr
}

// conn is an admitted, counted connection. Close releases its place once.
type conn struct {
	net.Conn
	lim      *Limiter
	ticket   Ticket
	released atomic.Bool
}

// Close releases the connection's place (once, however many times Close is
// called) and closes the connection.
func (c *conn) Close() error {
	if c.released.CompareAndSwap(false, true) {
		c.lim.Release(c.ticket)
	}
	return c.Conn.Close()
}

// CloseWrite shuts down the writing side of the wrapped connection (net/http
// uses it to close a connection gracefully). It returns
// errors.ErrUnsupported when the wrapped connection cannot.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// NetConn returns the wrapped connection.
func (c *conn) NetConn() net.Conn { return c.Conn }
