package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
)

// drainBackend answers /healthz (counted as probes), /sse as an event
// stream with one event per value on events until it closes, /ws as an
// echo tunnel after a 101, and anything else with its name (counted).
type drainBackend struct {
	addr             string
	probes, requests atomic.Int64
}

func startDrainBackend(t *testing.T, name string, events <-chan string) *drainBackend {
	t.Helper()
	b := &drainBackend{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	b.addr = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			b.probes.Add(1)
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			for ev := range events {
				fmt.Fprintf(w, "data: %s\n\n", ev)
				w.(http.Flusher).Flush()
			}
		case "/ws":
			conn, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(10 * time.Second))
			brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			brw.Flush()
			for {
				line, err := brw.ReadString('\n')
				if err != nil {
					return
				}
				brw.WriteString("echo " + line)
				brw.Flush()
			}
		default:
			b.requests.Add(1)
			io.WriteString(w, name)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return b
}

func drainDoc(a, b *drainBackend, drainA bool, extra string) string {
	drain := ""
	if drainA {
		drain = ", drain: true"
	}
	return fmt.Sprintf(`hosts:
  - names: [app.test]
    routes: [{path: /, upstream: app}%s]
upstreams:
  - id: app
    loadBalancing: FirstAlphabetical
    destinations:
      - {id: a, address: "http://%s"%s}
      - {id: b, address: "http://%s"}
    health: {active: {enabled: true, interval: 20ms, timeout: 5s, path: /healthz}}
`, extra, a.addr, drain, b.addr)
}

// destinationHealth returns one destination of GET /health; hdr as
// adminDo's.
func (d *daemon) destinationHealth(t *testing.T, upstream, id string, hdr ...string) admin.Destination {
	t.Helper()
	status, _, body := d.adminDo(t, "GET", "/health", "", hdr...)
	require.Equal(t, 200, status, body)
	var h admin.Health
	require.NoError(t, json.Unmarshal([]byte(body), &h), body)
	for _, c := range h.Clusters {
		for _, dst := range c.Destinations {
			if c.ID == upstream && dst.ID == id {
				return dst
			}
		}
	}
	t.Fatalf("GET /health has no destination %s/%s: %s", upstream, id, body)
	return admin.Destination{}
}

// drainCall POSTs drain or undrain and decodes the destination answered.
func (d *daemon) drainCall(t *testing.T, path string) admin.Destination {
	t.Helper()
	status, _, body := d.adminDo(t, "POST", path, "")
	require.Equal(t, 200, status, body)
	var dst admin.Destination
	require.NoError(t, json.Unmarshal([]byte(body), &dst), body)
	return dst
}

