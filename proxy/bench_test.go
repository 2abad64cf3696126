package proxy_test

import (
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/paduraksa/paduraksa/gate"
)

// The benchmarks in this file send keep-alive HTTP/1.1 requests from a real
// net/http client through a real loopback proxy to a real loopback upstream
// answering "ok". Allocations count all three parties (client, proxy and
// upstream, all in this process); compare ns/op and B/op between our
// forwarder and httputil.ReverseProxy measured in the same run.

func okUpstream(b *testing.B) string {
	return listen(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = []string{"text/plain"}
		io.WriteString(w, "ok")
	}))
}

func runClient(b *testing.B, addr string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, DisableCompression: true}}
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

// BenchmarkProxyH1 is the gate and the forwarder.
func BenchmarkProxyH1(b *testing.B) {
	addr := gateway(b, gate.Config{}, okUpstream(b))
	runClient(b, addr)
}

type bufferPool struct{ p sync.Pool }

func (bp *bufferPool) Get() []byte  { return *(bp.p.Get().(*[]byte)) }
func (bp *bufferPool) Put(b []byte) { bp.p.Put(&b) }

// BenchmarkHTTPUtilH1 is the standard library's httputil.ReverseProxy, set
// up as a fair peer: a buffer pool, the client's Host kept, compression off.
func BenchmarkHTTPUtilH1(b *testing.B) {
	target, _ := url.Parse("http://" + okUpstream(b))
	pool := &bufferPool{p: sync.Pool{New: func() any { b := make([]byte, 32*1024); return &b }}}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
			pr.SetXForwarded()
		},
		Transport:  &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 64},
		BufferPool: pool,
	}
	runClient(b, listen(b, rp))
}
