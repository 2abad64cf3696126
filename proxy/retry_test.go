package proxy_test

import (
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/proxy"
)

// holdingUpstream answers each request once release is closed, counting
// arrivals; kill closes its listener and every connection it holds, as a
// crashed process would.
type holdingUpstream struct {
	addr    string
	arrived atomic.Int32
	srv     *http.Server
}

func startHolding(t *testing.T, release <-chan struct{}, arrivals chan<- struct{}) *holdingUpstream {
	t.Helper()
	u := &holdingUpstream{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	u.addr = ln.Addr().String()
	u.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.arrived.Add(1)
		arrivals <- struct{}{}
		select {
		case <-release:
			w.Write([]byte(u.addr))
		case <-r.Context().Done():
		}
	}), ReadHeaderTimeout: patience}
	go u.srv.Serve(ln)
	t.Cleanup(func() { u.srv.Close() })
	return u
}

// TestOneDeadDestinationCostsNoClientError: with a retry on and the
// default budget, killing one of three destinations while it holds a
// third of a burst of idempotent requests costs no client a 502: those
// retries are not what the budget guards against.
func TestOneDeadDestinationCostsNoClientError(t *testing.T) {
	const burst = 17
	release := make(chan struct{})
	arrivals := make(chan struct{}, 4*burst)
	ups := []*holdingUpstream{startHolding(t, release, arrivals), startHolding(t, release, arrivals), startHolding(t, release, arrivals)}
	stats := new(proxy.Stats)
	addr, _ := setup{stats: stats, policy: &balance.RoundRobin{}, route: proxy.RouteConfig{Retry: proxy.Retry{Attempts: 1}}}.start(t, ups[0].addr, ups[1].addr, ups[2].addr)

	statuses := make(chan int, burst)
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() {
			req := mustReq("GET", "http://"+addr+"/")
			req.Host = "app.test"
			res, err := roundTrip(t, clientTransport(t), req)
			if err != nil {
				statuses <- 0
				return
			}
			res.Body.Close()
			statuses <- res.StatusCode
		})
	}
	for range burst {
		recv(t, (<-chan struct{})(arrivals))
	}
	dead := ups[1]
	require.Positive(t, dead.arrived.Load(), "round robin gave the victim its share")
	dead.srv.Close()
	// Its requests arrive again on the others.
	for range dead.arrived.Load() {
		recv(t, (<-chan struct{})(arrivals))
	}
	close(release)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	recv(t, (<-chan struct{})(done))
	close(statuses)
	for s := range statuses {
		assert.Equal(t, 200, s)
	}
	assert.Equal(t, uint64(dead.arrived.Load()), stats.Retries(), "each of the victim's requests was retried once")
}

// TestRetryBudgetBoundsAnOverloadedCluster: when every destination times
// out, retries stay within the budget's share of the live requests.
func TestRetryBudgetBoundsAnOverloadedCluster(t *testing.T) {
	const burst = 20
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	arrivals := make(chan struct{}, 8*burst)
	ups := []*holdingUpstream{startHolding(t, release, arrivals), startHolding(t, release, arrivals), startHolding(t, release, arrivals)}
	stats := new(proxy.Stats)
	addr, _ := setup{stats: stats, policy: &balance.RoundRobin{}, client: proxy.ClientConfig{ResponseHeaderTimeout: time.Second},
		route: proxy.RouteConfig{Retry: proxy.Retry{Attempts: 2}}}.start(t, ups[0].addr, ups[1].addr, ups[2].addr)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range burst {
		wg.Go(func() {
			req := mustReq("GET", "http://"+addr+"/")
			req.Host = "app.test"
			res, err := roundTrip(t, clientTransport(t), req)
			if err == nil {
				res.Body.Close()
				if res.StatusCode == http.StatusGatewayTimeout {
					failed.Add(1)
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	recv(t, (<-chan struct{})(done))
	assert.Equal(t, int32(burst), failed.Load(), "every request timed out")
	// 20 live requests: at most max(3, 0.2*20) = 4 retry at once, then the
	// survivors' second retries within max(3, 0.2*4).
	assert.LessOrEqual(t, stats.Retries(), uint64(4+3))
	assert.Positive(t, stats.Retries())
}
