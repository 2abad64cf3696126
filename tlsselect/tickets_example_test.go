package tlsselect_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"time"

	"github.com/paduraksa/paduraksa/tlsselect"
)

// ExampleTicketSecrets: two instances of a fleet hold the same master
// secrets, each in TicketSecrets of its own. A session from the first
// resumes on the second, and still does after both installed a rotation
// of the master secret, the old one kept as the previous.
func ExampleTicketSecrets() {
	cert, _ := tlsselect.SelfSigned(time.Hour, "shop.example")
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	old, next := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32) // from the fleet's store

	var instances []*tlsselect.TicketSecrets
	var addrs []string
	for range 2 {
		secrets, _ := tlsselect.NewTicketSecrets(old, nil)
		table, err := tlsselect.New(tlsselect.Config{
			Certificates:  []tlsselect.Certificate{{ID: "shop", Source: tlsselect.Static(cert)}},
			Hosts:         []tlsselect.Host{{Names: []string{"shop.example"}, Certificate: "shop"}},
			TicketSecrets: secrets,
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		ln, _ := tls.Listen("tcp", "127.0.0.1:0", tlsselect.NewSelector(table).TLSConfig())
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
					c.Write([]byte{1}) // after the handshake and its ticket
				}()
			}
		}()
		instances, addrs = append(instances, secrets), append(addrs, ln.Addr().String())
	}

	client := &tls.Config{ServerName: "shop.example", RootCAs: roots, ClientSessionCache: tls.NewLRUClientSessionCache(1)}
	visit := func(addr string) bool {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, client)
		if err != nil {
			fmt.Println(err)
			return false
		}
		defer c.Close()
		c.Read(make([]byte, 1)) // the ticket arrives before the byte
		return c.ConnectionState().DidResume
	}
	visit(addrs[0])
	fmt.Println("resumed on the second instance:", visit(addrs[1]))

	visit(addrs[0]) // a ticket sealed with the old secret
	for _, s := range instances {
		s.Set(next, old) // the rotation, as each instance installs it
	}
	fmt.Println("resumed after the rotation:", visit(addrs[1]))
	// Output:
	// resumed on the second instance: true
	// resumed after the rotation: true
}
