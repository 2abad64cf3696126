package connlimit_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/paduraksa/paduraksa/connlimit"
)

func ExampleLimiter_Admit() {
	lim, err := connlimit.New(connlimit.Config{
		PerAddress:     2,
		Deny:           []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
	})
	if err != nil {
		panic(err)
	}
	visitor := netip.MustParseAddr("192.0.2.1")
	var held []connlimit.Ticket
	for range 3 {
		t, err := lim.Admit(visitor, connlimit.TCP)
		fmt.Println("visitor:", err)
		held = append(held, t)
	}
	_, err = lim.Admit(netip.MustParseAddr("::ffff:192.0.2.1"), connlimit.QUIC)
	fmt.Println("same visitor, IPv4-mapped:", err)
	_, err = lim.Admit(netip.MustParseAddr("203.0.113.9"), connlimit.TCP)
	fmt.Println("denied:", err)
	t, err := lim.Admit(netip.MustParseAddr("10.1.2.3"), connlimit.TCP)
	fmt.Println("trusted proxy:", err, "counted:", t.Counted())

	fmt.Println("counted now:", lim.Stats().Counted)
	for _, t := range held {
		lim.Release(t)
	}
	fmt.Printf("%+v\n", lim.Stats())
	// Output:
	// visitor: <nil>
	// visitor: <nil>
	// visitor: connlimit: too many connections from address
	// same visitor, IPv4-mapped: connlimit: too many connections from address
	// denied: connlimit: address denied
	// trusted proxy: <nil> counted: false
	// counted now: 2
	// {DeniedTCP:1 DeniedQUIC:0 OverCapTCP:1 OverCapQUIC:1 TableFull:0 Counted:0 ReleaseMisses:0}
}

func ExampleListener() {
	lim, err := connlimit.New(connlimit.Config{Deny: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}})
	if err != nil {
		panic(err)
	}
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer raw.Close()
	// Below crypto/tls (and above a PROXY-protocol listener, if any).
	ln := &connlimit.Listener{Listener: raw, Limiter: lim}
	accepted := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c.RemoteAddr().(*net.TCPAddr).IP.String()
			c.Close()
		}
	}()
	// A denied client's connection is closed unread...
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 5 * time.Second}
	denied, err := d.Dial("tcp", raw.Addr().String())
	if err == nil {
		denied.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err = denied.Read(make([]byte, 1))
		fmt.Println("denied client reads:", err == io.EOF)
		denied.Close()
	}
	// ...and Accept returns the next admitted one.
	ok, err := net.DialTimeout("tcp", raw.Addr().String(), 5*time.Second)
	if err != nil {
		panic(err)
	}
	defer ok.Close()
	select {
	case ip := <-accepted:
		fmt.Println("accepted:", ip)
	case <-time.After(10 * time.Second):
		fmt.Println("nothing accepted")
	}
	fmt.Println("denied:", lim.Stats().DeniedTCP)
	// Output:
	// denied client reads: true
	// accepted: 127.0.0.1
	// denied: 1
}

// A server wires the listeners in this order (the PROXY-protocol listener,
// when used, goes between raw and connlimit.Listener).
func ExampleListener_wiring() {
	lim, _ := connlimit.New(connlimit.Config{})
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ln := tls.NewListener(&connlimit.Listener{Listener: raw, Limiter: lim}, &tls.Config{})
	fmt.Println(ln.Addr().String() == raw.Addr().String())
	ln.Close()
	// Output: true
}

func ExampleTicket_Counted() {
	l, _ := connlimit.New(connlimit.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	for _, a := range []string{"192.0.2.1", "10.0.0.1"} {
		tk, err := l.Admit(netip.MustParseAddr(a), connlimit.TCP)
		fmt.Println(a, err, tk.Counted())
		l.Release(tk)
	}
	// Output:
	// 192.0.2.1 <nil> true
	// 10.0.0.1 <nil> false
}
