package simulate

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/paduraksa/paduraksa/edge"
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
// datagram link: the edge's QUIC stack on the server's end (connlimit's
// QUIC decision, the handshake through the table's QUIC configs, quic-go's
// HTTP/3 server with the listener limits' settings and the connection
// facts it gives the gate), quic-go's HTTP/3 client on the other.
func (s *sim) runHTTP3(ctx context.Context) error {
	rq := s.rq
	serverAddr := &net.UDPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 443}
	if rq.peer.Addr().Is6() {
		serverAddr.IP = net.ParseIP("2001:db8::1")
	}
	if p := rq.url.Port(); p != "" {
		serverAddr.Port = portOf(p, 443)
	}
	srvPC, cliPC := memPacketPair(serverAddr, net.UDPAddrFromAddrPort(rq.peer))
	cfg := s.edgeConfig(&logCapture{})
	cfg.HTTP3Conn = srvPC
	srv, err := edge.Start(cfg)
	if err != nil {
		return listenerProblem(err)
	}
	defer srv.Close()
	cliTr := &quic.Transport{Conn: cliPC}
	defer cliTr.Close()

	qconf := &quic.Config{HandshakeIdleTimeout: patience, MaxIdleTimeout: patience}
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
		// A refusal is recorded before quic-go sends it, a selection
		// before the handshake goes on.
		s.mu.Lock()
		served, refusal := s.served, s.refusal
		s.mu.Unlock()
		switch {
		case served:
			return err
		case refusal != nil:
			return s.finish(refusal, nil)
		}
		var te *quic.TransportError
		if s.hs == nil || errors.As(err, &te) && te.Remote {
			return s.finish(&Outcome{Kind: TLSRefused, Stage: "handshake", Reason: s.tlsReason(err.Error())}, nil)
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
