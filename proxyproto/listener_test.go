package proxyproto_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/net/nettest"

	"github.com/paduraksa/paduraksa/proxyproto"
)

// guard bounds every wait in these tests. It is a failure deadline, never
// a synchronisation: each wait ends on an event long before it.
const guard = 10 * time.Second

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// readNotifier wraps a listener so that the test learns how many bytes the
// server side has read: the client can then split a header across reads
// deterministically.
type readNotifier struct {
	net.Listener
	reads chan int
}

func (l *readNotifier) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &notifyConn{Conn: c, reads: l.reads}, nil
}

type notifyConn struct {
	net.Conn
	reads chan int
}

// Read reports n on reads without blocking: a test that has stopped
// counting (a payload test reads thousands of times) never stalls the
// server, and a count dropped makes awaitRead fail by its guard.
func (c *notifyConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		select {
		case c.reads <- n:
		default:
		}
	}
	return n, err
}

type testListener struct {
	*proxyproto.Listener
	reads chan int
}

func listen(t *testing.T, cfg proxyproto.Config) *testListener {
	t.Helper()
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &readNotifier{Listener: inner, reads: make(chan int, 1024)}
	if cfg.TrustedProxies == nil {
		cfg.TrustedProxies = loopback
	}
	l, err := proxyproto.NewListener(n, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &testListener{Listener: l, reads: n.reads}
}

type accepted struct {
	c   net.Conn
	err error
}

// acceptAsync calls Accept once in a goroutine.
func (l *testListener) acceptAsync() <-chan accepted {
	ch := make(chan accepted, 1)
	go func() {
		c, err := l.Accept()
		ch <- accepted{c, err}
	}()
	return ch
}

func (l *testListener) awaitConn(t *testing.T, ch <-chan accepted) *proxyproto.Conn {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("Accept: %v", a.err)
		}
		t.Cleanup(func() { a.c.Close() })
		return a.c.(*proxyproto.Conn)
	case <-time.After(guard):
		t.Fatal("Accept did not return")
	}
	return nil
}

// awaitRead waits until the server side has read total bytes.
func (l *testListener) awaitRead(t *testing.T, total int) {
	t.Helper()
	for got := 0; got < total; {
		select {
		case n := <-l.reads:
			got += n
		case <-time.After(guard):
			t.Fatalf("server read %d of %d bytes", got, total)
		}
	}
}

func dial(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp4", l.Addr().String(), guard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// awaitClosed fails unless the server closes c (EOF or reset) before guard.
func awaitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(guard))
	_, err := io.Copy(io.Discard, c)
	if errors.Is(err, net.ErrClosed) || isTimeout(err) {
		t.Fatalf("connection not closed by the server: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

func readN(t *testing.T, c net.Conn, n int) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(guard))
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatalf("read payload: %v", err)
	}
	return string(b)
}

func TestListenerTrustedV1(t *testing.T) {
	l := listen(t, proxyproto.Config{})
	ch := l.acceptAsync()
	c := dial(t, l)
	write(t, c, "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\nhello")
	pc := l.awaitConn(t, ch)
	if got := pc.RemoteAddr().String(); got != "192.0.2.1:56324" {
		t.Errorf("RemoteAddr = %s", got)
	}
	if got := pc.LocalAddr().String(); got != "198.51.100.2:443" {
		t.Errorf("LocalAddr = %s", got)
	}
	if h := pc.Header(); h.Version != 1 || h.Command != proxyproto.Proxy {
		t.Errorf("header %+v", h)
	}
	if got := readN(t, pc, 5); got != "hello" {
		t.Errorf("payload %q", got)
	}
	if pc.Raw().RemoteAddr().String() != c.LocalAddr().String() {
		t.Errorf("Raw().RemoteAddr = %v, want the proxy's %v", pc.Raw().RemoteAddr(), c.LocalAddr())
	}
}

func TestListenerTrustedV2(t *testing.T) {
	l := listen(t, proxyproto.Config{})
	ch := l.acceptAsync()
	c := dial(t, l)
	write(t, c, v2(0x21, 0x21, mapped, v6b, u16(1234), u16(443), tlv(0x01, "h2"))+"hello")
	pc := l.awaitConn(t, ch)
	// The IPv4-mapped source is unmapped for RemoteAddr, kept in the header.
	if got := pc.RemoteAddr().String(); got != "192.0.2.1:1234" {
		t.Errorf("RemoteAddr = %s", got)
	}
	if got := pc.LocalAddr().String(); got != "[2001:db8::2]:443" {
		t.Errorf("LocalAddr = %s", got)
	}
	h := pc.Header()
	if !h.Source.Addr().Is4In6() {
		t.Errorf("header source %v, want the address as sent", h.Source)
	}
	if alpn, ok := h.FindTLV(proxyproto.TypeALPN); !ok || string(alpn) != "h2" {
		t.Errorf("ALPN %q %v", alpn, ok)
	}
	if got := readN(t, pc, 5); got != "hello" {
		t.Errorf("payload %q", got)
	}
}

