package main

// The security suite's parts: a client that writes raw bytes to the daemon
// and reads each answer with http.ReadResponse, upstreams on a plain
// http.ServeMux that record what reached them, upstreams written on a bare
// listener that answer canned bytes, and the readings other upstreams
// give a forwarded path.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/require"
)

// wireTimeout bounds every connection of the suite: a regression that
// hangs fails its subtest after this long instead of hanging the package.
const wireTimeout = 10 * time.Second

// startWithDoc writes doc as a JSON config file and starts the daemon on
// it, with the file watcher off unless args turn it on.
func startWithDoc(t *testing.T, doc config.Document, args ...string) *daemon {
	t.Helper()
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "paduraksa.json")
	require.NoError(t, os.WriteFile(file, data, 0o644))
	return startDaemon(t, append([]string{"-config", file, "-watch", "0"}, args...)...)
}

// upstreamOf is an upstream with one destination per address, in order
// (ids d0, d1, ...).
func upstreamOf(id string, addrs ...string) config.Upstream {
	u := config.Upstream{ID: id}
	for i, a := range addrs {
		u.Destinations = append(u.Destinations, config.Destination{ID: "d" + strconv.Itoa(i), Address: "http://" + a})
	}
	return u
}

// wire is one client connection to the daemon, written and read as raw
// bytes under a deadline.
type wire struct {
	t  *testing.T
	c  *net.TCPConn
	br *bufio.Reader
}

func dialWire(t *testing.T, addr string) *wire {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, wireTimeout)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(wireTimeout)))
	return &wire{t: t, c: c.(*net.TCPConn), br: bufio.NewReader(c)}
}

func (w *wire) send(s string) {
	w.t.Helper()
	_, err := io.WriteString(w.c, s)
	require.NoError(w.t, err)
}

// closeWrite half-closes the connection: the daemon reads EOF.
func (w *wire) closeWrite() {
	w.t.Helper()
	require.NoError(w.t, w.c.CloseWrite())
}

// reply is one response as the client read it.
type reply struct {
	status  int
	header  http.Header
	body    string
	bodyErr error // nil when the body arrived whole
}

// next reads one response, a 1xx included. At most 1 MiB of the body is
// read.
func (w *wire) next(method string) *reply {
	w.t.Helper()
	r, err := w.read(method)
	require.NoError(w.t, err, "reading a response")
	return r
}

// read is next for a response that may not come: it returns
// http.ReadResponse's error.
func (w *wire) read(method string) (*reply, error) {
	res, err := http.ReadResponse(w.br, &http.Request{Method: method})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return &reply{status: res.StatusCode, header: res.Header, body: string(b), bodyErr: err}, nil
}

// final reads the responses up to the first that is not 1xx, and returns
// it with the number of 1xx before it.
func (w *wire) final(method string) (*reply, int) {
	w.t.Helper()
	r, n, err := w.readFinal(method)
	require.NoError(w.t, err, "reading a response")
	return r, n
}

func (w *wire) readFinal(method string) (*reply, int, error) {
	for n := 0; ; n++ {
		r, err := w.read(method)
		if err != nil || r.status >= 200 || r.status == http.StatusSwitchingProtocols {
			return r, n, err
		}
	}
}

// closed reports whether the daemon closed the connection: EOF or a reset
// before any further byte.
func (w *wire) closed() bool {
	w.t.Helper()
	require.NoError(w.t, w.c.SetReadDeadline(time.Now().Add(wireTimeout)))
	n, err := w.br.Read(make([]byte, 1))
	return n == 0 && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET))
}

// roundTrip sends raw on a new connection and reads the final response
// to it; the method is raw's first word.
func roundTrip(t *testing.T, addr, raw string) *reply {
	t.Helper()
	w := dialWire(t, addr)
	w.send(raw)
	method, _, _ := strings.Cut(raw, " ")
	r, _ := w.final(method)
	return r
}

// get is a plain GET for host and target, closing the connection after.
func get(host, target string) string {
	return "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n"
}

