package tlsselect_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	"github.com/paduraksa/paduraksa/tlsselect"
)

// Example serves two hosts with their own certificates and policies on a
// loopback TLS listener, and refuses names it does not know.
func Example() {
	// Certificates of one's own: made here, or loaded (tls.LoadX509KeyPair)
	// and served with Static.
	shop, _ := tlsselect.SelfSigned(time.Hour, "shop.example")
	api, _ := tlsselect.SelfSigned(time.Hour, "api.example")
	roots := x509.NewCertPool()
	roots.AddCert(shop.Leaf)
	roots.AddCert(api.Leaf)

	table, err := tlsselect.New(tlsselect.Config{
		Certificates: []tlsselect.Certificate{
			{ID: "shop", Source: tlsselect.Static(shop)},
			{ID: "api", Source: tlsselect.Static(api)},
		},
		Hosts: []tlsselect.Host{
			{Names: []string{"shop.example"}, Certificate: "shop", TLS: tlsselect.Policy{HTTP3: true}},
			{Names: []string{"api.example"}, Certificate: "api", TLS: tlsselect.Policy{MinVersion: tlsselect.VersionTLS13, HTTP1Only: true}},
		},
		UnknownSNI: tlsselect.FallbackRefuse,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	sel := tlsselect.NewSelector(table)

	ln, _ := tls.Listen("tcp", "127.0.0.1:0", sel.TLSConfig())
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(10 * time.Second))
				c.(*tls.Conn).Handshake()
			}()
		}
	}()

	for _, name := range []string{"shop.example", "API.example", "unknown.example"} {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", ln.Addr().String(),
			&tls.Config{ServerName: name, RootCAs: roots, NextProtos: []string{"h2", "http/1.1"}})
		if err != nil {
			fmt.Printf("%s: %v\n", name, err)
			continue
		}
		st := c.ConnectionState()
		fmt.Printf("%s: certificate %s, %s, TLS 1.%d\n", name, st.PeerCertificates[0].Subject.CommonName, st.NegotiatedProtocol, st.Version-tls.VersionTLS10)
		c.Close()
	}
	fmt.Printf("refused: %+v\n", sel.Stats().Refused)
	// Output:
	// shop.example: certificate shop.example, h2, TLS 1.3
	// API.example: certificate api.example, http/1.1, TLS 1.3
	// unknown.example: remote error: tls: unrecognized name
	// refused: {NoSNI:0 UnknownSNI:1 NoHTTP3:0 Pending:0}
}

// ExampleTable_Select shows how names match, without a handshake.
func ExampleTable_Select() {
	cert, _ := tlsselect.SelfSigned(time.Hour, "example.com", "*.example.com")
	table, _ := tlsselect.New(tlsselect.Config{
		Certificates:       []tlsselect.Certificate{{ID: "site", Source: tlsselect.Static(cert)}},
		Hosts:              []tlsselect.Host{{Names: []string{"example.com"}}, {Names: []string{"*.example.com"}, TLS: tlsselect.Policy{HTTP3: true}}},
		DefaultCertificate: "site",
	})
	for _, q := range []struct {
		name string
		tr   tlsselect.Transport
	}{
		{"Example.COM", tlsselect.TCP},
		{"www.example.com", tlsselect.QUIC},
		{"example.com", tlsselect.QUIC},
		{"a.b.example.com", tlsselect.TCP},
		{"", tlsselect.TCP},
	} {
		s := table.Select(q.name, q.tr)
		fmt.Printf("%q over %v: host %d, %v (%v)\n", q.name, q.tr, s.Host, s.Match, s.Reason)
	}
	// Output:
	// "Example.COM" over tcp: host 0, exact (none)
	// "www.example.com" over quic: host 1, wildcard (none)
	// "example.com" over quic: host 0, refused (noHttp3)
	// "a.b.example.com" over tcp: host -1, default (unknownSni)
	// "" over tcp: host -1, default (noSni)
}
