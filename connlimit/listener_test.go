package connlimit_test

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/proxyproto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeConn is a connection whose RemoteAddr is what a PROXY-protocol
// listener reports: the PROXY source, not the socket's peer.
type fakeConn struct {
	net.Conn
	remote net.Addr
	closed atomic.Int32
	name   string
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c *fakeConn) Close() error         { c.closed.Add(1); return nil }

// fakeListener hands out queued connections. An Accept that finds none
// for guard fails, so a Listener that refuses what it should return fails
// the test instead of blocking it.
type fakeListener struct{ conns chan net.Conn }

var errNoneQueued = errors.New("fakeListener: no connection queued")

func (l *fakeListener) Accept() (net.Conn, error) {
	select {
	case c, ok := <-l.conns:
		if !ok {
			return nil, net.ErrClosed
		}
		return c, nil
	case <-time.After(guard):
		return nil, errNoneQueued
	}
}
func (l *fakeListener) Close() error   { close(l.conns); return nil }
func (l *fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func proxySource(s string) *net.TCPAddr {
	return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s))
}

func TestListenerJudgesRemoteAddr(t *testing.T) {
	lim, err := connlimit.New(connlimit.Config{PerAddress: 1})
	require.NoError(t, err)
	inner := &fakeListener{conns: make(chan net.Conn, 4)}
	ln := &connlimit.Listener{Listener: inner, Limiter: lim}

	// Three visitors behind one load balancer: the socket peer would be
	// the balancer for all of them, RemoteAddr is each visitor's own.
	a1 := &fakeConn{remote: proxySource("203.0.113.7:4000"), name: "a1"}
	a2 := &fakeConn{remote: proxySource("[::ffff:203.0.113.7]:4001"), name: "a2"}
	b1 := &fakeConn{remote: proxySource("198.51.100.9:4000"), name: "b1"}
	inner.conns <- a1
	inner.conns <- a2
	inner.conns <- b1

	c, err := ln.Accept()
	require.NoError(t, err)
	assert.Equal(t, "a1", c.(interface{ NetConn() net.Conn }).NetConn().(*fakeConn).name)
	// a2 is the same address over the cap: closed, and Accept moves on.
	c2, err := ln.Accept()
	require.NoError(t, err)
	assert.Equal(t, "b1", c2.(interface{ NetConn() net.Conn }).NetConn().(*fakeConn).name)
	assert.Equal(t, int32(1), a2.closed.Load())
	assert.Equal(t, uint64(2), lim.Stats().Counted)

	// Close releases once, however often it is called.
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	require.NoError(t, c2.Close())
	assert.Equal(t, uint64(0), lim.Stats().Counted)
	assert.Equal(t, uint64(0), lim.Stats().ReleaseMisses)
	assert.Equal(t, int32(2), a1.closed.Load())

	// ClientAddr overrides the address judged.
	ln.ClientAddr = func(net.Conn) netip.Addr { return netip.MustParseAddr("192.0.2.1") }
	inner.conns <- &fakeConn{remote: proxySource("203.0.113.7:1")}
	c3, err := ln.Accept()
	require.NoError(t, err)
	assert.Equal(t, uint64(1), lim.Stats().Counted)
	_, err = lim.Admit(netip.MustParseAddr("192.0.2.1"), connlimit.TCP)
	require.ErrorIs(t, err, connlimit.ErrOverCap)
	require.NoError(t, c3.Close())

	require.NoError(t, ln.Close())
	_, err = ln.Accept()
	require.ErrorIs(t, err, net.ErrClosed)
}

func TestAddrOf(t *testing.T) {
	want := netip.MustParseAddr("2001:db8::1")
	for _, a := range []net.Addr{
		&net.TCPAddr{IP: want.AsSlice(), Port: 1},
		&net.UDPAddr{IP: want.AsSlice(), Port: 1},
		strAddr("[2001:db8::1]:443"),
		strAddr("2001:db8::1"),
	} {
		assert.Equal(t, want, connlimit.AddrOf(a), "%T %v", a, a)
	}
	assert.False(t, connlimit.AddrOf(nil).IsValid())
	assert.False(t, connlimit.AddrOf(&net.UnixAddr{Name: "/tmp/s", Net: "unix"}).IsValid())
	// A path that reads as an address is still a path.
	assert.False(t, connlimit.AddrOf(&net.UnixAddr{Name: "192.0.2.1", Net: "unix"}).IsValid())
	assert.False(t, connlimit.AddrOf(&net.UnixAddr{Name: "[2001:db8::1]:443", Net: "unix"}).IsValid())
	assert.Equal(t, want, connlimit.AddrOf(&net.IPAddr{IP: want.AsSlice()}))
	assert.False(t, connlimit.AddrOf((*net.TCPAddr)(nil)).IsValid())
}

