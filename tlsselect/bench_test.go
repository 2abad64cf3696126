package tlsselect

import (
	"crypto/tls"
	"net"
	"strconv"
	"testing"
)

// benchTable is a table of n names on one certificate: even hosts have an
// exact name "host<i>.example", odd ones a wildcard "*.zone<i>.example".
func benchTable(b *testing.B, n int, cert tls.Certificate) *Table {
	b.Helper()
	cfg := Config{Certificates: []Certificate{{ID: "c", Source: source(cert)}}, DefaultCertificate: "c"}
	for i := range n {
		name := "host" + strconv.Itoa(i) + ".example"
		if i%2 == 1 {
			name = "*.zone" + strconv.Itoa(i) + ".example"
		}
		cfg.Hosts = append(cfg.Hosts, Host{Names: []string{name}})
	}
	return mustTable(b, cfg)
}

// BenchmarkSelect is the whole per-handshake cost of the selection:
// Selector.GetConfigForClient, with the table read, the lookup and the
// ticket key period check.
func BenchmarkSelect(b *testing.B) {
	cert := newPKI(b, "root").issue(b, leafOpts{names: []string{"host0.example"}})
	for _, n := range []int{10, 10_000} {
		sel := NewSelector(benchTable(b, n, cert))
		k := n / 2 &^ 1 // an exact name; k+1 is a wildcard
		for _, q := range []struct{ kind, name string }{
			{"exact", "Host" + strconv.Itoa(k) + ".example"},
			{"wildcard", "www.zone" + strconv.Itoa(k+1) + ".example"},
			{"unknown", "nobody.example"},
		} {
			hello := &tls.ClientHelloInfo{ServerName: q.name}
			want := MatchExact
			switch q.kind {
			case "wildcard":
				want = MatchWildcard
			case "unknown":
				want = MatchDefault
			}
			if got := sel.Table().Select(q.name, TCP).Match; got != want {
				b.Fatalf("%s: %v, want %v", q.name, got, want)
			}
			b.Run(strconv.Itoa(n)+"/"+q.kind, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					sel.GetConfigForClient(hello)
				}
			})
		}
	}
}

// BenchmarkHandshake compares TLS 1.3 handshakes (ECDSA P-256, default
// key exchange) through a Selector over a 10 000-name table with a plain
// crypto/tls server holding the one certificate, full and resumed. Both
// ends run in the process over net.Pipe, so ns/op under -cpu 1 is the CPU
// of a client and a server handshake together.
func BenchmarkHandshake(b *testing.B) {
	ca := newPKI(b, "root")
	cert := ca.issue(b, leafOpts{names: []string{"host0.example"}})
	plain := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	sel := NewSelector(benchTable(b, 10_000, cert))
	for _, resumed := range []bool{false, true} {
		kind := "full"
		if resumed {
			kind = "resumed"
		}
		for _, srv := range []struct {
			name string
			cfg  *tls.Config
		}{{"plain", plain}, {"table", sel.TLSConfig()}} {
			b.Run(kind+"/"+srv.name, func(b *testing.B) {
				client := clientConfig(ca.pool, "host0.example", "h2", "http/1.1")
				client.MinVersion = tls.VersionTLS13
				if resumed {
					client.ClientSessionCache = tls.NewLRUClientSessionCache(1)
					handshakePipe(b, srv.cfg, client, true) // the ticket
				}
				b.ReportAllocs()
				for b.Loop() {
					if handshakePipe(b, srv.cfg, client, resumed) != resumed {
						b.Fatal("resumption differs")
					}
				}
			})
		}
	}
}

// handshakePipe runs one handshake over net.Pipe and reports whether it
// resumed. With ticket, the client reads until the server's session
// ticket has arrived.
func handshakePipe(b *testing.B, server, client *tls.Config, ticket bool) bool {
	cc, sc := net.Pipe()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(sc, server)
		err := s.Handshake()
		if err == nil && ticket {
			_, err = s.Write([]byte{1})
		}
		sc.Close()
		done <- err
	}()
	c := tls.Client(cc, client)
	if err := c.Handshake(); err != nil {
		b.Fatal(err)
	}
	if ticket {
		// The ticket precedes the byte; reading it stores the ticket.
		var one [1]byte
		if _, err := c.Read(one[:]); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	cc.Close()
	return c.ConnectionState().DidResume
}
