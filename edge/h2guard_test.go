package edge_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/listenlimits"
)

// h2Client is a raw HTTP/2 client over TLS: it writes frames as told and
// collects what the server sends.
type h2Client struct {
	conn   *tls.Conn
	fr     *http2.Framer
	hbuf   bytes.Buffer
	enc    *hpack.Encoder
	frames chan any // frames, copied; closed when the server's side ends
}

// headers is a HEADERS frame the server sent: its stream and block.
type headers struct {
	stream uint32
	block  []byte
}

func dialH2(t *testing.T, addr string, pool *x509.CertPool) *h2Client {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"h2"}})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.Equal(t, "h2", conn.ConnectionState().NegotiatedProtocol)
	_, err = conn.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	c := &h2Client{conn: conn, fr: http2.NewFramer(conn, conn), frames: make(chan any, 1024)}
	c.enc = hpack.NewEncoder(&c.hbuf)
	require.NoError(t, c.fr.WriteSettings())
	go func() {
		defer close(c.frames)
		for {
			f, err := c.fr.ReadFrame()
			if err != nil {
				return
			}
			switch f := f.(type) { // the framer reuses its frames
			case *http2.GoAwayFrame:
				c.frames <- http2.GoAwayFrame{LastStreamID: f.LastStreamID, ErrCode: f.ErrCode}
			case *http2.HeadersFrame:
				c.frames <- headers{f.StreamID, bytes.Clone(f.HeaderBlockFragment())}
			}
		}
	}()
	return c
}

// block encodes a GET's header block, with extra fields after the
// pseudo-headers.
func (c *h2Client) block(extra ...hpack.HeaderField) []byte {
	c.hbuf.Reset()
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "localhost"}, {Name: ":path", Value: "/"},
	}, extra...) {
		_ = c.enc.WriteField(f)
	}
	return bytes.Clone(c.hbuf.Bytes())
}

// goAway waits for the server's GOAWAY, skipping other frames; nil when
// the connection ended without one.
func (c *h2Client) goAway(t *testing.T) *http2.GoAwayFrame {
	t.Helper()
	deadline := time.After(patience)
	for {
		select {
		case f, ok := <-c.frames:
			if !ok {
				return nil
			}
			if g, ok := f.(http2.GoAwayFrame); ok {
				return &g
			}
		case <-deadline:
			t.Fatal("no GOAWAY and no close")
			return nil
		}
	}
}

// countingEdge starts an edge over TLS whose handler counts the requests
// it serves, and connects to it.
func countingEdge(t *testing.T) (*h2Client, *atomic.Int64) {
	t.Helper()
	tlsConf, pool := tlsFor(t)
	served := new(atomic.Int64)
	h := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served.Add(1) })
	srv := start(t, edge.Config{Handler: h, HTTPS: "127.0.0.1:0", TLS: tlsConf})
	return dialH2(t, srv.Addr("https").String(), pool), served
}

// Rapid reset (CVE-2023-44487): a client that opens streams and resets
// them at once never has more handlers running than the stream limit,
// and the connection is refused with ENHANCE_YOUR_CALM once too many wait.
func TestHTTP2RapidResetIsBounded(t *testing.T) {
	tlsConf, pool := tlsFor(t)
	var running, most, served atomic.Int64
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release // ignores the reset: a handler that keeps working
		running.Add(-1)
	})
	const limit = 10
	srv := start(t, edge.Config{Handler: h, HTTPS: "127.0.0.1:0", TLS: tlsConf, Limits: listenlimits.Limits{HTTP2MaxConcurrentStreams: limit}})
	t.Cleanup(func() { close(release) })
	c := dialH2(t, srv.Addr("https").String(), pool)

	for id := uint32(1); id < 2*20*limit; id += 2 {
		err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(), EndStream: true, EndHeaders: true})
		if err == nil {
			err = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if err != nil {
			break // the server closed the connection
		}
	}
	g := c.goAway(t)
	require.NotNil(t, g, "the connection closed without a GOAWAY")
	assert.Equal(t, http2.ErrCodeEnhanceYourCalm, g.ErrCode)
	assert.LessOrEqual(t, most.Load(), int64(limit), "handlers running at once")
	assert.LessOrEqual(t, served.Load(), int64(limit))
}

// CONTINUATION flood (CVE-2023-45288): header fragments past twice the
// header limit end the connection with PROTOCOL_ERROR, and no handler
// runs; the server does not read megabytes of them.
func TestHTTP2ContinuationFloodIsRefused(t *testing.T) {
	c, served := countingEdge(t)

	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.block(), EndHeaders: false}))
	c.hbuf.Reset()
	_ = c.enc.WriteField(hpack.HeaderField{Name: "x-flood", Value: strings.Repeat("a", 16000)})
	frag := bytes.Clone(c.hbuf.Bytes())
	sent := 0
	for range 1000 { // 16 MB if nothing stops it
		if err := c.fr.WriteContinuation(1, false, frag); err != nil {
			break
		}
		sent += len(frag)
	}
	g := c.goAway(t)
	require.NotNil(t, g, "the connection closed without a GOAWAY")
	assert.Equal(t, http2.ErrCodeProtocol, g.ErrCode)
	assert.Less(t, sent, 8<<20, "the server kept reading the flood")
	assert.Zero(t, served.Load())
}

// HPACK bomb: a header block of a few KiB that decodes, through the
// dynamic table, to far more than the header limit is answered 431 and
// reaches no handler.
func TestHTTP2HPACKBombIsRefused(t *testing.T) {
	c, served := countingEdge(t)

	big := hpack.HeaderField{Name: "x-bomb", Value: strings.Repeat("b", 4000)} // fits the 4 KiB table
	fields := make([]hpack.HeaderField, 200)                                   // 800 KB decoded
	for i := range fields {
		fields[i] = big
	}
	block := c.block(fields...)
	require.Less(t, len(block), 5000, "the fields after the first are one-byte table references")
	require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndStream: true, EndHeaders: true}))

	dec := hpack.NewDecoder(4096, nil)
	deadline := time.After(patience)
	for {
		select {
		case f, ok := <-c.frames:
			require.True(t, ok, "the connection ended without an answer")
			hf, ok := f.(headers)
			if !ok || hf.stream != 1 {
				continue
			}
			got, err := dec.DecodeFull(hf.block)
			require.NoError(t, err)
			require.NotEmpty(t, got)
			assert.Equal(t, ":status", got[0].Name)
			assert.Equal(t, "431", got[0].Value)
			assert.Zero(t, served.Load())
			return
		case <-deadline:
			t.Fatal("no answer")
		}
	}
}