// TestDaemonDrain: a destination drained through the admin API while it
// carries an event stream and a WebSocket tunnel gets no new request
// (the other serves every one) and no probe, while the stream and the
// tunnel go on; GET /health says draining, by the admin, with the two in
// flight, and, once they end, none; the drain survives a publish that
// keeps the destination; undrain puts it back in rotation. A document's
// drain wins over an undrain, and the API answers 404 and 405 with
// their codes.
func TestDaemonDrain(t *testing.T) {
	events := make(chan string)
	a, b := startDrainBackend(t, "A", events), startDrainBackend(t, "B", nil)
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	require.NoError(t, os.WriteFile(path, []byte(drainDoc(a, b, false, "")), 0o600))
	d := startDaemon(t, "-config", path, "-watch", "0")
	waitFor(t, "probes of a", func() bool { return a.probes.Load() > 0 })
	status, body := d.get(t, "app.test", "/x")
	require.Equal(t, 200, status)
	require.Equal(t, "A", body)

	// An event stream and a tunnel on a.
	go func() { events <- "start" }()
	req, err := http.NewRequest("GET", "http://"+d.addr+"/sse", nil)
	require.NoError(t, err)
	req.Host = "app.test"
	res, err := (&http.Client{Transport: d.tr, Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	sse := bufio.NewReader(res.Body)
	readEvent := func() string {
		line, err := sse.ReadString('\n')
		require.NoError(t, err)
		_, err = sse.ReadString('\n')
		require.NoError(t, err)
		return line
	}
	require.Equal(t, "data: start\n", readEvent())
	ws, err := net.DialTimeout("tcp", d.addr, 10*time.Second)
	require.NoError(t, err)
	defer ws.Close()
	ws.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(ws, "GET /ws HTTP/1.1\r\nHost: app.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	wsr := bufio.NewReader(ws)
	up, err := http.ReadResponse(wsr, nil)
	require.NoError(t, err)
	require.Equal(t, 101, up.StatusCode)
	echo := func(s string) string {
		_, err := io.WriteString(ws, s+"\n")
		require.NoError(t, err)
		line, err := wsr.ReadString('\n')
		require.NoError(t, err)
		return line
	}
	require.Equal(t, "echo hello\n", echo("hello"))

	dst := d.drainCall(t, "/upstreams/app/destinations/a/drain")
	assert.True(t, dst.Draining)
	assert.Equal(t, "admin", dst.DrainedBy)
	assert.False(t, dst.Available)
	assert.EqualValues(t, 2, dst.InFlight, "the stream and the tunnel")
	served := a.requests.Load()
	for range 10 {
		status, body := d.get(t, "app.test", "/x")
		require.Equal(t, 200, status)
		assert.Equal(t, "B", body, "no new request reaches a")
	}
	assert.Equal(t, served, a.requests.Load())

	// Probes stop for a while b's go on: a probe of a already sent when
	// the drain came may still land, none after.
	probesA, probesB := a.probes.Load(), b.probes.Load()
	waitFor(t, "three more probe rounds of b", func() bool { return b.probes.Load() >= probesB+3 })
	assert.LessOrEqual(t, a.probes.Load(), probesA+1, "a draining destination is not probed")

	// A publish that keeps a keeps its drain.
	code, pr := d.push(t, drainDoc(a, b, false, ", {path: /other, upstream: app}"))
	require.Equal(t, 200, code, "%+v", pr)
	dst = d.destinationHealth(t, "app", "a")
	assert.True(t, dst.Draining, "an admin drain survives a publish that keeps the destination")

	// What was in flight finishes.
	for i := range 3 {
		events <- fmt.Sprint("e", i)
		assert.Equal(t, fmt.Sprintf("data: e%d\n", i), readEvent())
		assert.Equal(t, "echo still\n", echo("still"))
	}
	close(events)
	rest, err := io.ReadAll(sse)
	require.NoError(t, err, "the stream ends cleanly")
	assert.Empty(t, strings.TrimSpace(string(rest)))
	ws.Close()
	waitFor(t, "no request in flight on a", func() bool { return d.destinationHealth(t, "app", "a").InFlight == 0 })

	dst = d.drainCall(t, "/upstreams/app/destinations/a/undrain")
	assert.False(t, dst.Draining)
	assert.True(t, dst.Available)
	status, body = d.get(t, "app.test", "/x")
	require.Equal(t, 200, status)
	assert.Equal(t, "A", body, "undrained, a serves again")
	waitFor(t, "probes of a again", func() bool { return a.probes.Load() > probesA+1 })

	// The document's drain wins.
	code, pr = d.push(t, drainDoc(a, b, true, ""))
	require.Equal(t, 200, code, "%+v", pr)
	dst = d.destinationHealth(t, "app", "a")
	assert.True(t, dst.Draining)
	assert.Equal(t, "document", dst.DrainedBy)
	dst = d.drainCall(t, "/upstreams/app/destinations/a/undrain")
	assert.True(t, dst.Draining, "the document's drain wins over an undrain")
	_, body = d.get(t, "app.test", "/x")
	assert.Equal(t, "B", body)

	status, _, body = d.adminDo(t, "POST", "/upstreams/app/destinations/zz/drain", "")
	assert.Equal(t, 404, status)
	assert.Contains(t, body, admin.CodeDestinationUnknown)
	status, _, body = d.adminDo(t, "POST", "/upstreams/nope/destinations/a/drain", "")
	assert.Equal(t, 404, status)
	assert.Contains(t, body, admin.CodeDestinationUnknown)
	status, hdr, body := d.adminDo(t, "GET", "/upstreams/app/destinations/a/drain", "")
	assert.Equal(t, 405, status)
	assert.Equal(t, "POST", hdr.Get("Allow"))
	assert.Contains(t, body, admin.CodeMethodNotAllowed)
	status, _, _ = d.adminDo(t, "POST", "/upstreams/app/destinations/a/explode", "")
	assert.Equal(t, 404, status)
}
