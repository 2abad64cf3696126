package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/balance"
)

// drainUpstream serves /sse as an event stream that sends an event for
// each value on events and ends when events closes, /ws as wsHandler's
// echo tunnel, and anything else with its name.
func drainUpstream(t *testing.T, name string, events <-chan string) string {
	t.Helper()
	ws := wsHandler(nil)
	return listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sse":
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			for ev := range events {
				fmt.Fprintf(w, "data: %s\n\n", ev)
				w.(http.Flusher).Flush()
			}
		case "/ws":
			ws.ServeHTTP(w, r)
		default:
			io.WriteString(w, name)
		}
	}))
}

// TestDrainFinishesStreamsAndSendsNothingNew: a destination drained
// while it carries an event stream and an upgraded tunnel sends no new
// request (every one goes to the other, an affinity client's too), while
// the stream and the tunnel go on to their end; its in-flight count
// goes to zero with them, and undrained it takes requests again.
func TestDrainFinishesStreamsAndSendsNothingNew(t *testing.T) {
	events := make(chan string)
	a, b := drainUpstream(t, "a", events), drainUpstream(t, "b", nil)
	addr, cl := setup{policy: balance.FirstAlphabetical{}}.start(t, a, b)
	da := cl.Upstream.Destination("a")

	req := mustReq("GET", "http://"+addr+"/sse")
	req.Host = "app.test"
	go func() { events <- "start" }() // the head goes with the first event
	res, err := roundTrip(t, clientTransport(t), req)
	require.NoError(t, err)
	defer res.Body.Close()
	sse := bufio.NewReader(res.Body)
	line, err := sse.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "data: start\n", line)
	_, err = sse.ReadString('\n')
	require.NoError(t, err)
	conn, ws := dialUpgrade(t, addr)
	assert.EqualValues(t, 2, da.InFlight(), "the stream and the tunnel")

	require.True(t, da.SetDrain(true))
	assert.True(t, da.Draining())
	for range 5 {
		_, body := do(t, addr, mustReq("GET", "/x"))
		assert.Equal(t, "b", body, "no new request reaches the drained destination")
	}
	for i := range 3 {
		events <- fmt.Sprint("e", i)
		line, err := sse.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprintf("data: e%d\n", i), line)
		_, err = sse.ReadString('\n')
		require.NoError(t, err)
		_, err = io.WriteString(conn, "still\n")
		require.NoError(t, err)
		line, err = ws.ReadString('\n')
		require.NoError(t, err)
		assert.Equal(t, "echo still\n", line, "the tunnel carries on")
	}
	assert.EqualValues(t, 2, da.InFlight())
	close(events)
	rest, err := io.ReadAll(sse)
	require.NoError(t, err, "the stream ends cleanly")
	assert.Empty(t, strings.TrimSpace(string(rest)))
	conn.Close()
	require.Eventually(t, func() bool { return da.InFlight() == 0 }, patience, time.Millisecond,
		"the drained destination's in-flight count reaches zero once the tunnel closed")

	require.True(t, da.SetDrain(false))
	_, body := do(t, addr, mustReq("GET", "/x"))
	assert.Equal(t, "a", body, "undrained, it takes requests again")
}
