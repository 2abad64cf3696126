package connlimit

import (
	"context"
	"errors"

	"github.com/quic-go/quic-go"
)

// QUICRefusedCode is the application error code a QUIC connection refused
// after its handshake is closed with by HTTP3ConnContext: HTTP/3's
// H3_EXCESSIVE_LOAD (RFC 9114, section 8.1).
const QUICRefusedCode quic.ApplicationErrorCode = 0x107

// QUICConnContext has the signature of quic.Transport.ConnContext: the
// first of the two QUIC steps described in the package documentation. It
// refuses, with ErrDenied or ErrOverCap, a connection attempt whose source
// is on the deny list or whose address key already holds its cap; quic-go
// then answers CONNECTION_REFUSED. It returns ctx unchanged otherwise, and
// allocates nothing. Chain it from your own ConnContext if you have one.
//
// quic-go calls ConnContext for each Initial packet of a connection it does
// not know yet, so the QUIC refusal counters count refused packets: a
// ClientHello that spans two packets (a post-quantum key share does) or is
// retransmitted counts more than once.
func (l *Limiter) QUICConnContext(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
	if ci != nil {
		if err := l.Check(AddrOf(ci.RemoteAddr), QUIC); err != nil {
			return nil, err
		}
	}
	return ctx, nil
}

// errHandshakeFailed is returned by AdmitQUIC for a connection that closed
// before its handshake completed.
var errHandshakeFailed = errors.New("connlimit: QUIC connection closed before its handshake completed")

// AdmitQUIC counts c, a server-side connection, once its handshake has
// completed; it blocks until then (or until c closes, which returns an
// error). The place is given back when c.Context() is done. It returns
// ErrDenied or ErrOverCap when the connection is refused and leaves it to
// the caller to close c with its protocol's error code.
//
// With a quic.Listener the handshake is already complete when Accept
// returns c; with a quic.EarlyListener it may not be, so call AdmitQUIC
// from the connection's own goroutine.
func (l *Limiter) AdmitQUIC(c *quic.Conn) error {
	select {
	case <-c.HandshakeComplete():
	case <-c.Context().Done():
		return errHandshakeFailed
	}
	t, err := l.Admit(AddrOf(c.RemoteAddr()), QUIC)
	if err != nil || !t.Counted() {
		return err
	}
	context.AfterFunc(c.Context(), func() { l.Release(t) })
	return nil
}

// HTTP3ConnContext has the signature of http3.Server.ConnContext. It counts
// c as AdmitQUIC does and closes it with QUICRefusedCode when refused. A
// connection whose handshake is still in progress (from a
// quic.EarlyListener) is judged by a goroutine that ends when the
// handshake completes or the connection closes. It returns ctx unchanged.
func (l *Limiter) HTTP3ConnContext(ctx context.Context, c *quic.Conn) context.Context {
	if l == nil {
		return ctx
	}
	select {
	case <-c.HandshakeComplete():
		l.admitOrClose(c)
	default:
		go l.admitOrClose(c)
	}
	return ctx
}

func (l *Limiter) admitOrClose(c *quic.Conn) {
	if err := l.AdmitQUIC(c); errors.Is(err, ErrDenied) || errors.Is(err, ErrOverCap) {
		_ = c.CloseWithError(QUICRefusedCode, "connection limit")
	}
}
