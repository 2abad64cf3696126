package h1client

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

// netHTTPWrite is what net/http's client writes for req: the checks of
// Transport.roundTrip (fields, method), then Request.Write's bytes or its
// refusal.
func netHTTPWrite(req *http.Request) ([]byte, error) {
	for _, h := range []http.Header{req.Header, req.Trailer} {
		for k, vv := range h {
			if !httpguts.ValidHeaderFieldName(k) {
				return nil, errors.New("invalid header field name")
			}
			for _, v := range vv {
				if !httpguts.ValidHeaderFieldValue(v) {
					return nil, errors.New("invalid header field value")
				}
			}
		}
	}
	if req.Method != "" && !httpguts.ValidHeaderFieldName(req.Method) {
		return nil, errors.New("invalid method")
	}
	var b bytes.Buffer
	if err := req.Write(&b); err != nil {
		return nil, err
	}
	head, _, _ := bytes.Cut(b.Bytes(), []byte("\r\n\r\n"))
	return append(head, "\r\n\r\n"...), nil
}

// FuzzRequestHead checks the client's request head against net/http's
// client, byte for byte: whatever the client writes, net/http writes the
// same (it is the reference for what an upstream has always received),
// and what net/http refuses to send the client refuses too, and only
// that.
func FuzzRequestHead(f *testing.F) {
	f.Add("GET", "app.test", "/a/b", "q=1", "Accept", "*/*", "X-Forwarded-For", "192.0.2.1", int64(0), true)
	f.Add("POST", "app.test:8080", "/", "", "User-Agent", " curl/8 ", "Content-Type", "text/plain", int64(5), false)
	f.Add("PUT", "[::1]:80", "//x", "", "X-Empty", "", "X-Tab", "\ta\t", int64(0), false)
	f.Add("DELETE", "app.test", "", "", "X-A", "1", "x-lower", "v", int64(70000), true)
	f.Add("", "[fe80::1%25eth0]:80", "/", "", "X A", "1", "X-B", "a\nb", int64(0), true)
	f.Add("CONNECT", "bücher.test", "", "", "Host", "other", "X-C", "\x7f", int64(0), true)
	f.Add("G T", "a b", "/\x01", "", "Content-Length", "9", "Transfer-Encoding", "chunked", int64(1), true)
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
		our := &Request{Method: method, URL: u, Host: host, Header: h, ContentLength: length}
		if length > 0 {
			req.Body = io.NopCloser(bytes.NewReader(make([]byte, length)))
			our.Body = req.Body
		}
		var c conn
		head, err := c.appendHead(nil, our)
		want, refErr := netHTTPWrite(req)
		switch {
		case err != nil && refErr == nil:
			t.Fatalf("refused (%v) what net/http sends: %q", err, want)
		case err == nil && refErr != nil:
			t.Fatalf("wrote what net/http refuses (%v): %q", refErr, head)
		case err == nil && string(head) != string(want):
			t.Fatalf("head differs\n got %q\nwant %q", head, want)
		}
		var re *RequestError
		if err != nil && !errors.As(err, &re) {
			t.Fatalf("a refusal that is not a *RequestError: %v", err)
		}
	})
}