// guard bounds every wait in these tests; each wait ends on an event long
// before it.
const guard = 10 * time.Second

// recv receives from ch, and fails if nothing comes within guard.
func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatal("nothing received")
	}
	panic("unreachable")
}

// proxyClient dials ln as a load balancer would and sends hdr; the
// connection is closed at the end of the test.
func proxyClient(t *testing.T, addr string, hdr proxyproto.Header) net.Conn {
	t.Helper()
	wire, err := hdr.AppendTo(nil)
	require.NoError(t, err)
	c, err := net.DialTimeout("tcp", addr, guard)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(guard)))
	_, err = c.Write(wire)
	require.NoError(t, err)
	return c
}

func unixHeader(t *testing.T, src string) proxyproto.Header {
	t.Helper()
	h := proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Protocol: proxyproto.UnixStream}
	require.True(t, h.SetUnixPaths([]byte(src), []byte("/run/lb.sock")))
	return h
}

// Behind a PROXY-protocol listener, connections whose header carries UNIX
// addresses have no client IP. They are never exempt from the cap: they
// count as one client, whatever their paths, while an IP client beside
// them keeps its own count.
func TestUnknownClientsBehindProxyListenerShareOneCap(t *testing.T) {
	lim, err := connlimit.New(connlimit.Config{PerAddress: 2})
	require.NoError(t, err)
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pln, err := proxyproto.NewListener(raw, proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pln.Close() })
	ln := &connlimit.Listener{Listener: pln, Limiter: lim}
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	addr := raw.Addr().String()

	var unknown []net.Conn
	for i := range 2 {
		proxyClient(t, addr, unixHeader(t, "/run/client-"+strconv.Itoa(i)+".sock"))
		c := recv(t, accepted)
		require.IsType(t, &net.UnixAddr{}, c.RemoteAddr())
		unknown = append(unknown, c)
	}
	// A third unknown client is over the shared cap: closed unread.
	over := proxyClient(t, addr, unixHeader(t, "@abstract-client"))
	_, err = io.Copy(io.Discard, over)
	require.NoError(t, err, "the connection is closed by the server")
	assert.Equal(t, uint64(1), lim.Stats().OverCapTCP)

	// An IP client is judged by its own address.
	ip := proxyproto.Header{Version: 2, Command: proxyproto.Proxy, Protocol: proxyproto.TCP4,
		Source: netip.MustParseAddrPort("203.0.113.7:4000"), Destination: netip.MustParseAddrPort("198.51.100.2:443")}
	proxyClient(t, addr, ip)
	c := recv(t, accepted)
	assert.Equal(t, "203.0.113.7:4000", c.RemoteAddr().String())
	assert.Equal(t, uint64(3), lim.Stats().Counted)

	// Closing an unknown client gives the shared place back.
	require.NoError(t, unknown[0].Close())
	proxyClient(t, addr, unixHeader(t, "/run/client-9.sock"))
	unknown[0] = recv(t, accepted)
	for _, c := range append(unknown, c) {
		require.NoError(t, c.Close())
	}
	assert.Equal(t, connlimit.Stats{OverCapTCP: 1}, lim.Stats())
}

type strAddr string

func (s strAddr) Network() string { return "tcp" }
func (s strAddr) String() string  { return string(s) }

// selfSigned returns a TLS certificate for 127.0.0.1 and localhost.
func selfSigned(t testing.TB) tls.Certificate {
	t.Helper()
	cert, err := testcert.New("localhost", "127.0.0.1")
	require.NoError(t, err)
	return cert
}

// tlsServer serves TLS on a real loopback listener wrapped by a
// connlimit.Listener. Each handshake that completes reports its peer on
// handshakes; the connection is then held until release gets a value.
type tlsServer struct {
	addr       string
	handshakes chan string
	release    chan struct{}
	closed     chan string
	done       chan struct{} // closed at the end of the test
}

func startTLSServer(t *testing.T, lim *connlimit.Limiter) *tlsServer {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	cert := selfSigned(t)
	ln := tls.NewListener(&connlimit.Listener{Listener: raw, Limiter: lim},
		&tls.Config{Certificates: []tls.Certificate{cert}})
	s := &tlsServer{
		addr:       raw.Addr().String(),
		handshakes: make(chan string, 16),
		release:    make(chan struct{}, 16),
		closed:     make(chan string, 16),
		done:       make(chan struct{}),
	}
	t.Cleanup(func() {
		close(s.done)
		_ = ln.Close()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				peer := c.RemoteAddr().String()
				if err := c.(*tls.Conn).Handshake(); err == nil {
					s.handshakes <- peer
					select {
					case <-s.release:
					case <-s.done:
					}
				}
				_ = c.Close()
				s.closed <- peer
			}()
		}
	}()
	return s
}

