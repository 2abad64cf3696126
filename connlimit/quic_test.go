package connlimit_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const quicALPN = "connlimit-test"

// quicServer runs a quic-go server on 127.0.0.1 whose Transport refuses
// through lim.QUICConnContext (when transportHook) and whose accept loop
// counts each connection with count (AdmitQUIC or HTTP3ConnContext).
type quicServer struct {
	addr     *net.UDPAddr
	admitted chan error // one result per accepted connection
}

func startQUICServer(t *testing.T, lim *connlimit.Limiter, transportHook, early bool) *quicServer {
	t.Helper()
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	tr := &quic.Transport{Conn: udp}
	if transportHook {
		tr.ConnContext = lim.QUICConnContext
	}
	tlsConf := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{quicALPN}}
	s := &quicServer{addr: udp.LocalAddr().(*net.UDPAddr), admitted: make(chan error, 16)}
	ctx, cancel := context.WithCancel(context.Background())
	accept := func(ctx context.Context) (*quic.Conn, error) { return nil, errors.New("unset") }
	if early {
		ln, err := tr.ListenEarly(tlsConf, &quic.Config{})
		require.NoError(t, err)
		accept = ln.Accept
	} else {
		ln, err := tr.Listen(tlsConf, &quic.Config{})
		require.NoError(t, err)
		accept = ln.Accept
	}
	t.Cleanup(func() {
		cancel()
		_ = tr.Close()
	})
	go func() {
		for {
			c, err := accept(ctx)
			if err != nil {
				return
			}
			if early {
				// As http3.Server does: judge the connection, which may
				// still be handshaking, without blocking the accept loop.
				lim.HTTP3ConnContext(ctx, c)
				go func() {
					select {
					case <-c.HandshakeComplete():
						s.admitted <- nil
					case <-c.Context().Done():
						s.admitted <- context.Cause(c.Context())
					}
				}()
				continue
			}
			go func() {
				err := lim.AdmitQUIC(c)
				if err != nil {
					_ = c.CloseWithError(connlimit.QUICRefusedCode, "connection limit")
				}
				s.admitted <- err
			}()
		}
	}()
	return s
}

func dialQUIC(t *testing.T, s *quicServer) (*quic.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	return quic.DialAddr(ctx, s.addr.String(),
		&tls.Config{InsecureSkipVerify: true, NextProtos: []string{quicALPN}}, &quic.Config{})
}

func isConnectionRefused(err error) bool {
	var te *quic.TransportError
	return errors.As(err, &te) && te.ErrorCode == quic.ConnectionRefused
}

func TestQUICCountsEstablishedConnections(t *testing.T) {
	lim, err := connlimit.New(connlimit.Config{PerAddress: 1})
	require.NoError(t, err)
	s := startQUICServer(t, lim, true, false)

	first, err := dialQUIC(t, s)
	require.NoError(t, err)
	require.NoError(t, recv(t, s.admitted))
	assert.Equal(t, uint64(1), lim.Stats().Counted)

	// The address is at its cap: refused at the first Initial packet.
	_, err = dialQUIC(t, s)
	require.Error(t, err)
	assert.True(t, isConnectionRefused(err), "got %v", err)
	// Refusals at the handshake count refused Initial packets: a
	// ClientHello with a post-quantum key share spans two.
	assert.GreaterOrEqual(t, lim.Stats().OverCapQUIC, uint64(1))

	// Closing the first gives its place back.
	require.NoError(t, first.CloseWithError(0, ""))
	require.Eventually(t, func() bool { return lim.Stats().Counted == 0 }, guard, time.Millisecond)

	again, err := dialQUIC(t, s)
	require.NoError(t, err)
	require.NoError(t, recv(t, s.admitted))
	assert.Equal(t, uint64(1), lim.Stats().Counted)
	require.NoError(t, again.CloseWithError(0, ""))
	require.Eventually(t, func() bool { return lim.Stats().Counted == 0 }, guard, time.Millisecond)
}

func TestQUICDenyAtHandshake(t *testing.T) {
	lim, err := connlimit.New(connlimit.Config{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	require.NoError(t, err)
	s := startQUICServer(t, lim, true, false)
	_, err = dialQUIC(t, s)
	require.Error(t, err)
	assert.True(t, isConnectionRefused(err), "got %v", err)
	st := lim.Stats()
	assert.GreaterOrEqual(t, st.DeniedQUIC, uint64(1))
	assert.Equal(t, uint64(0), st.Counted)
	select {
	case err := <-s.admitted:
		t.Fatalf("a denied connection was accepted: %v", err)
	default:
	}
}

// Without the Transport hook, the cap is applied once the handshake
// completes: the connection is closed with QUICRefusedCode. With an
// EarlyListener the connection is judged only after its handshake.
func TestQUICRefusedAfterHandshake(t *testing.T) {
	lim, err := connlimit.New(connlimit.Config{PerAddress: 1})
	require.NoError(t, err)
	s := startQUICServer(t, lim, false, true)

	first, err := dialQUIC(t, s)
	require.NoError(t, err)
	require.NoError(t, recv(t, s.admitted))
	require.Eventually(t, func() bool { return lim.Stats().Counted == 1 }, guard, time.Millisecond)

	second, err := dialQUIC(t, s)
	require.NoError(t, err, "the handshake itself completes")
	recv(t, second.Context().Done())
	var ae *quic.ApplicationError
	require.ErrorAs(t, context.Cause(second.Context()), &ae)
	assert.Equal(t, connlimit.QUICRefusedCode, ae.ErrorCode)
	assert.True(t, ae.Remote)
	recv(t, s.admitted)

	st := lim.Stats()
	assert.Equal(t, uint64(1), st.OverCapQUIC)
	assert.Equal(t, uint64(1), st.Counted)
	require.NoError(t, first.CloseWithError(0, ""))
	require.Eventually(t, func() bool { return lim.Stats().Counted == 0 }, guard, time.Millisecond)
}

// The QUIC hook of a dry run refuses a denied source at its first packet,
// as a counting Limiter does, tells OnRefusal, and counts nothing.
func TestQUICDryRunDeniesAtHandshake(t *testing.T) {
	heard := make(chan connlimit.Refusal, 16)
	lim, err := connlimit.New(connlimit.Config{
		Deny:      []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		DryRun:    true,
		OnRefusal: func(r connlimit.Refusal) { heard <- r },
	})
	require.NoError(t, err)
	s := startQUICServer(t, lim, true, false)
	_, err = dialQUIC(t, s)
	require.Error(t, err)
	assert.True(t, isConnectionRefused(err), "got %v", err)
	r := recv(t, heard)
	assert.Equal(t, connlimit.QUIC, r.Transport)
	assert.Equal(t, netip.MustParseAddr("127.0.0.1"), r.Addr)
	assert.ErrorIs(t, r.Err, connlimit.ErrDenied)
	assert.Equal(t, connlimit.Stats{}, lim.Stats())
}
