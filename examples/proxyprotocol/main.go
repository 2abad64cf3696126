// Command proxyprotocol is a TCP echo server behind a load balancer that
// speaks the PROXY protocol (v1 or v2): proxyproto.Listener reads each
// connection's header, refuses peers that are not trusted and
// connections without a valid header, and hands on connections whose
// RemoteAddr is the client the header names.
//
//	go run ./examples/proxyprotocol -addr 127.0.0.1:9000
//	printf 'PROXY TCP4 203.0.113.7 127.0.0.1 40000 9000\r\nhello\n' | nc -q1 127.0.0.1 9000
//	203.0.113.7:40000 said: hello
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/paduraksa/paduraksa/proxyproto"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on (port 0: any free port)")
	trust := flag.String("trust", "127.0.0.0/8", "prefix of the load balancers allowed to send a PROXY header")
	flag.Parse()

	lb, err := netip.ParsePrefix(*trust)
	if err != nil {
		log.Fatal(err)
	}
	inner, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := proxyproto.NewListener(inner, proxyproto.Config{
		TrustedProxies: []netip.Prefix{lb},
		HeaderTimeout:  5 * time.Second,
		// Each refused connection, with why, at Debug.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on %s (PROXY protocol from %s)\n", ln.Addr(), lb)
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go echo(c)
	}
}

// echo answers each line with the client's address, until the client
// closes or is idle for a minute.
func echo(c net.Conn) {
	defer c.Close()
	h := c.(*proxyproto.Conn).Header()
	fmt.Printf("%s via %s: PROXY v%d %s\n", c.RemoteAddr(), c.(*proxyproto.Conn).Raw().RemoteAddr(), h.Version, h.Protocol)
	lines := bufio.NewScanner(c)
	for c.SetDeadline(time.Now().Add(time.Minute)) == nil && lines.Scan() {
		if _, err := fmt.Fprintf(c, "%s said: %s\n", c.RemoteAddr(), lines.Text()); err != nil {
			return
		}
	}
}
