package simulate

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// memPacketConn is one end of an in-memory datagram link: what one end
// writes, the other reads, from the address the writer has.
type memPacketConn struct {
	local *net.UDPAddr
	in    chan []byte
	peer  *memPacketConn

	closed chan struct{}
	once   sync.Once
	dl     deadline
}

func memPacketPair(a, b *net.UDPAddr) (*memPacketConn, *memPacketConn) {
	x := &memPacketConn{local: a, in: make(chan []byte, 256), closed: make(chan struct{})}
	y := &memPacketConn{local: b, in: make(chan []byte, 256), closed: make(chan struct{})}
	x.peer, y.peer = y, x
	return x, y
}

func (c *memPacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		deadline, changed := c.dl.get()
		select {
		case b := <-c.in:
			return copy(p, b), c.peer.local, nil
		case <-c.closed:
			return 0, nil, net.ErrClosed
		case <-deadline:
			return 0, nil, os.ErrDeadlineExceeded
		case <-changed:
		}
	}
}

func (c *memPacketConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	select {
	case c.peer.in <- append([]byte(nil), p...):
	default: // a full link drops, as a network does
	}
	return len(p), nil
}

func (c *memPacketConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *memPacketConn) LocalAddr() net.Addr { return c.local }

func (c *memPacketConn) SetReadDeadline(t time.Time) error { c.dl.set(t); return nil }

func (c *memPacketConn) SetDeadline(t time.Time) error    { return c.SetReadDeadline(t) }
func (c *memPacketConn) SetWriteDeadline(time.Time) error { return nil }

// runHTTP3 simulates an HTTP/3 request over quic-go on an in-memory
// datagram link: connlimit's QUIC decision, the handshake through the
// table's QUIC configs, quic-go's HTTP/3 server with the listener limits'
// settings, and the connection facts the edge gives the gate.
func (s *sim) runHTTP3(ctx context.Context) error {
	rq := s.rq
	lim, err := s.limiter()
	if err != nil {
		return err
	}
	if err := lim.Check(rq.peer.Addr(), connlimit.QUIC); err != nil {
		return s.finish(&Outcome{Kind: ConnectionRefused, Stage: "connections", Reason: err.Error()}, nil)
	}
	serverAddr := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 443}
	if rq.peer.Addr().Is6() {
		serverAddr.IP = net.ParseIP("2001:db8::1")
	}
	if p := rq.url.Port(); p != "" {
		serverAddr.Port = portOf(p, 443)
	}
	srvPC, cliPC := memPacketPair(serverAddr, net.UDPAddrFromAddrPort(rq.peer))
	srvTr := &quic.Transport{Conn: srvPC}
	cliTr := &quic.Transport{Conn: cliPC}
	defer srvTr.Close()
	defer cliTr.Close()

	limits := s.t.Listener.Limits
	base := &tls.Config{GetConfigForClient: s.getConfig(tlsselect.QUIC), NextProtos: []string{http3.NextProtoH3}, MinVersion: tls.VersionTLS13}
	qconf := &quic.Config{HandshakeIdleTimeout: patience, MaxIdleTimeout: patience}
	ln, err := srvTr.ListenEarly(http3.ConfigureTLSConfig(base), qconf)
	if err != nil {
		return err
	}
	lim3 := limits.WithDefaults()
	srv := &http3.Server{
		Handler:        limits.Handler(http.HandlerFunc(s.serveHTTP)),
		MaxHeaderBytes: max(lim3.MaxHeaderBytes, 0),
		ConnContext: func(ctx context.Context, c *quic.Conn) context.Context {
			ci := &gate.ConnInfo{HTTP3: true, TLSVersion: tls.VersionTLS13, ALPN: http3.NextProtoH3}
			if ua, ok := c.RemoteAddr().(*net.UDPAddr); ok {
				ap := ua.AddrPort()
				ci.Peer = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
			}
			return gate.WithConnInfo(ctx, ci)
		},
	}
	var wg sync.WaitGroup
	wg.Go(func() { srv.ServeListener(ln) })
	defer wg.Wait()
	defer srv.Close()

	tr := &http3.Transport{
		TLSClientConfig: &tls.Config{ServerName: rq.sni, NextProtos: rq.alpn, MinVersion: tls.VersionTLS10, MaxVersion: rq.tlsMax, InsecureSkipVerify: true},
		QUICConfig:      qconf,
		Dial: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			c, err := cliTr.DialEarly(ctx, serverAddr, tc, qc)
			if err == nil {
				st := c.ConnectionState().TLS
				hs := s.handshakeStep(&st)
				s.hs = &hs
			}
			return c, err
		},
	}
	defer tr.Close()
	req := s.newRequest().WithContext(ctx)
	u := *rq.url
	req.URL = &u
	resp, err := tr.RoundTrip(req)
	if err != nil {
		s.mu.Lock()
		served := s.served
		s.mu.Unlock()
		if served {
			return err
		}
		var te *quic.TransportError
		if s.hs == nil || errors.As(err, &te) && te.Remote {
			return s.finish(&Outcome{Kind: TLSRefused, Stage: "handshake", Reason: s.tlsReason(err)}, nil)
		}
		return s.finish(&Outcome{Kind: ServerRefused, Stage: "server", Reason: "connection closed: " + err.Error()}, nil)
	}
	resp.Body.Close()
	return s.finish(nil, resp)
}

// SetReadBuffer and SetWriteBuffer tell quic-go the link's buffers need
// no tuning.
func (c *memPacketConn) SetReadBuffer(int) error  { return nil }
func (c *memPacketConn) SetWriteBuffer(int) error { return nil }
