package gate

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/telemetry"
)

// TestHandlerTarget: over a loopback socket, a route to gate.Handler
// serves the request the gate decided on: only after the host's policies
// let it through, the URL as the client sent it, the body cut at the
// route's limit, the gate's headers set before it writes, and its answer
// recorded as the gate's.
func TestHandlerTarget(t *testing.T) {
	var calls atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		w.Header().Set("X-Seen-Path", r.URL.Path)
		w.Header().Set("X-Seen-Server", w.Header().Get("Server"))
		w.Header().Set("X-Body", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "handled\n")
	})
	deny, err := NewRuleSet(RuleSetConfig{ID: "no-admin", Rules: []Rule{{PathPrefix: "/api/admin", Action: RuleDeny}}})
	require.NoError(t, err)
	records := make(chan telemetry.Record, 8)
	g, err := New(Config{
		Server:   "edge",
		Observer: recordChan(records),
		Hosts: []Host{{
			Names:    []string{"app.test"},
			Policies: []PolicyUse{{Policy: deny}},
			Routes:   []Route{{ID: "api", Prefix: "/api", Target: Handler(mux), MaxBodyBytes: 8}},
		}},
	})
	require.NoError(t, err)
	addr := serve(t, g)

	resp := do(t, addr, call{method: "POST", host: "app.test", target: "/api/users", body: strings.NewReader("1234"), length: 4})
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Equal(t, "handled\n", body(t, resp))
	assert.Equal(t, "/api/users", resp.Header.Get("X-Seen-Path"), "the client's URL: no rewrite")
	assert.Equal(t, "edge", resp.Header.Get("X-Seen-Server"), "the gate's headers are set before the handler runs")
	assert.Equal(t, "4", resp.Header.Get("X-Body"))
	select {
	case rec := <-records:
		assert.Equal(t, http.StatusAccepted, rec.Status, "the handler's status is the record's")
		assert.Equal(t, "api", rec.RouteID)
		assert.EqualValues(t, len("handled\n"), rec.BytesOut)
	case <-time.After(patience):
		t.Fatal("no record")
	}

	resp = do(t, addr, call{host: "app.test", target: "/api/admin/x"})
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "the host's rule set answers first")
	resp = do(t, addr, call{method: "POST", host: "app.test", target: "/api/upload", body: strings.NewReader(strings.Repeat("x", 9)), length: 9})
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "a declared body over the route's limit")
	resp = do(t, addr, call{method: "POST", host: "app.test", target: "/api/upload", body: io.MultiReader(strings.NewReader(strings.Repeat("x", 9))), length: -1})
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "a chunked body is cut at the route's limit")
	assert.Contains(t, body(t, resp), "body:", "the handler read the cut")
	assert.EqualValues(t, 2, calls.Load(), "the handler ran for the allowed requests only")
}

// TestHandlerTargetNil: a route to gate.Handler(nil) is refused by New.
func TestHandlerTargetNil(t *testing.T) {
	_, err := New(Config{Hosts: []Host{{Names: []string{"a.test"}, Routes: []Route{{Target: Handler(nil)}}}}})
	assert.Equal(t, []string{
		CodeRouteTargetMissing + " hosts[0].routes[0].target",
		CodeRouteTargetMissing + " hosts[0].routes[0].target.handler",
	}, codePaths(err))
}

// recordChan sends every finished request's record to its channel.
type recordChan chan telemetry.Record

func (c recordChan) ObserveRequest(rec *telemetry.Record) { c <- *rec }
