package proxyproto_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/paduraksa/paduraksa/proxyproto"
)

func ExampleParse() {
	in := []byte("PROXY TCP4 192.0.2.1 198.51.100.2 56324 443\r\nGET / HTTP/1.1\r\n")
	h, n, err := proxyproto.Parse(in)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.Version, h.Command, h.Protocol, h.Source, h.Destination)
	fmt.Printf("payload %q\n", in[n:n+3])

	_, _, err = proxyproto.Parse([]byte("PROXY TCP4 192.0.2.1 198.51.100.2 56324 0443\r\n"))
	var pe *proxyproto.ParseError
	if errors.As(err, &pe) {
		fmt.Println("refused:", pe.Reason)
	}
	_, _, err = proxyproto.Parse([]byte("GET / HTTP/1.1\r\n"))
	fmt.Println(errors.Is(err, proxyproto.ErrNoProxyHeader))
	// Output:
	// 1 PROXY TCP4 192.0.2.1:56324 198.51.100.2:443
	// payload "GET"
	// refused: v1: malformed port
	// true
}

func ExampleHeader_TLVs() {
	h := proxyproto.Header{
		Version:     2,
		Command:     proxyproto.Proxy,
		Protocol:    proxyproto.TCP6,
		Source:      netip.MustParseAddrPort("[2001:db8::1]:40000"),
		Destination: netip.MustParseAddrPort("[2001:db8::2]:443"),
	}
	var tlvs []byte
	tlvs = proxyproto.AppendTLV(tlvs, proxyproto.TypeALPN, []byte("h2"))
	tlvs = proxyproto.AppendTLV(tlvs, proxyproto.TypeAuthority, []byte("example.com"))
	tlvs = proxyproto.AppendTLV(tlvs, proxyproto.TypeAWS, []byte("\x01vpce-08d2bf15fac5001c9"))
	tlvs = proxyproto.AppendTLV(tlvs, proxyproto.TypeCRC32C, make([]byte, 4)) // filled by AppendTo
	h.SetTLVs(tlvs)
	wire, err := h.AppendTo(nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	parsed, _, err := proxyproto.Parse(wire) // verifies the CRC32C
	if err != nil {
		fmt.Println(err)
		return
	}
	it := parsed.TLVs()
	for t, ok := it.Next(); ok; t, ok = it.Next() {
		switch t.Type {
		case proxyproto.TypeALPN, proxyproto.TypeAuthority:
			fmt.Printf("%#02x %s\n", uint8(t.Type), t.Value)
		case proxyproto.TypeAWS:
			id, _ := t.AWSVPCEndpointID()
			fmt.Printf("vpce %s\n", id)
		}
	}
	// Output:
	// 0x01 h2
	// 0x02 example.com
	// vpce vpce-08d2bf15fac5001c9
}

func ExampleListener() {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := proxyproto.NewListener(inner, proxyproto.Config{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		HeaderTimeout:  5 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()
	// Bound the example: Accept returns an error once ln is closed.
	stop := time.AfterFunc(10*time.Second, func() { ln.Close() })
	defer stop.Stop()

	// A load balancer on loopback relays a client's connection.
	go func() {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		io.WriteString(c, "PROXY TCP4 203.0.113.7 198.51.100.2 40000 443\r\nhello")
		io.Copy(io.Discard, c)
	}()

	c, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("client:", c.RemoteAddr())
	fmt.Printf("payload: %s\n", buf)
	// Output:
	// client: 203.0.113.7:40000
	// payload: hello
}

// ReadConn reads the header of one accepted connection, for a server with
// an accept loop of its own: here a load balancer on loopback relays a
// client's connection with a v2 header, and the server reads the header,
// then the client's bytes.
func ExampleReadConn() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ln.Close()

	go func() {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			return
		}
		defer c.Close()
		h := proxyproto.Header{
			Version: 2, Command: proxyproto.Proxy, Protocol: proxyproto.TCP4,
			Source:      netip.MustParseAddrPort("203.0.113.7:40000"),
			Destination: netip.MustParseAddrPort("198.51.100.2:443"),
		}
		wire, _ := h.AppendTo(nil)
		c.Write(append(wire, "hello"...))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, c)
	}()

	raw, err := ln.Accept()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer raw.Close()
	// Only a trusted load balancer may send a header: the caller checks
	// the peer before reading one (Listener does it for its own).
	peer := raw.RemoteAddr().(*net.TCPAddr).AddrPort().Addr().Unmap()
	if !netip.MustParsePrefix("127.0.0.0/8").Contains(peer) {
		fmt.Println("not a load balancer:", peer)
		return
	}
	c, err := proxyproto.ReadConn(raw, time.Now().Add(5*time.Second), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 5)
	if _, err := io.ReadFull(c, buf); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("client:", c.RemoteAddr(), "to", c.LocalAddr())
	fmt.Printf("header: v%d %s; payload: %s\n", c.Header().Version, c.Header().Protocol, buf)
	// Output:
	// client: 203.0.113.7:40000 to 198.51.100.2:443
	// header: v2 TCP4; payload: hello
}
