package proxy_test

import (
	"io"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/testpages"
	"github.com/paduraksa/paduraksa/proxy"
)

// Two kinds of benchmark compare the forwarder with httputil.ReverseProxy.
//
// BenchmarkForwardOwn and BenchmarkHTTPUtilOwn are like with like: each
// proxy alone, on the same canned RoundTripper, the same request and a
// ResponseWriter that does nothing, so ns/op, B/op and allocs/op are the
// proxy's own. The gate in front of the forwarder is measured apart
// (gate.BenchmarkGateDecide).
//
// The loopback benchmarks send keep-alive requests from a real net/http
// client through a real loopback proxy to a real loopback upstream
// answering "ok"; allocations count all three parties (all in this
// process). BenchmarkForwardH1 and BenchmarkForwardH2 run the gate and the
// forwarder, BenchmarkHTTPUtilH1 and BenchmarkHTTPUtilH2 the reverse proxy
// alone, so their difference includes the gate.

func okUpstream(b *testing.B, h2c bool) string {
	b.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/plain"}
		io.WriteString(w, "ok")
	})
	if h2c {
		return listenH2C(b, h)
	}
	return listen(b, h)
}

func runClient(b *testing.B, addr string, rt http.RoundTripper) {
	b.Helper()
	client := &http.Client{Transport: rt}
	req, err := http.NewRequest("GET", "http://"+addr+"/bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Host = "app.test"
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatal(res.StatusCode)
		}
	}
	if cpu := processCPU() - cpu; cpu > 0 {
		// All three parties' CPU (client, proxy, upstream), per request.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// h1Client is a benchmark's client transport; its idle connections close
// when the benchmark ends.
func h1Client(b *testing.B) http.RoundTripper {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return tr
}

// BenchmarkForwardH1 is the gate and the forwarder, HTTP/1.1 on both sides.
func BenchmarkForwardH1(b *testing.B) {
	addr := gateway(b, gate.Config{}, okUpstream(b, false))
	runClient(b, addr, h1Client(b))
}

// BenchmarkForwardH2 is the gate and the forwarder, h2c on both sides.
func BenchmarkForwardH2(b *testing.B) {
	addr, _ := setup{h2c: true, client: proxy.ClientConfig{Version: proxy.HTTP2, VersionPolicy: proxy.VersionExact}}.start(b, okUpstream(b, true))
	runClient(b, addr, h2cClient(b))
}

type bufferPool struct{ p sync.Pool }

func (bp *bufferPool) Get() []byte  { return *(bp.p.Get().(*[]byte)) }
func (bp *bufferPool) Put(b []byte) { bp.p.Put(&b) }

// reverseProxy is the standard library's httputil.ReverseProxy, set up as
// a fair peer: a buffer pool, the client's Host kept, forwarding headers
// set, sending to upstreamAddr with tr.
func reverseProxy(upstreamAddr string, tr http.RoundTripper) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "http", Host: upstreamAddr}
	pool := &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport:  tr,
		BufferPool: pool,
	}
}

// upstreamTransport is the reverse proxy's transport to the upstream,
// compression off like the forwarder's; its idle connections close when the
// benchmark ends.
func upstreamTransport(b *testing.B, h2c bool) *http.Transport {
	b.Helper()
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}
	if h2c {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
	b.Cleanup(tr.CloseIdleConnections)
	return tr
}

// BenchmarkHTTPUtilH1 is httputil.ReverseProxy, HTTP/1.1 on both sides.
func BenchmarkHTTPUtilH1(b *testing.B) {
	runClient(b, listen(b, reverseProxy(okUpstream(b, false), upstreamTransport(b, false))), h1Client(b))
}

// BenchmarkHTTPUtilH2 is httputil.ReverseProxy, h2c on both sides.
func BenchmarkHTTPUtilH2(b *testing.B) {
	runClient(b, listenH2C(b, reverseProxy(okUpstream(b, true), upstreamTransport(b, true))), h2cClient(b))
}

// BenchmarkForwardGzip forwards a 16 KiB HTML page compressed with gzip
// on the way, a varied page and a repetitive one, each sent by the
// upstream with its length and without (chunked: net/http frames the
// page's one write). wire-bytes is the compressed body.
func BenchmarkForwardGzip(b *testing.B) { eachPage(b, forwardGzip) }

// eachPage runs bench on each page, with its length and chunked.
func eachPage(b *testing.B, bench func(b *testing.B, body []byte, chunked bool)) {
	for _, page := range []struct {
		name string
		body []byte
	}{{"varied", testpages.Varied()}, {"repetitive", testpages.Repetitive()}} {
		for _, chunked := range []bool{false, true} {
			name := page.name + "/length"
			if chunked {
				name = page.name + "/chunked"
			}
			b.Run(name, func(b *testing.B) { bench(b, page.body, chunked) })
		}
	}
}

