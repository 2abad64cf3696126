package proxy_test

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/testpages"
	"github.com/paduraksa/paduraksa/proxy"
)

var page = strings.Repeat("<p>Hello, compressible world.</p>\n", 500)

func TestCompression(t *testing.T) {
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		h := w.Header()
		h.Set("Content-Type", q.Get("ct"))
		h.Set("ETag", `"v1"`)
		h.Set("Accept-Ranges", "bytes")
		h.Set("Digest", "sha-256=x")
		for _, k := range []string{"Content-Encoding", "Cache-Control", "Content-Range", "Vary"} {
			if v := q.Get(k); v != "" {
				h.Set(k, v)
			}
		}
		body := page
		if n := q.Get("n"); n != "" {
			i, _ := strconv.Atoi(n)
			body = page[:i]
		}
		if q.Get("chunked") == "" {
			h.Set("Content-Length", strconv.Itoa(len(body)))
		}
		status, _ := strconv.Atoi(q.Get("status"))
		if status == 0 {
			status = 200
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	addr, _ := setup{site: &proxy.SiteConfig{Compression: proxy.Compression{Enabled: true}}}.start(t, up)
	off, _ := setup{}.start(t, up)
	plainClient := clientTransport(t)

	get := func(addr, method, query, ae string) (*http.Response, []byte) {
		req := mustReq(method, "/?"+query)
		req.URL.Host, req.URL.Scheme, req.Host = addr, "http", "app.test"
		if ae != "" {
			req.Header.Set("Accept-Encoding", ae)
		}
		res, err := roundTrip(t, plainClient, req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, b
	}

	t.Run("gzip by default", func(t *testing.T) {
		res, b := get(addr, "GET", "ct=text/html", "br, gzip, zstd")
		assert.Equal(t, "gzip", res.Header.Get("Content-Encoding"))
		assert.Equal(t, `W/"v1"`, res.Header.Get("ETag"))
		assert.Empty(t, res.Header.Get("Accept-Ranges"))
		assert.Empty(t, res.Header.Get("Digest"))
		assert.Equal(t, "Accept-Encoding", res.Header.Get("Vary"))
		assert.NotEqual(t, int64(len(page)), res.ContentLength, "no length of the identity body")
		zr, err := gzip.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		plain, err := io.ReadAll(zr)
		require.NoError(t, err)
		assert.Equal(t, page, string(plain))
		assert.Less(t, len(b), len(page)/4)
	})
	t.Run("client prefers br", func(t *testing.T) {
		res, b := get(addr, "GET", "ct=application/json", "gzip;q=0.5, br")
		require.Equal(t, "br", res.Header.Get("Content-Encoding"))
		plain, err := io.ReadAll(brotli.NewReader(bytes.NewReader(b)))
		require.NoError(t, err)
		assert.Equal(t, page, string(plain))
	})
	t.Run("client prefers zstd, chunked upstream", func(t *testing.T) {
		res, b := get(addr, "GET", "ct=image/svg%2Bxml&chunked=1&Vary=Origin", "zstd, gzip;q=0.9")
		require.Equal(t, "zstd", res.Header.Get("Content-Encoding"))
		assert.Equal(t, []string{"Origin", "Accept-Encoding"}, res.Header.Values("Vary"))
		d, err := zstd.NewReader(bytes.NewReader(b))
		require.NoError(t, err)
		plain, err := io.ReadAll(d)
		require.NoError(t, err)
		assert.Equal(t, page, string(plain))
	})
	for _, tc := range []struct {
		name, method, query, ae string
		proxy                   string
	}{
		{"host setting off", "GET", "ct=text/html", "gzip", off},
		{"no Accept-Encoding", "GET", "ct=text/html", "", addr},
		{"identity only", "GET", "ct=text/html", "identity, deflate", addr},
		{"not text-like", "GET", "ct=image/png", "gzip", addr},
		{"event stream", "GET", "ct=text/event-stream", "gzip", addr},
		{"already encoded", "GET", "ct=text/html&Content-Encoding=br", "gzip", addr},
		{"no-transform", "GET", "ct=text/html&Cache-Control=public,%20no-transform", "gzip", addr},
		{"content range", "GET", "ct=text/html&Content-Range=bytes%200-9/100", "gzip", addr},
		{"206", "GET", "ct=text/html&status=206", "gzip", addr},
		{"204", "GET", "ct=text/html&status=204&n=0", "gzip", addr},
		{"304", "GET", "ct=text/html&status=304&n=0", "gzip", addr},
		{"below minimum size", "GET", "ct=text/html&n=1000", "gzip", addr},
		{"HEAD", "HEAD", "ct=text/html", "gzip", addr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := get(tc.proxy, tc.method, tc.query, tc.ae)
			enc := res.Header.Get("Content-Encoding")
			assert.NotContains(t, []string{"gzip", "zstd"}, enc)
			if !strings.Contains(tc.query, "Content-Encoding") {
				assert.Empty(t, enc)
				assert.Equal(t, `"v1"`, res.Header.Get("ETag"), "the representation is the upstream's")
			}
		})
	}
	t.Run("proxy's own answer", func(t *testing.T) {
		dead, _ := setup{site: &proxy.SiteConfig{Compression: proxy.Compression{Enabled: true, MinimumSize: 1}}}.start(t, refusedAddr(t))
		res, _ := get(dead, "GET", "", "gzip")
		assert.Equal(t, 502, res.StatusCode)
		assert.Empty(t, res.Header.Get("Content-Encoding"))
	})
	_, err := proxy.NewSite(proxy.SiteConfig{Compression: proxy.Compression{Enabled: true, Encodings: []string{"gzip", "deflate", "gzip"}, MinimumSize: -1}})
	assert.Equal(t, []string{
		proxy.CodeCompressionMinimumSize + " compression.minimumSize",
		proxy.CodeCompressionEncodingUnknown + " compression.encodings[1]",
		proxy.CodeCompressionEncodingDuplicate + " compression.encodings[2]",
	}, problemsOf(err))
}

func TestCompressedStreamIsFlushed(t *testing.T) {
	second := make(chan struct{})
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson+json")
		io.WriteString(w, `{"n":1}`+"\n")
		w.(http.Flusher).Flush()
		select {
		case <-second:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, `{"n":2}`+"\n")
	}))
	addr, _ := setup{site: &proxy.SiteConfig{Compression: proxy.Compression{Enabled: true}}}.start(t, up)
	req := mustReq("GET", "/")
	req.URL.Host, req.URL.Scheme, req.Host = addr, "http", "app.test"
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := roundTrip(t, clientTransport(t), req)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, "gzip", res.Header.Get("Content-Encoding"))
	zr, err := gzip.NewReader(res.Body)
	require.NoError(t, err)
	line := make([]byte, 8)
	_, err = io.ReadFull(zr, line)
	require.NoError(t, err)
	assert.Equal(t, `{"n":1}`+"\n", string(line), "the first record arrives while the upstream still holds the stream")
	close(second)
	rest, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, `{"n":2}`+"\n", string(rest))
}

