package edge_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
)

func Example() {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello over "+r.Proto) })
	srv, err := edge.Start(edge.Config{Handler: hello, HTTP: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())

	res, err := http.Get("http://" + srv.Addr("http").String() + "/")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, string(b))
	// Output:
	// 200 hello over HTTP/1.1
}

// The whole edge, TLS over TCP and HTTP/3 over UDP, on sockets the
// embedder bound, as a process does with the sockets it inherited in a
// binary upgrade or from systemd's socket activation (net.FileListener,
// net.FilePacketConn): the same stack as from addresses, and Shutdown
// closes them.
func Example_ownSockets() {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	udp, err := net.ListenPacket("udp", tcp.Addr().String())
	if err != nil {
		panic(err)
	}
	cert, err := tlsselect.SelfSigned(time.Hour, "localhost")
	if err != nil {
		panic(err)
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello over "+r.Proto) })
	srv, err := edge.Start(edge.Config{
		Handler:       hello,
		HTTPSListener: tcp,
		HTTP3Conn:     udp,
		TLS:           &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())

	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	trust := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	h2 := &http.Transport{TLSClientConfig: trust, ForceAttemptHTTP2: true}
	defer h2.CloseIdleConnections()
	h3 := &http3.Transport{TLSClientConfig: trust}
	defer h3.Close()
	for _, rt := range []http.RoundTripper{h2, h3} {
		client := &http.Client{Transport: rt, Timeout: 10 * time.Second}
		res, err := client.Get("https://" + tcp.Addr().String() + "/")
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Println(res.StatusCode, string(b))
	}
	// Output:
	// 200 hello over HTTP/2.0
	// 200 hello over HTTP/3.0
}

// The whole edge from a config document: the snapshot store is the
// handler and its TLS selector serves the document's certificates, over
// TCP and, for hosts with http3, over QUIC on the same port. The
// certificate here is one made at start, given to the compiler as the
// source of the document's certificate "localhost".
func Example_document() {
	cert, err := tlsselect.SelfSigned(time.Hour, "localhost")
	if err != nil {
		panic(err)
	}
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{
		Store:    store,
		Compiler: snapshot.Compiler{Certificates: map[string]tlsselect.Source{"localhost": tlsselect.Static(cert)}},
	})
	defer pub.Close()
	o, err := pub.PublishData([]byte(`
global: {tls: {defaultCertificate: localhost}}
certificates: [{id: localhost}]
hosts:
  - names: [localhost]
    tls: {http3: true}
    kind: fixed
    fixed: {status: 200, body: hello}
`)).Wait(context.Background())
	if err != nil || o.Status != snapshot.Applied {
		panic(fmt.Sprint(o.Status, o.Errors, err))
	}
	srv, err := edge.Start(edge.Config{
		Handler: store,
		HTTPS:   "127.0.0.1:0",
		HTTP3:   true,
		TLS:     store.TLS().TLSConfig(),
		QUICTLS: store.TLS().QUICConfig(),
	})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())

	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)
	trust := &tls.Config{RootCAs: roots, ServerName: "localhost"}
	h2 := &http.Transport{TLSClientConfig: trust, ForceAttemptHTTP2: true}
	defer h2.CloseIdleConnections()
	h3 := &http3.Transport{TLSClientConfig: trust}
	defer h3.Close()
	for _, rt := range []http.RoundTripper{h2, h3} {
		req, _ := http.NewRequest("GET", "https://"+srv.Addr(edge.ListenerHTTPS).String()+"/", nil)
		req.Host = "localhost"
		res, err := (&http.Client{Transport: rt, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Println(res.Proto, res.StatusCode, string(b))
	}
	// Output:
	// HTTP/2.0 200 hello
	// HTTP/3.0 200 hello
}
