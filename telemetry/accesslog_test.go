package telemetry

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockedBuffer is a log sink read after the writer stopped.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func sampleRecord() Record {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return Record{
		Start: start, Duration: 1500 * time.Microsecond,
		Client: netip.MustParseAddr("203.0.113.7"), Peer: netip.MustParseAddrPort("10.0.0.1:4242"),
		Method: "PUT", Host: "app.test", Path: "/upload", Proto: "HTTP/2.0",
		TLSVersion: tls.VersionTLS13, SNI: "app.test",
		Status: 502, BytesIn: 10, BytesOut: 0,
		HostID: "app.test", RouteID: "api", Upstream: "web", Destination: "w1",
		Error: "connect", RequestID: "abc", Retries: 1, TTFB: time.Millisecond,
	}
}

func TestAccessLogJSON(t *testing.T) {
	var out lockedBuffer
	a := NewAccessLog(AccessLogConfig{Logger: slog.New(slog.NewJSONHandler(&out, nil))})
	rec := sampleRecord()
	a.ObserveRequest(&rec)
	plain := Record{Start: rec.Start, Peer: rec.Peer, Method: "GET", Host: "x", Path: "/", Proto: "HTTP/1.1", Status: 404}
	a.ObserveRequest(&plain)
	require.NoError(t, a.Close())

	lines := out.lines(t)
	require.Len(t, lines, 2)
	assert.Equal(t, map[string]any{
		"time": "2026-12-01T10:00:00.0015Z", "level": "INFO", "msg": "request",
		"client": "203.0.113.7", "method": "PUT", "host": "app.test", "path": "/upload", "proto": "HTTP/2.0",
		"tls": "TLS 1.3", "sni": "app.test", "status": 502.0, "bytesIn": 10.0, "bytesOut": 0.0,
		"duration": 0.0015, "route": "api", "upstream": "web", "destination": "w1",
		"error": "connect", "requestId": "abc", "retries": 1.0, "ttfb": 0.001,
	}, lines[0])
	assert.Equal(t, map[string]any{
		"time": "2026-12-01T10:00:00Z", "level": "INFO", "msg": "request",
		"client": "10.0.0.1", "method": "GET", "host": "x", "path": "/", "proto": "HTTP/1.1",
		"status": 404.0, "bytesIn": 0.0, "bytesOut": 0.0, "duration": 0.0,
	}, lines[1], "no TLS, no route: those fields are left out; the peer stands in for an unresolved client")
	assert.Equal(t, AccessLogStats{Written: 2}, a.Stats())
}

// blockingHandler holds the writer in Handle until released.
type blockingHandler struct {
	slog.Handler
	entered chan struct{}
	release chan struct{}
}

func newBlockingHandler(w io.Writer) *blockingHandler {
	return &blockingHandler{Handler: slog.NewJSONHandler(w, nil), entered: make(chan struct{}, 1), release: make(chan struct{})}
}

// awaitEntered waits until the writer is inside Handle.
func (h *blockingHandler) awaitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-h.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer never took the first record")
	}
}

func (h *blockingHandler) Handle(ctx context.Context, r slog.Record) error {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-h.release
	return h.Handler.Handle(ctx, r)
}

func TestAccessLogFullBufferDropsAndCounts(t *testing.T) {
	var out lockedBuffer
	h := newBlockingHandler(&out)
	const buffer = 16
	a := NewAccessLog(AccessLogConfig{Logger: slog.New(h), Buffer: buffer})
	rec := sampleRecord()
	a.ObserveRequest(&rec)
	h.awaitEntered(t) // the writer holds the first record

	done := make(chan struct{})
	go func() {
		defer close(done)
		for range buffer + 5 {
			a.ObserveRequest(&rec)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ObserveRequest blocked on a full buffer")
	}
	assert.Equal(t, uint64(5), a.Stats().Dropped)

	close(h.release)
	require.NoError(t, a.Close())
	assert.Equal(t, AccessLogStats{Written: 1 + buffer, Dropped: 5}, a.Stats())
	assert.Len(t, out.lines(t), 1+buffer)
}

func TestAccessLogSamples2xx(t *testing.T) {
	var out lockedBuffer
	a := NewAccessLog(AccessLogConfig{Logger: slog.New(slog.NewJSONHandler(&out, nil)), Sample2xx: 3})
	for i := range 11 {
		rec := Record{Status: 200, Path: "/ok"}
		if i%5 == 4 {
			rec = Record{Status: 503, Path: "/fail"}
		}
		a.ObserveRequest(&rec)
	}
	require.NoError(t, a.Close())
	var paths []string
	for _, l := range out.lines(t) {
		paths = append(paths, l["path"].(string))
	}
	assert.Equal(t, []string{"/ok", "/ok", "/fail", "/ok", "/fail"}, paths, "the 1st, 4th and 7th 2xx, and every 503")
	assert.Equal(t, AccessLogStats{Written: 5, SampledOut: 6}, a.Stats())
}

func TestAccessLogObserveAllocatesNothing(t *testing.T) {
	h := newBlockingHandler(io.Discard)
	a := NewAccessLog(AccessLogConfig{Logger: slog.New(h), Buffer: 2000})
	t.Cleanup(func() { close(h.release); a.Close() })
	rec := sampleRecord()
	a.ObserveRequest(&rec)
	h.awaitEntered(t) // the writer is parked: only the request side allocates, if anything
	assert.Zero(t, testing.AllocsPerRun(1000, func() { a.ObserveRequest(&rec) }))
}

func TestAccessLogCloseTwice(t *testing.T) {
	a := NewAccessLog(AccessLogConfig{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
}

func BenchmarkAccessLogObserve(b *testing.B) {
	a := NewAccessLog(AccessLogConfig{Logger: slog.New(slog.DiscardHandler), Buffer: 1 << 16})
	b.Cleanup(func() { a.Close() })
	rec := sampleRecord()
	b.ReportAllocs()
	for b.Loop() {
		a.ObserveRequest(&rec)
	}
}