func forwardGzip(b *testing.B, body []byte, chunked bool) {
	length := []string{strconv.Itoa(len(body))}
	up := listen(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/html; charset=utf-8"}
		if !chunked {
			w.Header()["Content-Length"] = length
		}
		w.Write(body)
	}))
	addr, _ := setup{site: &proxy.SiteConfig{Compression: proxy.Compression{Enabled: true}}}.start(b, up)
	client := &http.Client{Transport: h1Client(b)}
	req, err := http.NewRequest("GET", "http://"+addr+"/page", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Host = "app.test"
	req.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	var n int64
	cpu := processCPU()
	for b.Loop() {
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.Header.Get("Content-Encoding") != "gzip" {
			b.Fatal("not compressed")
		}
	}
	if cpu := processCPU() - cpu; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.ReportMetric(float64(n), "wire-bytes")
}

// nopWriter is a ResponseWriter that keeps its header map between
// requests, like net/http's per-connection one would after the first.
type nopWriter struct {
	h http.Header
}

func (w *nopWriter) Header() http.Header         { return w.h }
func (w *nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *nopWriter) WriteHeader(int)             {}

// cannedRT answers every request with the same response, without I/O.
type cannedRT struct {
	header http.Header
	body   cannedBody
	res    http.Response
}

type cannedBody struct{ strings.Reader }

func (*cannedBody) Close() error { return nil }

func (c *cannedRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.body.Reset("ok")
	c.res = http.Response{StatusCode: 200, Header: c.header, Body: &c.body, ContentLength: 2, Request: r}
	return &c.res, nil
}

// ownExchange is what the proxy-alone benchmarks share: the canned
// transport, a request as net/http's server would hand it over, and a
// ResponseWriter that does nothing.
func ownExchange(tb testing.TB) (*cannedRT, *http.Request, *nopWriter) {
	tb.Helper()
	r, err := http.NewRequest("GET", "http://app.test/bench?x=1", nil)
	if err != nil {
		tb.Fatal(err)
	}
	r.RequestURI = "/bench?x=1"
	r.RemoteAddr = "192.0.2.10:50000"
	r.Header = http.Header{"User-Agent": {"bench"}, "Accept": {"*/*"}, "Connection": {"keep-alive"}}
	return &cannedRT{header: http.Header{"Content-Type": {"text/plain"}}}, r, &nopWriter{h: make(http.Header)}
}

// forwardOwn builds a Route on the canned transport and returns one
// forwarded request; with observed, the cluster's Observer is a
// health.Monitor with passive checks on, as a hand-built gateway wires it.
func forwardOwn(tb testing.TB, observed bool) func() {
	tb.Helper()
	return forwardOwnLimited(tb, observed, proxy.Limits{})
}

// forwardOwnLimited is forwardOwn on a cluster with circuit breakers.
func forwardOwnLimited(tb testing.TB, observed bool, limits proxy.Limits) func() {
	tb.Helper()
	canned, r, w := ownExchange(tb)
	var m *health.Monitor
	s := setup{limits: limits}
	if limits != (proxy.Limits{}) {
		s.stats = new(proxy.Stats)
	}
	if observed {
		m = health.New(health.Options{})
		tb.Cleanup(func() { m.Close() })
		s.observer = m
	}
	_, cl := s.start(tb, "127.0.0.1:1")
	if m != nil {
		if err := m.Update(health.ClusterHealth{Cluster: cl.Upstream, Config: health.Config{Passive: health.PassiveConfig{Enabled: true}}}); err != nil {
			tb.Fatal(err)
		}
	}
	cl.Transport = canned
	rt, err := proxy.NewRoute(proxy.RouteConfig{Cluster: cl})
	if err != nil {
		tb.Fatal(err)
	}
	rq := &gate.Request{Client: netip.MustParseAddr("192.0.2.10"), Scheme: "http"}
	return func() {
		clear(w.h)
		rt.Forward(w, r, rq)
	}
}

// BenchmarkForwardOwn is the forwarder's own code: Route.Forward with a
// canned RoundTripper and a ResponseWriter that does nothing.
func BenchmarkForwardOwn(b *testing.B) {
	f := forwardOwn(b, false)
	b.ReportAllocs()
	for b.Loop() {
		f()
	}
}

// BenchmarkForwardOwnLimited is BenchmarkForwardOwn on a cluster with
// circuit breakers: the in-flight admission is two atomic adds.
func BenchmarkForwardOwnLimited(b *testing.B) {
	f := forwardOwnLimited(b, false, proxy.Limits{MaxInFlight: 1000, MaxRetriesInFlight: 10})
	b.ReportAllocs()
	for b.Loop() {
		f()
	}
}

// BenchmarkForwardOwnObserved is BenchmarkForwardOwn with passive health:
// a health.Monitor observes every exchange.
func BenchmarkForwardOwnObserved(b *testing.B) {
	f := forwardOwn(b, true)
	b.ReportAllocs()
	for b.Loop() {
		f()
	}
}

