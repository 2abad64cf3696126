package edge

import (
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
)

// h2Conns are the HTTPS listener's HTTP/2 connections, each with whether
// it is idle (no stream open), for Shutdown: net/http's Shutdown closes
// the idle HTTP/1.x connections at once, but holds an HTTP/2 connection
// active for as long as it is served, and the HTTP/2 server, after its
// GOAWAY, waits a second for the client to close an idle one. Shutdown
// ends the connections idle when it begins itself. One that goes idle
// later is left to the HTTP/2 server's second: it reports a connection
// idle as its last frame is written, before its buffer is flushed, so
// ending it then could cut the answer's end.
//
// An ending connection gets TLS's close_notify and a TCP FIN, not a
// close: the client, reading the end, closes, which ends the server's
// side, and a close with unread bytes would reset the connection instead.
type h2Conns struct {
	mu   sync.Mutex
	idle map[*tls.Conn]bool // guarded by mu
	n    atomic.Int64       // len(idle), read without mu
}

// note records a state net/http or its HTTP/2 server reported for c.
// Only HTTP/2 connections are kept: an HTTP/1.x one is net/http's to
// close. An HTTP/2 connection reports itself idle as it starts serving,
// and is kept from then on; finding which protocol a connection speaks
// costs 66 ns (tls.Conn.ConnectionState), spent only when one goes idle,
// so an HTTP/1.1 request over TLS pays it once.
func (h *h2Conns) note(c net.Conn, st http.ConnState) {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return
	}
	switch st {
	case http.StateActive:
		if h.n.Load() == 0 {
			return
		}
		h.mu.Lock()
		if _, ok := h.idle[tc]; ok {
			h.idle[tc] = false
		}
		h.mu.Unlock()
	case http.StateIdle:
		if tc.ConnectionState().NegotiatedProtocol != "h2" {
			return
		}
		h.mu.Lock()
		if h.idle == nil {
			h.idle = make(map[*tls.Conn]bool)
		}
		h.idle[tc] = true
		h.n.Store(int64(len(h.idle)))
		h.mu.Unlock()
	case http.StateClosed, http.StateHijacked:
		if h.n.Load() == 0 {
			return
		}
		h.mu.Lock()
		delete(h.idle, tc)
		h.n.Store(int64(len(h.idle)))
		h.mu.Unlock()
	}
}

// closeIdle ends the idle HTTP/2 connections.
func (h *h2Conns) closeIdle() {
	h.mu.Lock()
	var idle []*tls.Conn
	for c, ok := range h.idle {
		if ok {
			idle = append(idle, c)
		}
	}
	h.mu.Unlock()
	for _, c := range idle {
		endConn(c)
	}
}

// endConn ends c's writing side: close_notify, then the TCP FIN.
func endConn(c *tls.Conn) {
	c.CloseWrite()
	if cw, ok := c.NetConn().(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	} else {
		c.Close()
	}
}
