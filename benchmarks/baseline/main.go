// Command httputil-baseline is the benchmark suite's reference point: a
// plain httputil.ReverseProxy to one upstream, on HTTP/1.1 and on HTTPS
// (HTTP/1.1 and HTTP/2), with the idle pool the other peers get and
// nothing else: no routing, no compression, no health.
package main

import (
	"crypto/tls"
	"flag"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "HTTP address")
	tlsAddr := flag.String("tls", "", "HTTPS address (HTTP/1.1 and HTTP/2); empty: none")
	cert := flag.String("cert", "", "certificate PEM file for -tls")
	key := flag.String("key", "", "key PEM file for -tls")
	upstream := flag.String("upstream", "127.0.0.1:9000", "upstream host:port")
	flag.Parse()

	target := &url.URL{Scheme: "http", Host: *upstream}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport: &http.Transport{
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
		},
	}
	errc := make(chan error, 2)
	go func() {
		srv := &http.Server{Addr: *listen, Handler: rp, ReadHeaderTimeout: 15 * time.Second, IdleTimeout: 300 * time.Second}
		errc <- srv.ListenAndServe()
	}()
	if *tlsAddr != "" {
		go func() {
			srv := &http.Server{Addr: *tlsAddr, Handler: rp, ReadHeaderTimeout: 15 * time.Second, IdleTimeout: 300 * time.Second,
				TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12}}
			errc <- srv.ListenAndServeTLS(*cert, *key)
		}()
	}
	log.Fatal(<-errc)
}