// seen is one request as an upstream received it.
type seen struct {
	handler    string // the name of the ServeMux pattern that served it; "" for the mux's own answers (redirects)
	requestURI string
	host       string
	header     http.Header
	trailer    http.Header
	body       int
	bodyErr    error
}

// recorder is an upstream on a plain http.ServeMux that records every
// request it receives: the mux's patterns answer with their name.
type recorder struct {
	addr string
	mu   sync.Mutex
	reqs []seen
}

type seenKey struct{}

// startRecorder serves patterns (pattern: name) on a loopback port.
func startRecorder(t *testing.T, patterns map[string]string) *recorder {
	t.Helper()
	rc := &recorder{}
	mux := http.NewServeMux()
	for p, name := range patterns {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			r.Context().Value(seenKey{}).(*seen).handler = name
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, name)
		})
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := &seen{requestURI: r.RequestURI, host: r.Host, header: r.Header.Clone()}
		body := &countingBody{rc: r.Body}
		r.Body = body
		mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), seenKey{}, s)))
		_, err := io.Copy(io.Discard, body)
		s.body, s.bodyErr, s.trailer = body.n, cmpErr(body.err, err), r.Trailer.Clone()
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, *s)
		rc.mu.Unlock()
	})
	rc.addr = serve(t, &http.Server{Handler: h})
	return rc
}

// take returns the requests received since the last take.
func (rc *recorder) take() []seen {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := rc.reqs
	rc.reqs = nil
	return out
}

type countingBody struct {
	rc  io.ReadCloser
	n   int
	err error
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	b.n += n
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

func (b *countingBody) Close() error { return b.rc.Close() }

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// serve runs srv on a loopback port until the test ends and returns its
// address.
func serve(t *testing.T, srv *http.Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv.ReadHeaderTimeout = wireTimeout
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// cannedUpstream is an upstream written on a bare listener: for each
// connection it reads one request and writes answers[its path] as raw
// bytes, or for "/ok" a 200 whose body is name, then closes.
func cannedUpstream(t *testing.T, name string, answers map[string]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { mu.Lock(); delete(conns, c); mu.Unlock(); c.Close() }()
				c.SetDeadline(time.Now().Add(wireTimeout))
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				answer, ok := answers[req.URL.Path]
				if req.URL.Path == "/ok" || !ok {
					answer = "HTTP/1.1 200 OK\r\nContent-Length: " + strconv.Itoa(len(name)) + "\r\nConnection: close\r\n\r\n" + name
				}
				io.WriteString(c, answer)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// closingListener accepts connections and closes them at once: a
// destination that fails every exchange.
func closingListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// readings returns how upstreams that read a path differently from Go's
// ServeMux resolve the forwarded request target: decoded once and
// cleaned, with "\" as "/" and the path cut at a decoded "?", "#" or NUL
// (nginx's merging and most frameworks); and with ";" parameters cut from
// every segment before decoding (Tomcat, Jetty, Spring).
func readings(requestURI string) []string {
	p, _, _ := strings.Cut(requestURI, "?")
	var tomcat strings.Builder
	for i, seg := range strings.Split(p, "/") {
		if i > 0 {
			tomcat.WriteByte('/')
		}
		seg, _, _ = strings.Cut(seg, ";")
		tomcat.WriteString(seg)
	}
	return []string{resolve(p), resolve(tomcat.String())}
}

func resolve(raw string) string {
	p, err := url.PathUnescape(raw)
	if err != nil {
		p = raw
	}
	if i := strings.IndexAny(p, "?#\x00"); i >= 0 {
		p = p[:i]
	}
	return path.Clean("/" + strings.ReplaceAll(p, `\`, "/"))
}

// under reports whether p is prefix or below it, ASCII letters in any
// case (as case-insensitive upstreams resolve it).
func under(p, prefix string) bool {
	return len(p) >= len(prefix) && strings.EqualFold(p[:len(prefix)], prefix) &&
		(len(p) == len(prefix) || p[len(prefix)] == '/')
}
