package proxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// patienceInternal bounds every wait of the package's internal tests.
const patienceInternal = 10 * time.Second

// sink is an upstream on a bare listener that counts the requests whose
// bytes reached it: any byte of an HTTP/1.1 connection, a HEADERS frame
// of an HTTP/2 one. HTTP/1.1 is answered 200 and closed; HTTP/2 with a
// 200 on the stream.
type sink struct {
	addr string
	got  atomic.Int32
}

func startSink(t *testing.T, h2 bool) *sink {
	t.Helper()
	s := &sink{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	s.addr = ln.Addr().String()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetDeadline(time.Now().Add(patienceInternal))
				if !h2 {
					if n, _ := c.Read(make([]byte, 1)); n > 0 {
						s.got.Add(1)
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
					}
					return
				}
				preface := make([]byte, len(http2.ClientPreface))
				if _, err := io.ReadFull(c, preface); err != nil {
					return
				}
				fr := http2.NewFramer(c, c)
				fr.WriteSettings()
				for {
					f, err := fr.ReadFrame()
					if err != nil {
						return
					}
					switch f := f.(type) {
					case *http2.SettingsFrame:
						if !f.IsAck() {
							fr.WriteSettingsAck()
						}
					case *http2.HeadersFrame:
						s.got.Add(1)
						var b bytes.Buffer
						hpack.NewEncoder(&b).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
						fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: b.Bytes(), EndStream: true, EndHeaders: true})
					}
				}
			}()
		}
	}()
	return s
}

// TestUnsendableMirrorsTheClients: unsendable reports a request exactly
// when net/http's HTTP/1.1 client, or its HTTP/2 one (h2c), refuses it
// before any of it reaches the upstream, on the refusals and on their
// sendable neighbours.
func TestUnsendableMirrorsTheClients(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		host    string
		header  http.Header
		trailer http.Header
		path    string
		h1, h2  bool // refused by the HTTP/1.1 and by the HTTP/2 client
	}{
		{name: "plain GET"},
		{name: "extension method", method: "M-SEARCH"},
		{name: "method with a space", method: "GET /x", h1: true, h2: true},
		{name: "method with a parenthesis", method: "GE(T", h1: true, h2: true},
		{name: "method with a tab", method: "GET\t", h1: true, h2: true},
		{name: "field name with a space", header: http.Header{"X Y": {"1"}}, h1: true, h2: true},
		{name: "field name with an underscore", header: http.Header{"X_y": {"1"}}},
		{name: "field value with a tab and obs-text", header: http.Header{"X-A": {"a\tb\xff"}}},
		{name: "field value with a control character", header: http.Header{"X-A": {"a\x01b"}}, h1: true, h2: true},
		{name: "field value with DEL", header: http.Header{"X-A": {"a\x7f"}}, h1: true, h2: true},
		{name: "trailer name that is no token", method: "POST", trailer: http.Header{"X(y)": nil}, h1: true, h2: true},
		{name: "declared trailer", method: "POST", trailer: http.Header{"X-Sum": nil}},
		{name: "host with a space", host: "a b.test", h2: true}, // HTTP/1.1 sends an empty Host
		{name: "host that is no IDNA name", host: "xn--\xc3\xbc.test", h1: true, h2: true},
		{name: "host in UTF-8", host: "\xc3\xbc.test"}, // sent in punycode
		{name: "host with a zone", host: "[fe80::1%25eth0]:80"},
		{name: "host with a port", host: "app.test:8080"},
		{name: "control character in the path", path: "/a\x01", h1: true},
		{name: "space in the path", path: "/a b"},
		{name: "websocket upgrade", header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, h2: true},
		{name: "other upgrade", header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {"foo/1"}}, h2: true},
		{name: "Connection: close", header: http.Header{"Connection": {"close"}}},
		{name: "TE: trailers", header: http.Header{"Te": {"trailers"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, h2 := range []bool{false, true} {
				up := startSink(t, h2)
				req := &http.Request{Method: tc.method, Host: tc.host, Header: http.Header{}, Trailer: tc.trailer,
					URL: &url.URL{Scheme: "http", Host: up.addr, Opaque: "/"}}
				if tc.path != "" {
					req.URL.Opaque = tc.path
				}
				for k, vv := range tc.header {
					req.Header[k] = vv
				}
				if tc.trailer != nil {
					req.Body, req.ContentLength = io.NopCloser(strings.NewReader("abc")), -1
				}
				want := tc.h1
				if h2 {
					want = tc.h2
				}
				assert.Equal(t, want, unsendable(req, !h2, h2), "unsendable, h2 %v", h2)

				var p http.Protocols
				if h2 {
					p.SetUnencryptedHTTP2(true)
				} else {
					p.SetHTTP1(true)
				}
				tr := &http.Transport{Protocols: &p, DisableKeepAlives: true}
				ctx, cancel := context.WithTimeout(context.Background(), patienceInternal)
				res, err := tr.RoundTrip(req.WithContext(ctx))
				if err == nil {
					res.Body.Close()
				}
				cancel()
				tr.CloseIdleConnections()
				refused := err != nil && up.got.Load() == 0
				assert.Equal(t, want, refused, "the client refused it, h2 %v: %v", h2, err)
			}
		})
	}
}
