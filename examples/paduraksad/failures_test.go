package main

// A backend killed under load, refused connections and outlier ejection
// through the daemon: real backends on loopback that can be stopped and
// started again on the same address, a steady load of concurrent
// clients, and the admin API's GET /health and /metrics.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/health"
)

// killable is a backend that answers with its name (and /healthz with
// 200) on a fixed address, and can be killed and started again there.
type killable struct {
	t      *testing.T
	name   string
	addr   string
	status int // the status of every answer but /healthz; 0 is 200
	served atomic.Int64

	mu  sync.Mutex
	srv *http.Server
}

func startKillable(t *testing.T, name string, status int) *killable {
	t.Helper()
	k := &killable{t: t, name: name, status: status}
	k.start("127.0.0.1:0")
	t.Cleanup(k.kill)
	return k
}

func (k *killable) start(addr string) {
	k.t.Helper()
	ln, err := net.Listen("tcp", addr)
	require.NoError(k.t, err)
	k.addr = ln.Addr().String()
	srv := &http.Server{ReadHeaderTimeout: wireTimeout, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/healthz" {
			return
		}
		k.served.Add(1)
		if k.status != 0 {
			w.WriteHeader(k.status)
		}
		io.WriteString(w, k.name)
	})}
	go srv.Serve(ln)
	k.mu.Lock()
	k.srv = srv
	k.mu.Unlock()
}

// kill stops the backend as its process's exit would, for every new
// connection and every idle one: the listener and the idle connections
// close at once. The answers being written are let finish: a request cut
// mid-answer left, and only a route's retry block resends those.
func (k *killable) kill() {
	k.mu.Lock()
	srv := k.srv
	k.srv = nil
	k.mu.Unlock()
	if srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), wireTimeout)
	defer cancel()
	srv.Shutdown(ctx)
}

// restart starts the backend again on its address.
func (k *killable) restart() { k.start(k.addr) }

// steadyLoad is a steady load of concurrent clients, each on its own keep-alive
// connection, sending GET / to host until stopped; it counts the answers
// that are not 200 and the requests that failed.
type steadyLoad struct {
	stop   chan struct{}
	wg     sync.WaitGroup
	ok     atomic.Int64
	mu     sync.Mutex
	errors []string
}

func startSteadyLoad(t *testing.T, d *daemon, host string, clients int) *steadyLoad {
	l := &steadyLoad{stop: make(chan struct{})}
	for range clients {
		tr := &http.Transport{MaxIdleConnsPerHost: 1}
		t.Cleanup(tr.CloseIdleConnections)
		c := &http.Client{Transport: tr, Timeout: wireTimeout}
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				req, _ := http.NewRequest("GET", "http://"+d.addr+"/", nil)
				req.Host = host
				res, err := c.Do(req)
				if err != nil {
					l.fail(err.Error())
					continue
				}
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					l.fail(fmt.Sprintf("%d %s", res.StatusCode, b))
					continue
				}
				l.ok.Add(1)
			}
		})
	}
	t.Cleanup(l.end)
	return l
}

func (l *steadyLoad) fail(msg string) {
	l.mu.Lock()
	l.errors = append(l.errors, msg)
	l.mu.Unlock()
}

// end stops the clients and waits for them; it may be called twice.
func (l *steadyLoad) end() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

func (l *steadyLoad) failures() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errors...)
}

// threeBackends is app.test over three killable backends, with hc as the
// upstream's health block and nothing else: no retry block.
func threeBackends(t *testing.T, hc config.HealthCheck) (*daemon, []*killable) {
	ks := []*killable{startKillable(t, "k0", 0), startKillable(t, "k1", 0), startKillable(t, "k2", 0)}
	up := upstreamOf("app", ks[0].addr, ks[1].addr, ks[2].addr)
	up.Health = hc
	doc := config.Document{
		Hosts:     []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{Path: "/", Upstream: "app"}}}},
		Upstreams: []config.Upstream{up},
	}
	return startWithDoc(t, doc), ks
}

