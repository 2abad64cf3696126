package proxy_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
)

// The loopback benchmarks in this file send keep-alive requests from a real
// net/http client through a real loopback proxy to a real loopback upstream
// answering "ok". Allocations count all three parties (client, proxy and
// upstream, all in this process); compare ns/op and B/op between our
// forwarder and httputil.ReverseProxy measured in the same run.
// BenchmarkForwardOwn measures the forwarder's own code alone.

func okUpstream(b *testing.B, h2c bool) string {
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
	client := &http.Client{Transport: rt}
	req, _ := http.NewRequest("GET", "http://"+addr+"/bench", nil)
	req.Host = "app.test"
	b.ReportAllocs()
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
}

func h1Client() http.RoundTripper {
	return &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}
}

// BenchmarkForwardH1 is the gate and the forwarder, HTTP/1.1 on both sides.
func BenchmarkForwardH1(b *testing.B) {
	addr := gateway(b, gate.Config{}, okUpstream(b, false))
	runClient(b, addr, h1Client())
}

// BenchmarkProxyH1 is the old name of BenchmarkForwardH1.
func BenchmarkProxyH1(b *testing.B) { BenchmarkForwardH1(b) }

// BenchmarkForwardH2 is the gate and the forwarder, h2c on both sides.
func BenchmarkForwardH2(b *testing.B) {
	addr, _ := setup{h2c: true, client: proxy.ClientConfig{Version: proxy.HTTP2, ExactVersion: true}}.start(b, okUpstream(b, true))
	runClient(b, addr, h2cClient(b))
}

type bufferPool struct{ p sync.Pool }

func (bp *bufferPool) Get() []byte  { return *(bp.p.Get().(*[]byte)) }
func (bp *bufferPool) Put(b []byte) { bp.p.Put(&b) }

// reverseProxy is the standard library's httputil.ReverseProxy, set up as
// a fair peer: a buffer pool, the client's Host kept, compression off.
func reverseProxy(upstreamAddr string, h2c bool) *httputil.ReverseProxy {
	target, _ := url.Parse("http://" + upstreamAddr)
	pool := &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}}
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64}
	if h2c {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
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

// BenchmarkHTTPUtilH1 is httputil.ReverseProxy, HTTP/1.1 on both sides.
func BenchmarkHTTPUtilH1(b *testing.B) {
	runClient(b, listen(b, reverseProxy(okUpstream(b, false), false)), h1Client())
}

// BenchmarkHTTPUtilH2 is httputil.ReverseProxy, h2c on both sides.
func BenchmarkHTTPUtilH2(b *testing.B) {
	runClient(b, listenH2C(b, reverseProxy(okUpstream(b, true), true)), h2cClient(b))
}

// BenchmarkForwardGzip16K forwards a 16 KiB HTML page compressed with gzip
// on the way.
func BenchmarkForwardGzip16K(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 16384; i++ {
		fmt.Fprintf(&sb, "<tr><td class=\"n\">%d</td><td><a href=\"/items/%x\">Item %d of the catalogue</a></td><td>%d.%02d EUR</td></tr>\n", i, i*7919, i, i*37%500, i%100)
	}
	html := sb.String()[:16384]
	up := listen(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/html; charset=utf-8"}
		w.Header()["Content-Length"] = []string{"16384"}
		io.WriteString(w, html)
	}))
	addr, _ := setup{site: &proxy.SiteConfig{Compression: proxy.Compression{Enabled: true}}}.start(b, up)
	client := &http.Client{Transport: h1Client()}
	req, _ := http.NewRequest("GET", "http://"+addr+"/page", nil)
	req.Host = "app.test"
	req.Header.Set("Accept-Encoding", "gzip")
	b.ReportAllocs()
	b.SetBytes(16384)
	var n int64
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

// forwardOwn builds a Route on a canned transport and a request for it.
func forwardOwn(tb testing.TB) (func(), *proxy.Route) {
	_, cl := setup{}.start(tb, "127.0.0.1:1")
	cl.Transport = &cannedRT{header: http.Header{"Content-Type": {"text/plain"}}}
	rt, err := proxy.NewRoute(proxy.RouteConfig{Cluster: cl})
	if err != nil {
		tb.Fatal(err)
	}
	r, _ := http.NewRequest("GET", "http://app.test/bench?x=1", nil)
	r.RequestURI = "/bench?x=1"
	r.RemoteAddr = "192.0.2.10:50000"
	r.Header = http.Header{"User-Agent": {"bench"}, "Accept": {"*/*"}, "Connection": {"keep-alive"}}
	w := &nopWriter{h: make(http.Header)}
	rq := &gate.Request{Client: netip.MustParseAddr("192.0.2.10"), Scheme: "http"}
	return func() {
		clear(w.h)
		rt.Forward(w, r, rq)
	}, rt
}

// BenchmarkForwardOwn is the forwarder's own code: Route.Forward with a
// canned RoundTripper and a ResponseWriter that does nothing.
func BenchmarkForwardOwn(b *testing.B) {
	f, _ := forwardOwn(b)
	b.ReportAllocs()
	for b.Loop() {
		f()
	}
}

func TestForwardOwnAllocations(t *testing.T) {
	f, _ := forwardOwn(t)
	f()
	limit := 2.0
	if raceEnabled {
		limit = 8 // pooled exchanges are dropped at random
	}
	if n := testing.AllocsPerRun(200, f); n > limit {
		t.Fatalf("Route.Forward allocates %.1f times per request, want at most %v", n, limit)
	}
}
