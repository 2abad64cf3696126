package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/testpages"
	"github.com/quic-go/quic-go/http3"
	"golang.org/x/net/websocket"
)

// The shared origin's answers.
const tinyBody = "hello, world\n" // 13 bytes

// The 16 KiB HTML pages the gzip scenarios ask for, each sent with its
// length: htmlPage compresses about as well as a page of prose (4.2 KB at
// the fastest level), repPage, a catalogue table whose rows differ only in
// their numbers, about seven times (2.3 KB).
var (
	htmlPage = testpages.Varied()
	repPage  = testpages.Repetitive()
	pages    = map[string][]byte{"/html16k": htmlPage, "/html16k-rep": repPage}
)

// sseEvent pads each event so a stream moves about 1 KB/s, above any
// proxy's minimum response rate.
var ssePad = strings.Repeat("x", 96)

// originHandler is the upstream every peer forwards to. name goes into
// X-Backend on every answer; delay holds every answer but /health.
func originHandler(name string, delay time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(tinyBody)))
		io.WriteString(w, tinyBody)
	})
	for path, page := range pages {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			w.Write(page)
		})
	}
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "slow\n")
	})
	mux.HandleFunc("/sse", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("X-Accel-Buffering", "no")
		rc := http.NewResponseController(w)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			if _, err := fmt.Fprintf(w, "id: %d\ndata: %d %s\n\n", i, i, ssePad); err != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
	})
	mux.Handle("/ws", websocket.Handler(func(c *websocket.Conn) {
		io.Copy(c, c)
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", name)
		if delay > 0 && r.URL.Path != "/health" {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		mux.ServeHTTP(w, r)
	})
}

// upstreamMain serves the origin: one listener per -listen address, each
// named by the matching -names entry; -slow names the ones that wait
// -delay before answering. With -h3 it also serves HTTP/3 (for measuring
// the HTTP/3 load generator against a server alone).
func upstreamMain(args []string) error {
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.10:9000", "comma-separated addresses")
	names := fs.String("names", "origin", "comma-separated names, one per address")
	slow := fs.String("slow", "", "comma-separated names that answer after -delay")
	delay := fs.Duration("delay", 50*time.Millisecond, "delay of the slow ones")
	h3 := fs.String("h3", "", "UDP address to serve HTTP/3 on")
	cert := fs.String("cert", "", "certificate file for -h3")
	key := fs.String("key", "", "key file for -h3")
	if err := fs.Parse(args); err != nil {
		return err
	}
	addrs, ns := strings.Split(*listen, ","), strings.Split(*names, ",")
	if len(addrs) != len(ns) {
		return errors.New("upstream: -listen and -names differ in length")
	}
	slowSet := map[string]bool{}
	for _, s := range strings.Split(*slow, ",") {
		slowSet[s] = s != ""
	}
	errc := make(chan error, len(addrs)+1)
	for i, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return err
		}
		var d time.Duration
		if slowSet[ns[i]] {
			d = *delay
		}
		srv := &http.Server{Handler: originHandler(ns[i], d), ReadHeaderTimeout: 30 * time.Second}
		go func() { errc <- srv.Serve(ln) }()
	}
	if *h3 != "" {
		c, err := tls.LoadX509KeyPair(*cert, *key)
		if err != nil {
			return err
		}
		srv := &http3.Server{Addr: *h3, Handler: originHandler(ns[0], 0),
			TLSConfig: http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{c}})}
		go func() { errc <- srv.ListenAndServe() }()
	}
	fmt.Println("upstream ready")
	return <-errc
}