// TestChunkedPageIsOneBlock: a page the upstream sends chunked in one
// write reaches the client compressed in one chunk, its bytes the page's,
// though the forwarder reads it in pieces: it flushes where the upstream
// paused, not after every read (each flush a sync-flushed deflate block
// and a chunk of its own). That takes the direct HTTP/1.1 client, whose
// body tells where the upstream paused.
func TestChunkedPageIsOneBlock(t *testing.T) {
	body := testpages.Repetitive()
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(body)
	}))
	addr, _ := setup{site: &proxy.SiteConfig{Compression: proxy.Compression{Enabled: true}}}.start(t, up)
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = io.WriteString(c, "GET /page HTTP/1.1\r\nHost: app.test\r\nAccept-Encoding: gzip\r\n\r\n")
	require.NoError(t, err)
	br := bufio.NewReader(c)
	res, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	require.Equal(t, "gzip", res.Header.Get("Content-Encoding"))
	require.Equal(t, []string{"chunked"}, res.TransferEncoding)
	// Read the chunks by hand: net/http's reader hides their bounds.
	var zipped []byte
	chunks := 0
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		n, err := strconv.ParseInt(strings.TrimSpace(line), 16, 64)
		require.NoError(t, err, "chunk size line %q", line)
		if n == 0 {
			break
		}
		chunks++
		b := make([]byte, n+2)
		_, err = io.ReadFull(br, b)
		require.NoError(t, err)
		zipped = append(zipped, b[:n]...)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, body, plain)
	if proxy.DefaultHTTP1() == proxy.HTTP1Direct {
		assert.Equal(t, 1, chunks, "%d compressed bytes", len(zipped))
	} // net/http's client body cannot tell a pause: flushed every read
}

func TestRewriteThroughTheProxy(t *testing.T) {
	got := make(chan string, 1)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.RequestURI
		w.Header().Set("Location", "/api/login?next=%2Fx")
		w.WriteHeader(302)
	}))
	addr, _ := setup{prefix: "/app", allow: gate.AllowEncodedSlash, route: proxy.RouteConfig{Rewrite: proxy.Rewrite{StripPrefix: "/app", AddPrefix: "/api"}}}.start(t, up)
	res, _ := do(t, addr, rawReq(t, "/app/group%2Fproject/a%20b?q=%2F"))
	assert.Equal(t, 302, res.StatusCode)
	assert.Equal(t, "/api/group%2Fproject/a%20b?q=%2F", recv(t, got), "an allowed %2F is neither decoded nor re-encoded")
	assert.Equal(t, "/app/login?next=%2Fx", res.Header.Get("Location"))

	for _, tc := range []struct {
		target string
		status int
		sent   string
	}{
		{"/app/%2e%2e/app/x", 400, ""},
		{"/app/x/.%2e/y", 400, ""},
		{"/app/x/../y", 400, ""},
		{"/app/%252e%252e/x", 400, ""},
		{"/app/%c0%ae/x", 400, ""},
		{"/app/x%5C..%5Cy", 400, ""},
		{"/%61pp/x", 302, "/api/x"},
		{"/APP/x;v=1/%7e", 302, "/api/x;v=1/~"},
		{"/app/x/y", 302, "/api/x/y"},
	} {
		res, _ := do(t, addr, rawReq(t, tc.target))
		assert.Equal(t, tc.status, res.StatusCode, tc.target)
		if tc.status == 302 {
			assert.Equal(t, tc.sent, recv(t, got), tc.target)
		}
	}
}

// rawReq builds a request whose target is sent byte for byte.
func rawReq(t *testing.T, target string) *http.Request {
	t.Helper()
	req := mustReq("GET", "/")
	req.URL.Opaque = target
	return req
}

// TestForwardOwnGzipAllocations: a compressed response allocates no more
// than a plain one, whether it is compressed in one call (a page of known
// length) or streamed (flushed at every read).
func TestForwardOwnGzipAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop encoders, dozens of objects each, at random; make allocs runs this without it")
	}
	const limit = 1.0
	for _, chunked := range []bool{false, true} {
		f, w := forwardOwnGzip(t, testpages.Repetitive(), chunked)
		f()
		require.Equal(t, "gzip", w.h.Get("Content-Encoding"))
		if n := testing.AllocsPerRun(100, f); n > limit {
			t.Errorf("a compressed response (chunked %v) allocates %.1f times, want at most %v", chunked, n, limit)
		}
	}
}
