package balance

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// backends starts n loopback servers b1, b2, ... that answer with their
// name.
func backends(t *testing.T, n int) []upstream.DestinationConfig {
	t.Helper()
	var ds []upstream.DestinationConfig
	for i := range n {
		name := "b" + strconv.Itoa(i+1)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Instance", name)
			io.WriteString(w, name)
		}))
		t.Cleanup(srv.Close)
		ds = append(ds, dest(name, srv.Listener.Addr().String(), ""))
	}
	return ds
}

// latency answers every request after the delay of its host, on the clock
// of the synctest bubble it runs in.
type latency map[string]time.Duration

func (l latency) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(l[r.URL.Host])
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: r}, nil
}

// drive sends total requests over conns parallel clients through rt, each
// picking with p and counting the request in flight while it runs, as the
// forwarder does, and returns how many each destination got.
func drive(t *testing.T, c *upstream.Cluster, p Policy, rt http.RoundTripper, total, conns int) map[string]int {
	t.Helper()
	client := &http.Client{Transport: rt}
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
				counts[d.ID()]++
				mu.Unlock()
			}
		})
	}
	wg.Wait() // in a bubble: a deadlock fails the test at once
	return counts
}

// TestSlowDestinationShare repeats the seed's measurement: three upstreams,
// the second answering after 50 ms and the others after 1 ms, 600 requests
// over 20 connections. The latencies are on the synctest bubble's clock,
// so the load of the machine running the test cannot change them.
func TestSlowDestinationShare(t *testing.T) {
	rt := latency{"h:1": time.Millisecond, "h:2": 50 * time.Millisecond, "h:3": time.Millisecond}
	for _, tc := range []struct {
		name     string
		policy   Policy
		min, max int
	}{
		{"RoundRobin", new(RoundRobin), 200, 200},
		{"PowerOfTwoChoices", PowerOfTwoChoices{}, 0, 59},
		{"LeastRequests", LeastRequests{}, 0, 59},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := cluster(t, dest("b1", "h:1", ""), dest("b2", "h:2", ""), dest("b3", "h:3", ""))
				start := time.Now()
				counts := drive(t, c, tc.policy, rt, 600, 20)
				t.Logf("%s: %v in %v", tc.name, counts, time.Since(start))
				require.Equal(t, 600, counts["b1"]+counts["b2"]+counts["b3"])
				assert.GreaterOrEqual(t, counts["b2"], tc.min)
				assert.LessOrEqual(t, counts["b2"], tc.max, "the slow destination's share")
			})
		})
	}
}