// Accept returns the error of a closed listener, and never a refused
// connection.
func awaitNoConn(t *testing.T, l *testListener, ch <-chan accepted) {
	t.Helper()
	l.Close()
	select {
	case a := <-ch:
		if a.err == nil {
			t.Fatalf("Accept returned a connection from %v", a.c.RemoteAddr())
		}
		if !errors.Is(a.err, net.ErrClosed) {
			t.Fatalf("Accept after Close: %v", a.err)
		}
	case <-time.After(guard):
		t.Fatal("Accept did not return after Close")
	}
}

func TestListenerUntrustedClosed(t *testing.T) {
	l := listen(t, proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	ch := l.acceptAsync()
	c := dial(t, l)
	write(t, c, "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\nhello")
	awaitClosed(t, c)
	awaitNoConn(t, l, ch)
}

func TestListenerMissingHeaderClosed(t *testing.T) {
	for name, in := range map[string]string{
		"http":      "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"one-byte":  "G",
		"malformed": "PROXY TCP4 192.0.2.1 198.51.100.2 56324 65536\r\n",
		"bad-crc":   v2(0x21, 0x11, block4, tlv(0x03, "\x00\x00\x00\x00")),
	} {
		t.Run(name, func(t *testing.T) {
			l := listen(t, proxyproto.Config{})
			ch := l.acceptAsync()
			c := dial(t, l)
			// The client keeps its side open: the refusal comes from the
			// first byte that rules out a header, not from a timeout.
			write(t, c, in)
			awaitClosed(t, c)
			awaitNoConn(t, l, ch)
		})
	}
}

func TestListenerEmptyConnectionClosed(t *testing.T) {
	l := listen(t, proxyproto.Config{})
	ch := l.acceptAsync()
	c := dial(t, l)
	c.(*net.TCPConn).CloseWrite()
	awaitClosed(t, c)
	awaitNoConn(t, l, ch)
}

func TestListenerLocalUsesSocketAddresses(t *testing.T) {
	for name, hdr := range map[string]string{
		"v2-local":   v2(0x20, 0x11, block4),
		"v1-unknown": "PROXY UNKNOWN 192.0.2.1 198.51.100.2 1 2\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			l := listen(t, proxyproto.Config{})
			ch := l.acceptAsync()
			c := dial(t, l)
			write(t, c, hdr+"ping")
			pc := l.awaitConn(t, ch)
			if pc.RemoteAddr().String() != c.LocalAddr().String() {
				t.Errorf("RemoteAddr = %v, want the socket peer %v", pc.RemoteAddr(), c.LocalAddr())
			}
			if pc.LocalAddr().String() != l.Addr().String() {
				t.Errorf("LocalAddr = %v, want %v", pc.LocalAddr(), l.Addr())
			}
			if pc.Header().Command != proxyproto.Local {
				t.Errorf("command %v", pc.Header().Command)
			}
			if got := readN(t, pc, 4); got != "ping" {
				t.Errorf("payload %q", got)
			}
		})
	}
}

func TestListenerHeaderSplitAcrossWrites(t *testing.T) {
	big := v2(0x21, 0x11, block4, tlv(0x02, strings.Repeat("a", 600)))
	for name, tc := range map[string]struct {
		hdr  string
		cuts []int
	}{
		"v1":           {"PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n", []int{1, 5, 6, 20, 43, 44}},
		"v1-at-cr-lf":  {"PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n", []int{44}},
		"v2":           {v2(0x21, 0x11, block4), []int{1, 12, 13, 15, 16, 20}},
		"v2-large-tlv": {big, []int{16, 200, 300, 615}},
	} {
		t.Run(name, func(t *testing.T) {
			l := listen(t, proxyproto.Config{})
			ch := l.acceptAsync()
			c := dial(t, l)
			prev := 0
			for _, cut := range tc.cuts {
				write(t, c, tc.hdr[prev:cut])
				l.awaitRead(t, cut-prev)
				prev = cut
				select {
				case a := <-ch:
					t.Fatalf("Accept returned after %d bytes: %v", cut, a.err)
				default:
				}
			}
			write(t, c, tc.hdr[prev:]+"payload")
			pc := l.awaitConn(t, ch)
			if got := pc.RemoteAddr().String(); got != "192.0.2.1:56324" {
				t.Errorf("RemoteAddr = %s", got)
			}
			if got := readN(t, pc, 7); got != "payload" {
				t.Errorf("payload %q", got)
			}
		})
	}
}

