package edge

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
)

// With port 0, the port the kernel gives TCP may have its UDP side taken
// by another program: listenBoth tries a new port, where a fixed port is
// the caller's to change.
func TestListenBothRetriesATakenUDPPort(t *testing.T) {
	// A UDP port held here, and the TCP listener the kernel would hand
	// listenBoth on the same port.
	var taken *net.UDPConn
	var pick net.Listener
	for pick == nil {
		u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", u.LocalAddr().String())
		if err != nil {
			u.Close() // its TCP side is someone's: another port
			continue
		}
		taken, pick = u, l
	}
	defer taken.Close()
	port := taken.LocalAddr().(*net.UDPAddr).Port
	calls := 0
	listenTCP = func(network, addr string) (net.Listener, error) {
		calls++
		if calls == 1 {
			return pick, nil
		}
		return net.Listen(network, addr)
	}
	defer func() { listenTCP = net.Listen }()

	ln, udp, err := listenBoth("127.0.0.1:0")
	if err != nil {
		t.Fatalf("listenBoth: %v", err)
	}
	defer ln.Close()
	defer udp.Close()
	if calls != 2 {
		t.Fatalf("%d TCP binds, want 2", calls)
	}
	got := ln.Addr().(*net.TCPAddr).Port
	if got == port || udp.LocalAddr().(*net.UDPAddr).Port != got {
		t.Fatalf("TCP on %d, UDP on %v, the taken UDP port %d", got, udp.LocalAddr(), port)
	}

	calls = 2 // past the pick: real binds
	_, _, err = listenBoth(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if !errors.Is(err, syscall.EADDRINUSE) || calls != 3 {
		t.Fatalf("a fixed port whose UDP side is taken: %v after %d binds, want EADDRINUSE after 1", err, calls)
	}
}
