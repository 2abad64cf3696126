// Command edge is the whole edge in a few lines: a document, a publisher
// and edge.Start, serving HTTPS over TCP (HTTP/1.1, HTTP/2) and HTTP/3
// over UDP on one port, with a certificate for localhost made at start.
//
//	go run ./examples/edge -https 127.0.0.1:8443
//
// It prints the address and a curl command; the certificate is written to
// -cacert (a temporary file by default) for the client to trust.
package main

import (
	"context"
	"encoding/pem"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"time"

	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// document is the gateway's config. Alt-Svc advertises HTTP/3 on the
// port HTTPS is bound to (the compiler's HTTPSPort).
const document = `
global:
  tls: {defaultCertificate: localhost}
certificates:
  - id: localhost   # no files: the source below
hosts:
  - names: [localhost]
    tls: {http3: true}
    kind: fixed
    fixed: {status: 200, body: "hello from the edge\n"}
`

func main() {
	addr := flag.String("https", "127.0.0.1:8443", "address of HTTPS over TCP and HTTP/3 over UDP (port 0: any free port)")
	caFile := flag.String("cacert", "", "file to write the self-signed certificate to (default: a temporary file)")
	flag.Parse()

	self, err := tlsselect.SelfSigned(24*time.Hour, "localhost")
	if err != nil {
		log.Fatal(err)
	}
	store := new(snapshot.Store)
	// The TLS configs follow the store: until the document applies,
	// handshakes are refused and requests answered 503.
	srv, err := edge.Start(edge.Config{
		Handler: store,
		HTTPS:   *addr,
		HTTP3:   true,
		TLS:     store.TLS().TLSConfig(),
		QUICTLS: store.TLS().QUICConfig(),
	})
	if err != nil {
		log.Fatal(err)
	}
	port := srv.Addr(edge.ListenerHTTPS).(*net.TCPAddr).Port
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{
		Store: store,
		Compiler: snapshot.Compiler{
			Certificates: map[string]tlsselect.Source{"localhost": tlsselect.Static(self)},
			HTTPSPort:    port,
		},
	})
	defer pub.Close()
	o, err := pub.PublishData([]byte(document)).Wait(context.Background())
	if err != nil || o.Status != snapshot.Applied {
		log.Fatal("document: ", o.Status, o.Errors, err)
	}

	ca, err := writeCertificate(*caFile, self.Leaf.Raw)
	if err != nil {
		log.Fatal(err)
	}
	if *caFile == "" {
		defer os.Remove(ca)
	}
	fmt.Printf("listening on https://%s (HTTP/1.1, HTTP/2; HTTP/3 on %s)\n", srv.Addr(edge.ListenerHTTPS), srv.Addr(edge.ListenerHTTP3))
	fmt.Printf("certificate: %s\n", ca)
	fmt.Printf("try: curl --cacert %s --resolve localhost:%d:127.0.0.1 https://localhost:%d/\n", ca, port, port)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	select {
	case <-ctx.Done():
	case err := <-srv.Err():
		log.Print(err)
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutdown)
}

// writeCertificate writes the certificate as PEM to path, or to a new
// temporary file when path is empty, and returns the file's name.
func writeCertificate(path string, der []byte) (string, error) {
	data := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if path != "" {
		return path, os.WriteFile(path, data, 0o644)
	}
	f, err := os.CreateTemp("", "edge-localhost-*.pem")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return f.Name(), err
}