func TestListenerPayloadInSameWrite(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 8192) // 128 KiB
	// A second header after the first is payload too.
	payload = append([]byte("PROXY TCP4 9.9.9.9 8.8.8.8 1 2\r\n"), payload...)
	for name, hdr := range map[string]string{
		"v1":         "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n",
		"v2":         v2(0x21, 0x11, block4),
		"v2-4131":    v2(0x21, 0x11, block4, tlv(0xE5, strings.Repeat("x", 4131-31))),
		"v1-unknown": "PROXY UNKNOWN\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			l := listen(t, proxyproto.Config{})
			ch := l.acceptAsync()
			c := dial(t, l)
			go func() {
				c.Write(append([]byte(hdr), payload...))
				c.(*net.TCPConn).CloseWrite()
			}()
			pc := l.awaitConn(t, ch)
			pc.SetReadDeadline(time.Now().Add(guard))
			got, err := io.ReadAll(pc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, payload) {
				t.Fatalf("payload: got %d bytes, want %d; first bytes %q", len(got), len(payload), got[:min(len(got), 40)])
			}
		})
	}
}

func TestListenerHeaderTimeout(t *testing.T) {
	l := listen(t, proxyproto.Config{HeaderTimeout: 200 * time.Millisecond})
	ch := l.acceptAsync()
	c := dial(t, l)
	start := time.Now()
	write(t, c, "PROXY TCP4 192.0.2.1 ")
	awaitClosed(t, c)
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("closed after %v, before the header timeout", d)
	}
	awaitNoConn(t, l, ch)
}

// pipeListener is a net.Listener over net.Pipe, for tests in a synctest
// bubble, where time moves only when every goroutine waits: dial returns
// the client's end, and Accept the server's end with a loopback TCP peer,
// so that a Listener trusts it.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn, 1), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 443} }

func (l *pipeListener) dial() net.Conn {
	server, client := net.Pipe()
	l.conns <- &peerConn{Conn: server, remote: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}}
	return client
}

type peerConn struct {
	net.Conn
	remote net.Addr
}

func (c *peerConn) RemoteAddr() net.Addr { return c.remote }

// The header timeout counts from accept, and a client that dribbles its
// header is closed exactly when it has passed: in a synctest bubble the
// time is exact on any machine.
func TestListenerHeaderTimeoutExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 3 * time.Second
		pl := newPipeListener()
		l, err := proxyproto.NewListener(pl, proxyproto.Config{TrustedProxies: loopback, HeaderTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		accepted := make(chan error, 1)
		go func() {
			_, err := l.Accept()
			accepted <- err
		}()
		c := pl.dial()
		defer c.Close()
		start := time.Now()
		// A byte now and then does not extend the deadline.
		for _, part := range []string{"PROXY ", "TCP4 ", "192.0.2.1 "} {
			if _, err := io.WriteString(c, part); err != nil {
				t.Fatal(err)
			}
			time.Sleep(timeout / 4)
		}
		// The server closes the pipe when the header times out.
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("client read %v, want io.EOF", err)
		}
		if d := time.Since(start); d != timeout {
			t.Fatalf("closed after %v, want exactly %v", d, timeout)
		}
		l.Close()
		if err := <-accepted; !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Accept = %v, want net.ErrClosed", err)
		}
	})
}

func TestListenerSlowlorisDoesNotBlockAccept(t *testing.T) {
	l := listen(t, proxyproto.Config{HeaderTimeout: time.Minute})
	ch := l.acceptAsync()
	slow := dial(t, l)
	half := v2(0x21, 0x11, block4)[:20]
	write(t, slow, half)
	l.awaitRead(t, len(half)) // the slow client's header is in flight

	fast := dial(t, l)
	write(t, fast, "PROXY TCP4 203.0.113.7 198.51.100.2 4000 443\r\n")
	pc := l.awaitConn(t, ch)
	if got := pc.RemoteAddr().String(); got != "203.0.113.7:4000" {
		t.Fatalf("Accept returned %s, want the fast client", got)
	}
	// Close releases the stalled connection at once.
	l.Close()
	awaitClosed(t, slow)
}