func dialTLS(s *tlsServer, from string) (*tls.Conn, error) {
	d := &net.Dialer{Timeout: guard}
	if from != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(from)}
	}
	return tls.DialWithDialer(d, "tcp", s.addr, &tls.Config{InsecureSkipVerify: true})
}

// A refused connection sees its connection closed before any TLS
// handshake, and the server's Accept goes on to the next one.
func TestDenyRefusesBeforeTLS(t *testing.T) {
	lim, err := connlimit.New(connlimit.Config{
		Deny:           []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")},
	})
	require.NoError(t, err)
	s := startTLSServer(t, lim)

	_, err = dialTLS(s, "127.0.0.2")
	require.Error(t, err)
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err), "got %v", err)

	ok, err := dialTLS(s, "127.0.0.1")
	require.NoError(t, err, "Accept must go on past a refused connection")
	assert.Contains(t, recv(t, s.handshakes), "127.0.0.1:")
	s.release <- struct{}{}
	_ = ok.Close()
	recv(t, s.closed)

	st := lim.Stats()
	assert.Equal(t, uint64(1), st.DeniedTCP)
	assert.Equal(t, uint64(0), st.Counted)
	select {
	case peer := <-s.handshakes:
		t.Fatalf("a handshake happened with %s", peer)
	default:
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "read"
}

func TestCapOnRealListener(t *testing.T) {
	lim, err := connlimit.New(connlimit.Config{
		PerAddress:     1,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.3/32")},
	})
	require.NoError(t, err)
	s := startTLSServer(t, lim)

	first, err := dialTLS(s, "127.0.0.1")
	require.NoError(t, err)
	recv(t, s.handshakes)
	assert.Equal(t, uint64(1), lim.Stats().Counted)

	_, err = dialTLS(s, "127.0.0.1")
	require.Error(t, err, "the second connection of the address is over the cap")

	// A trusted proxy is never counted, whatever it holds.
	var proxies []*tls.Conn
	for range 3 {
		c, err := dialTLS(s, "127.0.0.3")
		require.NoError(t, err)
		recv(t, s.handshakes)
		proxies = append(proxies, c)
	}
	assert.Equal(t, uint64(1), lim.Stats().Counted)

	// Closing the first makes room: wait for the server to close it.
	_ = first.Close()
	s.release <- struct{}{}
	recv(t, s.closed)
	again, err := dialTLS(s, "127.0.0.1")
	require.NoError(t, err)
	recv(t, s.handshakes)

	for range 4 {
		s.release <- struct{}{}
	}
	_ = again.Close()
	for _, c := range proxies {
		_ = c.Close()
	}
	for range 4 { // again and the three proxies
		recv(t, s.closed)
	}
	st := lim.Stats()
	assert.Equal(t, uint64(0), st.Counted)
	assert.Equal(t, uint64(1), st.OverCapTCP)
}

// Through a Listener, a dry run closes a denied connection as a counting
// Limiter would, tells OnRefusal first, and counts nothing.
func TestListenerDryRun(t *testing.T) {
	denied := &fakeConn{remote: proxySource("203.0.113.7:4000"), name: "denied"}
	var heard []connlimit.Refusal
	var closedWhenHeard int32 = -1
	lim, err := connlimit.New(connlimit.Config{
		PerAddress: 1,
		Deny:       []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")},
		DryRun:     true,
		OnRefusal: func(r connlimit.Refusal) {
			heard = append(heard, r)
			closedWhenHeard = denied.closed.Load()
		},
	})
	require.NoError(t, err)
	inner := &fakeListener{conns: make(chan net.Conn, 4)}
	ln := &connlimit.Listener{Listener: inner, Limiter: lim}
	inner.conns <- denied
	for range 2 {
		inner.conns <- &fakeConn{remote: proxySource("192.0.2.1:4000"), name: "visitor"}
	}
	for range 2 {
		c, err := ln.Accept()
		require.NoError(t, err, "the same visitor twice, past a cap of 1: nothing is counted")
		_, wrapped := c.(interface{ NetConn() net.Conn })
		assert.False(t, wrapped, "an uncounted connection is returned as it is")
	}
	assert.Equal(t, int32(1), denied.closed.Load())
	assert.Equal(t, []connlimit.Refusal{{Addr: netip.MustParseAddr("203.0.113.7"), Transport: connlimit.TCP, Err: connlimit.ErrDenied}}, heard)
	assert.Zero(t, closedWhenHeard, "told before the connection is closed")
	assert.Equal(t, connlimit.Stats{}, lim.Stats())
}
