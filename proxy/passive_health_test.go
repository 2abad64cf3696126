package proxy_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/upstream"
)

// TestMonitorIsTheClusterObserver: a hand-built cluster whose Observer is a
// health.Monitor, with no glue in between, takes a destination that hangs
// up on every request out of rotation after the passive minimum of
// failures, and the next request goes to the live one.
func TestMonitorIsTheClusterObserver(t *testing.T) {
	live := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "live") }))
	m := health.New(health.Options{})
	t.Cleanup(func() { m.Close() })
	changes := make(chan health.Change, 8)
	t.Cleanup(m.Subscribe(func(c health.Change) { changes <- c }))
	// FirstAlphabetical picks the dead "a" for as long as it is available.
	addr, cl := setup{observer: m}.start(t, hangUpAddr(t), live)
	require.NoError(t, m.Update(health.ClusterHealth{Cluster: cl.Upstream, Config: health.Config{
		Passive: health.PassiveConfig{Enabled: true},
	}}))
	require.NoError(t, m.Start(context.Background()))

	for i := range health.DefaultMinRequests {
		res, _ := do(t, addr, mustReq("GET", "/"))
		require.Equal(t, http.StatusBadGateway, res.StatusCode, "request %d went to the dead destination", i)
	}
	ev := recv(t, changes)
	assert.Equal(t, "a", ev.DestinationID)
	assert.Equal(t, health.CheckPassive, ev.Check)
	assert.Equal(t, upstream.Unhealthy, ev.New)
	assert.Contains(t, ev.Reason, "10 of 10 requests failed")
	assert.Equal(t, []string{"b"}, available(cl.Upstream))

	res, body := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "live", body)
}

// hangUpAddr returns the address of a listener that reads each request's
// head and closes the connection without an answer: the request left, so
// it is never retried as one that did not.
func hangUpAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				c.SetReadDeadline(time.Now().Add(patience))
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func available(c *upstream.Cluster) []string {
	var ids []string
	for _, d := range c.Members().Available {
		ids = append(ids, d.ID())
	}
	return ids
}