// healthOf reads the daemon's GET /health for one upstream.
func (d *daemon) healthOf(t *testing.T, id string) admin.Cluster {
	t.Helper()
	status, _, body := d.adminDo(t, "GET", "/health", "")
	require.Equal(t, 200, status, body)
	var h admin.Health
	require.NoError(t, json.Unmarshal([]byte(body), &h))
	for _, c := range h.Clusters {
		if c.ID == id {
			return c
		}
	}
	require.FailNow(t, "no upstream "+id+" in GET /health")
	return admin.Cluster{}
}

// TestKilledBackendCostsNoClientError: with the default document (no
// health block, no retry block), one of three backends killed under a
// steady load of concurrent clients costs no client an error: the
// requests that met its refusal went to the others, and it left rotation
// at once. Started again, it serves again once its short ejection ends
// and a request finds it answering.
func TestKilledBackendCostsNoClientError(t *testing.T) {
	d, ks := threeBackends(t, config.HealthCheck{})
	l := startSteadyLoad(t, d, "app.test", 8)
	waitFor(t, "every backend serving", func() bool {
		return ks[0].served.Load() > 20 && ks[1].served.Load() > 20 && ks[2].served.Load() > 20
	})
	ks[2].kill()
	killed := time.Now()
	before := ks[0].served.Load() + ks[1].served.Load()
	waitFor(t, "the survivors taking the load", func() bool { return ks[0].served.Load()+ks[1].served.Load() > before+500 })

	f := d.scrape(t)
	assert.GreaterOrEqual(t, metric(t, f, "paduraksa_destination_ejections_total", "upstream", "app", "destination", "d2", "reason", "connectFailure"), 1.0)
	assert.GreaterOrEqual(t, metric(t, f, "paduraksa_upstream_connect_retries_total", "upstream", "app"), 1.0)
	assert.Zero(t, metric(t, f, "paduraksa_destination_ejections_total", "upstream", "app", "destination", "d0", "reason", "connectFailure"))

	servedDown := ks[2].served.Load()
	ks[2].restart()
	restarted := time.Now()
	waitFor(t, "the restarted backend serving", func() bool { return ks[2].served.Load() > servedDown })
	back := time.Since(restarted)
	l.end()
	assert.Empty(t, l.failures(), "client errors after the kill")
	assert.Less(t, back, health.ConnectFailureEjectionTime+2*time.Second, "back once its ejection ended")
	t.Logf("%d requests, %d errors; killed for %v, back %v after its restart",
		l.ok.Load(), len(l.failures()), restarted.Sub(killed).Round(time.Millisecond), back.Round(time.Millisecond))
}

// TestKilledBackendBackWithinAProbeInterval: with active checks, the
// killed backend costs no client an error either, and serves again within
// one probe interval of its restart, whether it was down past its
// ejection's end (its failed probes kept it out) or restarted within it
// (the passing probe ends the ejection too).
func TestKilledBackendBackWithinAProbeInterval(t *testing.T) {
	const interval = 300 * time.Millisecond
	d, ks := threeBackends(t, config.HealthCheck{Active: config.ActiveHealth{Enabled: true, Interval: "300ms", Timeout: "1s", Path: "/healthz"}})
	l := startSteadyLoad(t, d, "app.test", 8)
	activeOf := func() string {
		for _, dst := range d.healthOf(t, "app").Destinations {
			if dst.ID == "d2" {
				return dst.Active
			}
		}
		return ""
	}
	for _, pastEjection := range []bool{true, false} {
		waitFor(t, "every backend serving", func() bool {
			return ks[0].served.Load() > 20 && ks[1].served.Load() > 20 && ks[2].served.Load() > 20 && activeOf() != "unhealthy"
		})
		ks[2].kill()
		if pastEjection {
			waitFor(t, "the probes marking it unhealthy", func() bool { return activeOf() == "unhealthy" })
			time.Sleep(health.ConnectFailureEjectionTime)
		} else {
			waitFor(t, "its ejection", func() bool { return d.ejectionOf(t, "app", "d2") != nil })
			e := d.ejectionOf(t, "app", "d2")
			require.NotNil(t, e)
			require.Greater(t, time.Until(e.Until), time.Second, "ejected for another second at least when restarted")
		}
		servedDown := ks[2].served.Load()
		ks[2].restart()
		restarted := time.Now()
		waitFor(t, "the restarted backend serving", func() bool { return ks[2].served.Load() > servedDown })
		back := time.Since(restarted)
		assert.Less(t, back, interval+600*time.Millisecond, "past its ejection: %v; back within one probe interval (and a probe's time)", pastEjection)
		t.Logf("past its ejection: %v; back %v after its restart (probe interval %v)", pastEjection, back.Round(time.Millisecond), interval)
	}
	l.end()
	assert.Empty(t, l.failures(), "client errors after the kills")
	t.Logf("%d requests, %d errors", l.ok.Load(), len(l.failures()))
}

