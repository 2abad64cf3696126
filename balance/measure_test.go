package balance

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backends starts n loopback servers that answer with their name; the
// delays apply per server.
func backends(t *testing.T, delays ...time.Duration) []upstream.DestinationConfig {
	t.Helper()
	var ds []upstream.DestinationConfig
	for i, delay := range delays {
		name := "b" + itoa(i+1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if delay > 0 {
				select {
				case <-time.After(delay):
				case <-r.Context().Done():
				}
			}
			w.Header().Set("X-Instance", name)
			io.WriteString(w, name)
		}))
		t.Cleanup(srv.Close)
		ds = append(ds, dest(name, srv.Listener.Addr().String(), ""))
	}
	return ds
}

// drive sends total requests over conns parallel clients, each picking with
// p and counting the request in flight while it runs, as the forwarder does.
func drive(t *testing.T, c *upstream.Cluster, p Policy, total, conns int) map[string]int {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: conns}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	var mu sync.Mutex
	counts := map[string]int{}
	work := make(chan struct{}, total)
	for range total {
		work <- struct{}{}
	}
	close(work)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for range work {
				d := p.Pick(Input{}, c.Members().Available)
				d.Begin()
				resp, err := client.Get("http://" + d.Host() + "/")
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				d.End()
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				counts[resp.Header.Get("X-Instance")]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return counts
}

// TestSlowDestinationShare repeats the seed's measurement: three upstreams,
// the second answering after 50 ms, 600 requests over 20 connections. Under
// the race detector every fast request costs several times more CPU, so the
// delay grows by the same factor to keep the slow destination as slow
// relative to the others as in the measurement.
func TestSlowDestinationShare(t *testing.T) {
	c := cluster(t, backends(t, 0, raceSlowdown*50*time.Millisecond, 0)...)
	for _, tc := range []struct {
		name     string
		policy   Policy
		min, max int
	}{
		{"RoundRobin", new(RoundRobin), 190, 210},
		{"PowerOfTwoChoices", P2C{}, 0, 59},
		{"LeastRequests", LeastRequests{}, 0, 59},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counts := drive(t, c, tc.policy, 600, 20)
			t.Logf("%s: %v", tc.name, counts)
			require.Equal(t, 600, counts["b1"]+counts["b2"]+counts["b3"])
			assert.GreaterOrEqual(t, counts["b2"], tc.min)
			assert.LessOrEqual(t, counts["b2"], tc.max, "the slow destination's share")
		})
	}
}
