package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzDirectRequestHead checks the direct client's request head against
// net/http's Request.Write, byte for byte: whatever the direct client
// writes, net/http writes the same (it is the reference for what an
// upstream has always received), and what net/http refuses to write the
// direct client leaves to it.
func FuzzDirectRequestHead(f *testing.F) {
	f.Add("GET", "app.test", "/a/b", "q=1", "Accept", "*/*", "X-Forwarded-For", "192.0.2.1", int64(0), true)
	f.Add("POST", "app.test:8080", "/", "", "User-Agent", " curl/8 ", "Content-Type", "text/plain", int64(5), false)
	f.Add("PUT", "[::1]:80", "//x", "", "X-Empty", "", "X-Tab", "\ta\t", int64(0), false)
	f.Add("DELETE", "app.test", "", "", "X-A", "1", "x-lower", "v", int64(70000), true)
	f.Fuzz(func(t *testing.T, method, host, path, query, k1, v1, k2, v2 string, length int64, ua bool) {
		if length < 0 || length > 1<<20 {
			return
		}
		u := &url.URL{Scheme: "http", Host: "upstream.test", Opaque: path, RawQuery: query}
		if strings.HasPrefix(path, "//") {
			u.Opaque, u.Path = "", path
		}
		h := http.Header{k1: {v1}}
		h[k2] = append(h[k2], v2)
		if !ua {
			h["User-Agent"] = nil
		}
		req := &http.Request{Method: method, URL: u, Host: host, Header: h, ContentLength: length}
		if length > 0 {
			req.Body = io.NopCloser(bytes.NewReader(make([]byte, length)))
		}
		var c h1Conn
		head, err := c.appendRequestHead(nil, req)
		var ref bytes.Buffer
		refErr := req.Write(&ref)
		if err != nil {
			return // net/http's to send, with its own checks
		}
		if refErr != nil {
			t.Fatalf("wrote what net/http refuses (%v): %q", refErr, head)
		}
		want, _, _ := bytes.Cut(ref.Bytes(), []byte("\r\n\r\n"))
		if string(head) != string(want)+"\r\n\r\n" {
			t.Fatalf("head differs\n got %q\nwant %q", head, string(want)+"\r\n\r\n")
		}
	})
}
