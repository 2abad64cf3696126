package snapshot

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var churnFor = flag.Duration("churn", 3*time.Second, "how long the churn-under-load test publishes")

// TestChurnUnderLoad: 64 keep-alive clients send requests through a real
// listener while a new document is published every 100 ms, each changing
// about 5 % of routes and 5 % of clusters (destinations added and removed).
// Not one request may fail or get a non-2xx answer.
func TestChurnUnderLoad(t *testing.T) {
	const hosts, clients = 200, 64
	backends := []*backend{startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c"), startBackend(t, "d")}
	store, pub := newPublisher(t)
	doc := fleet(hosts, backends...)
	_, err := pub.Apply(testContext(t), doc)
	require.NoError(t, err)
	addr := serve(t, store)

	stop := make(chan struct{})
	halt := sync.OnceFunc(func() { close(stop) })
	defer halt() // also when a publish fails the test
	var requests, failures atomic.Int64
	var firstFailure atomic.Value
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	for c := range clients {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(c), 1))
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", "http://"+addr+"/p", nil)
				req.Host = fmt.Sprintf("h%d.test", rnd.IntN(hosts))
				res, err := client.Do(req)
				requests.Add(1)
				if err != nil {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, err.Error())
					continue
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode/100 != 2 {
					failures.Add(1)
					firstFailure.CompareAndSwap(nil, fmt.Sprintf("%s: status %d", req.Host, res.StatusCode))
				}
			}
		})
	}

	rnd := rand.New(rand.NewPCG(7, 7))
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(*churnFor)
	publishes, added := 0, 0
	for time.Now().Before(deadline) {
		<-tick.C
		doc = clone(doc)
		for range hosts * 5 / 100 {
			// Re-point a route at another upstream.
			h := rnd.IntN(hosts)
			doc.Hosts[h].Routes[0].Upstream = fmt.Sprintf("u%d", rnd.IntN(hosts))
		}
		for range hosts * 5 / 100 {
			// Add or remove a destination, never emptying a cluster.
			u := &doc.Upstreams[rnd.IntN(hosts)]
			if len(u.Destinations) > 1 && rnd.IntN(2) == 0 {
				u.Destinations = u.Destinations[1:]
			} else {
				b := backends[rnd.IntN(len(backends))]
				added++
				u.Destinations = append(u.Destinations, config.Destination{ID: fmt.Sprintf("n%d", added), Address: "http://" + b.addr})
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		o, err := pub.Apply(ctx, doc)
		cancel()
		require.NoError(t, err)
		require.Equal(t, Applied, o.Status)
		publishes++
	}
	halt()
	within(t, time.Minute, wg.Wait)
	t.Logf("%d publishes, %d requests, %d failures", publishes, requests.Load(), failures.Load())
	assert.Zero(t, failures.Load(), "first failure: %v", firstFailure.Load())
	assert.Greater(t, requests.Load(), int64(clients), "the load ran")
	assert.Greater(t, publishes, 1)
}