// refusingAddr returns a loopback address that refuses connections for
// the whole test: the local end of an open connection, which no listener
// can take.
func refusingAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	peer, err := ln.Accept()
	require.NoError(t, err)
	t.Cleanup(func() { peer.Close() })
	return c.LocalAddr().String()
}

// TestRefusedPOSTIsRetried: a POST whose destination refused the
// connection reaches the next one, body and all, without a retry block;
// a route with retry.connectFailures off answers it 502.
func TestRefusedPOSTIsRetried(t *testing.T) {
	echo := serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		io.WriteString(w, r.Method+" "+string(b))
	})})
	on, off := upstreamOf("on", refusingAddr(t), echo), upstreamOf("off", refusingAddr(t), echo)
	on.LoadBalancing, off.LoadBalancing = "FirstAlphabetical", "FirstAlphabetical"
	doc := config.Document{
		Hosts: []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{
			{Path: "/on", Upstream: "on"},
			{Path: "/off", Upstream: "off", Retry: config.RouteRetry{ConnectFailures: "off"}},
		}}},
		Upstreams: []config.Upstream{on, off},
	}
	d := startWithDoc(t, doc)
	post := func(path string) (int, string) {
		req, err := http.NewRequest("POST", "http://"+d.addr+path, strings.NewReader("order=42"))
		require.NoError(t, err)
		req.Host = "app.test"
		res, err := (&http.Client{Transport: d.tr, Timeout: wireTimeout}).Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	status, body := post("/on")
	assert.Equal(t, 200, status)
	assert.Equal(t, "POST order=42", body)
	status, _ = post("/off")
	assert.Equal(t, 502, status)

	for _, c := range []admin.Cluster{d.healthOf(t, "on"), d.healthOf(t, "off")} {
		d0 := c.Destinations[0]
		require.NotNil(t, d0.Ejection, "%s: the refusing destination is ejected either way", c.ID)
		assert.Equal(t, "connectFailure", d0.Ejection.Reason)
		assert.Equal(t, map[string]uint64{"connectFailure": 1}, d0.Ejections)
	}
	f := d.scrape(t)
	assert.Equal(t, 1.0, metric(t, f, "paduraksa_upstream_connect_retries_total", "upstream", "on"))
	assert.Equal(t, 0.0, metric(t, f, "paduraksa_upstream_connect_retries_total", "upstream", "off"))
	assert.Equal(t, 1.0, metric(t, f, "paduraksa_destination_ejected", "upstream", "on", "destination", "d0"))
}

// ejectionOf returns a destination's current ejection from GET /health,
// or nil.
func (d *daemon) ejectionOf(t *testing.T, up, dst string) *admin.Ejection {
	t.Helper()
	for _, x := range d.healthOf(t, up).Destinations {
		if x.ID == dst {
			return x.Ejection
		}
	}
	require.FailNow(t, "no destination "+dst)
	return nil
}