func TestListenerCloseClosesPending(t *testing.T) {
	l := listen(t, proxyproto.Config{HeaderTimeout: time.Minute})
	ch := l.acceptAsync()
	c := dial(t, l)
	write(t, c, "PROX")
	l.awaitRead(t, 4)
	awaitNoConn(t, l, ch)
	awaitClosed(t, c)
}

func TestListenerManyClients(t *testing.T) {
	l := listen(t, proxyproto.Config{MaxPending: 4})
	const clients = 32
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			c, err := net.DialTimeout("tcp4", l.Addr().String(), guard)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			io.WriteString(c, "PROXY TCP4 192.0.2.1 198.51.100.2 "+strconv.Itoa(1000+i)+" 443\r\n")
			c.SetReadDeadline(time.Now().Add(guard))
			io.Copy(io.Discard, c)
		})
	}
	seen := map[string]bool{}
	for range clients {
		pc := l.awaitConn(t, l.acceptAsync())
		seen[pc.RemoteAddr().String()] = true
		pc.Close()
	}
	awaitGroup(t, &wg)
	if len(seen) != clients {
		t.Fatalf("%d distinct clients accepted, want %d", len(seen), clients)
	}
}

func TestNewListenerValidation(t *testing.T) {
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	_, err = proxyproto.NewListener(inner, proxyproto.Config{
		TrustedProxies:  []netip.Prefix{{}},
		MaxHeaderLength: -1,
		MaxPending:      -1,
	})
	if err == nil {
		t.Fatal("NewListener accepted an invalid Config")
	}
	for _, want := range []string{"TrustedProxies[0]", "MaxHeaderLength", "MaxPending"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if _, err := proxyproto.NewListener(inner, proxyproto.Config{}); err == nil || !strings.Contains(err.Error(), "TrustedProxies") {
		t.Errorf("empty TrustedProxies: %v", err)
	}
}

// awaitGroup waits for wg, and fails if that takes longer than guard.
func awaitGroup(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("goroutines did not end")
	}
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t testing.TB) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := ln.(*net.TCPListener).SetDeadline(time.Now().Add(guard)); err != nil {
		t.Fatal(err)
	}
	client, err = net.DialTimeout("tcp4", ln.Addr().String(), guard)
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return server, client
}

func TestReadConnErrors(t *testing.T) {
	cases := []struct {
		name   string
		send   string
		close  bool
		maxLen int
		want   error
	}{
		{"no-header-fast", "GET", false, 0, proxyproto.ErrNoProxyHeader},
		{"invalid-fast", sig2 + "\x11", false, 0, proxyproto.ErrInvalidHeader},
		{"eof-empty", "", true, 0, proxyproto.ErrNoProxyHeader},
		{"eof-partial", "PROXY TCP4 1.2.3.4", true, 0, proxyproto.ErrIncomplete},
		{"too-large", v2len(0x21, 0x11, 200), false, 100, proxyproto.ErrHeaderTooLarge},
		{"too-large-complete", v2(0x21, 0x11, block4) + "GET", false, 20, proxyproto.ErrHeaderTooLarge},
		{"too-large-but-malformed", v2len(0x21, 0x11, 5, "12345"), false, 20, proxyproto.ErrInvalidHeader},
		{"timeout", "PROXY", false, 0, proxyproto.ErrHeaderTimeout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			server, client := tcpPair(t)
			defer server.Close()
			defer client.Close()
			io.WriteString(client, tc.send)
			if tc.close {
				client.(*net.TCPConn).CloseWrite()
			}
			deadline := time.Now().Add(guard)
			if tc.want == proxyproto.ErrHeaderTimeout {
				deadline = time.Now().Add(50 * time.Millisecond)
			}
			_, err := proxyproto.ReadConn(server, deadline, tc.maxLen)
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadConn = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestConnConformance(t *testing.T) {
	nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
		server, client := tcpPair(t)
		io.WriteString(client, "PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\n")
		pc, err := proxyproto.ReadConn(server, time.Now().Add(guard), 0)
		if err != nil {
			return nil, nil, nil, err
		}
		return pc, client, func() { pc.Close(); client.Close() }, nil
	})
}