// BenchmarkHTTPUtilOwn is httputil.ReverseProxy on the same canned
// RoundTripper, request and ResponseWriter as BenchmarkForwardOwn.
func BenchmarkHTTPUtilOwn(b *testing.B) {
	canned, r, w := ownExchange(b)
	rp := reverseProxy("127.0.0.1:1", canned)
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		rp.ServeHTTP(w, r)
	}
	if w.h.Get("Content-Type") != "text/plain" {
		b.Fatalf("the canned response did not come through: %v", w.h)
	}
}

// TestForwardOwnAllocations: the forwarder allocates one object per
// request, the outgoing context (so its own state, kept on Forward's
// stack, never escapes to the heap), and passive health adds nothing.
func TestForwardOwnAllocations(t *testing.T) {
	limit := 1.0
	if raceEnabled {
		limit = 8 // pooled exchanges are dropped at random
	}
	for _, observed := range []bool{false, true} {
		f := forwardOwn(t, observed)
		f()
		if n := testing.AllocsPerRun(200, f); n > limit {
			t.Errorf("Route.Forward (observed %v) allocates %.1f times per request, want at most %v", observed, n, limit)
		}
	}
	f := forwardOwnLimited(t, false, proxy.Limits{MaxInFlight: 1000, MaxRetriesInFlight: 10})
	f()
	if n := testing.AllocsPerRun(200, f); n > limit {
		t.Errorf("Route.Forward with limits allocates %.1f times per request, want at most %v", n, limit)
	}
}

// pageRT answers every request with a page: with its length, or without
// (as a chunked answer reaches the forwarder), its body read in pieces of
// at most piece bytes, the reads a connection's buffer would give.
type pageRT struct {
	header  http.Header
	page    []byte
	chunked bool
	piece   int
	body    pieceBody
	res     http.Response
}

type pieceBody struct {
	rest  []byte
	piece int
}

func (b *pieceBody) Read(p []byte) (int, error) {
	if len(b.rest) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), b.piece)], b.rest)
	b.rest = b.rest[n:]
	return n, nil
}

func (*pieceBody) Close() error { return nil }

func (c *pageRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.body = pieceBody{rest: c.page, piece: c.piece}
	c.res = http.Response{StatusCode: 200, Header: c.header, Body: &c.body, ContentLength: int64(len(c.page)), Request: r}
	if c.chunked {
		c.res.ContentLength = -1
	}
	return &c.res, nil
}

// countingWriter is a ResponseWriter that counts what reaches it: the
// bytes, the Write calls and the flushes.
type countingWriter struct {
	h                      http.Header
	bytes, writes, flushes int
}

func (w *countingWriter) Header() http.Header { return w.h }
func (w *countingWriter) Write(p []byte) (int, error) {
	w.bytes += len(p)
	w.writes++
	return len(p), nil
}
func (w *countingWriter) WriteHeader(int) {}
func (w *countingWriter) Flush()          { w.flushes++ }

// forwardOwnGzip is one compressed response of page through Route.Forward
// on a canned upstream, into a countingWriter.
func forwardOwnGzip(tb testing.TB, page []byte, chunked bool) (func(), *countingWriter) {
	tb.Helper()
	_, r, _ := ownExchange(tb)
	r.Header["Accept-Encoding"] = []string{"gzip"}
	w := &countingWriter{h: make(http.Header)}
	_, cl := setup{}.start(tb, "127.0.0.1:1")
	cl.Transport = &pageRT{header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, page: page, chunked: chunked, piece: 8 << 10}
	site, err := proxy.NewSite(proxy.SiteConfig{Compression: proxy.Compression{Enabled: true}})
	if err != nil {
		tb.Fatal(err)
	}
	rt, err := proxy.NewRoute(proxy.RouteConfig{Cluster: cl, Site: site})
	if err != nil {
		tb.Fatal(err)
	}
	rq := &gate.Request{Client: netip.MustParseAddr("192.0.2.10"), Scheme: "http"}
	return func() {
		clear(w.h)
		*w = countingWriter{h: w.h}
		rt.Forward(w, r, rq)
	}, w
}

// BenchmarkForwardOwnGzip is the forwarder's own cost of one compressed
// 16 KiB page, the proxy's code and the encoder alone: a canned upstream
// whose body arrives in 8 KiB reads, with its length or without, and a
// ResponseWriter that counts. out-bytes is the gzip body, writes the
// Write calls that reach the ResponseWriter, flushes its Flush calls.
func BenchmarkForwardOwnGzip(b *testing.B) {
	eachPage(b, func(b *testing.B, body []byte, chunked bool) {
		f, w := forwardOwnGzip(b, body, chunked)
		b.ReportAllocs()
		for b.Loop() {
			f()
		}
		if w.h.Get("Content-Encoding") != "gzip" {
			b.Fatalf("not compressed: %v", w.h)
		}
		b.ReportMetric(float64(w.bytes), "out-bytes")
		b.ReportMetric(float64(w.writes), "writes")
		b.ReportMetric(float64(w.flushes), "flushes")
	})
}