// TestOutlierEjectionThroughTheDaemon: a destination answering 503 is
// ejected after consecutiveGatewayErrors of them, for the base time, and
// for twice that the next time; GET /health and /metrics say so.
func TestOutlierEjectionThroughTheDaemon(t *testing.T) {
	bad, good := startKillable(t, "bad", 503), startKillable(t, "good", 0)
	up := upstreamOf("app", bad.addr, good.addr)
	up.LoadBalancing = "FirstAlphabetical" // the bad one while it is available
	up.Health.Outlier = config.OutlierHealth{ConsecutiveGatewayErrors: 3, BaseEjectionTime: "500ms", MaxEjectionTime: "10s"}
	d := startWithDoc(t, config.Document{
		Hosts:     []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{Path: "/", Upstream: "app"}}}},
		Upstreams: []config.Upstream{up},
	})
	for round, want := range []time.Duration{500 * time.Millisecond, time.Second} {
		for i := range 3 {
			status, body := d.get(t, "app.test", "/")
			require.Equal(t, 503, status, "round %d, request %d: the upstream's own answer", round, i)
			require.Equal(t, "bad", body)
		}
		e := d.ejectionOf(t, "app", "d0")
		require.NotNil(t, e, "round %d", round)
		assert.Equal(t, "consecutiveGatewayErrors", e.Reason)
		assert.Equal(t, round+1, e.Count)
		assert.Equal(t, want, e.Until.Sub(e.Since), "round %d: the ejection time grows", round)
		status, body := d.get(t, "app.test", "/")
		assert.Equal(t, 200, status)
		assert.Equal(t, "good", body)
		waitFor(t, "the ejection ending", func() bool { return d.ejectionOf(t, "app", "d0") == nil })
	}
	f := d.scrape(t)
	assert.Equal(t, 2.0, metric(t, f, "paduraksa_destination_ejections_total", "upstream", "app", "destination", "d0", "reason", "consecutiveGatewayErrors"))
	assert.Equal(t, 2.0, metric(t, f, "paduraksa_destination_ejection_returns_total", "upstream", "app", "destination", "d0"))
	assert.Equal(t, 0.0, metric(t, f, "paduraksa_destination_ejected", "upstream", "app", "destination", "d0"))
	assert.Contains(t, d.logs.String(), "ejected (consecutiveGatewayErrors): 3 gateway errors in a row (last 503)")
}

// TestOutlierShareWhenEveryDestinationFails: when every destination
// answers 500, ejections stop at maxEjectionPercent of the upstream (two
// of four), and requests still reach the two left in rotation.
func TestOutlierShareWhenEveryDestinationFails(t *testing.T) {
	var ks []*killable
	var addrs []string
	for i := range 4 {
		k := startKillable(t, fmt.Sprintf("k%d", i), 500)
		ks, addrs = append(ks, k), append(addrs, k.addr)
	}
	up := upstreamOf("app", addrs...)
	up.LoadBalancing = "RoundRobin"
	up.Health.Outlier = config.OutlierHealth{Consecutive5xx: 2, BaseEjectionTime: "1m", MaxEjectionPercent: 50}
	d := startWithDoc(t, config.Document{
		Hosts:     []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{Path: "/", Upstream: "app"}}}},
		Upstreams: []config.Upstream{up},
	})
	for range 16 {
		status, _ := d.get(t, "app.test", "/")
		require.Equal(t, 500, status)
	}
	c := d.healthOf(t, "app")
	var ejected, kept []int
	for i, dst := range c.Destinations {
		if dst.Ejection != nil {
			ejected = append(ejected, i)
			assert.False(t, dst.Available)
		} else {
			kept = append(kept, i)
			assert.True(t, dst.Available)
		}
	}
	require.Len(t, ejected, 2, "half of four")
	assert.Equal(t, "normal", c.Mode)
	var before [4]int64
	for i, k := range ks {
		before[i] = k.served.Load()
	}
	for range 8 {
		status, _ := d.get(t, "app.test", "/")
		require.Equal(t, 500, status)
	}
	for _, i := range ejected {
		assert.Equal(t, before[i], ks[i].served.Load(), "k%d is out", i)
	}
	for _, i := range kept {
		assert.Greater(t, ks[i].served.Load(), before[i], "k%d still takes requests", i)
	}
	f := d.scrape(t)
	var total float64
	for i := range 4 {
		total += metric(t, f, "paduraksa_destination_ejected", "upstream", "app", "destination", fmt.Sprintf("d%d", i))
	}
	assert.Equal(t, 2.0, total)
	assert.Contains(t, d.logs.String(), "outlier not ejected: the cluster's share of ejected destinations is reached")
}
