package health

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestActiveProbing(t *testing.T) {
	var status, bad atomic.Int32
	status.Store(http.StatusOK)
	var wrong atomic.Int32
	healthSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || r.URL.RawQuery != "deep=1" || r.UserAgent() != "paduraksa-health" {
			wrong.Add(1)
		}
		s := int(status.Load())
		if s != http.StatusOK {
			bad.Add(1)
		}
		w.WriteHeader(s)
	}))
	defer healthSrv.Close()
	var trafficProbed atomic.Int32
	traffic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { trafficProbed.Add(1) }))
	defer traffic.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer other.Close()

	a := dest("a", traffic.Listener.Addr().String())
	a.HealthHost = healthSrv.Listener.Addr().String()
	_, c := newCluster(t, a, dest("b", other.Listener.Addr().String()))

	var logs logBuffer
	m := New(Options{Logger: logs.logger(), Workers: 2})
	var badAtEvent atomic.Int32
	m.Subscribe(func(ch Change) {
		if ch.New == upstream.Unhealthy {
			badAtEvent.Store(bad.Load())
		}
	})
	ch := watch(t, m) // subscribers run in order: the count is taken first
	rt := &countingTransport{base: transport(t)}
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: rt, Config: Config{
		Active: ActiveConfig{Enabled: true, Interval: 20 * time.Millisecond, Timeout: 10 * time.Second, Path: "/healthz", Query: "?deep=1"},
	}}))
	require.NoError(t, m.Start(context.Background()))
	defer m.Close()

	awaitAll(t, ch, 10*time.Second, is("a", CheckActive, upstream.Healthy), is("b", CheckActive, upstream.Healthy))

	status.Store(http.StatusServiceUnavailable)
	ev := await(t, ch, 10*time.Second, is("a", CheckActive, upstream.Unhealthy))
	assert.EqualValues(t, 2, badAtEvent.Load(), "out after exactly two failed probes (the default threshold)")
	assert.Equal(t, "c", ev.ClusterID)
	assert.Equal(t, upstream.Healthy, ev.Old)
	assert.Contains(t, ev.Reason, "2 consecutive probes failed")
	assert.Equal(t, []string{"b"}, ids(c.Members().Available))

	status.Store(http.StatusOK)
	ev = await(t, ch, 10*time.Second, is("a", CheckActive, upstream.Healthy))
	assert.Equal(t, upstream.Unhealthy, ev.Old, "back after one passing probe")
	assert.Equal(t, []string{"a", "b"}, ids(c.Members().Available))

	assert.Zero(t, wrong.Load(), "probes use the path, query and user agent")
	assert.Zero(t, trafficProbed.Load(), "probes go to the health address")
	assert.Positive(t, rt.count(), "probes use the cluster's transport")
	assert.True(t, logs.has("level=WARN") && logs.has("new=unhealthy") && logs.has("destination=a"), logs.String())
}

// TestActiveProbingTiming: on the bubble's clock, a destination whose
// probes start failing is out exactly two rounds later (the default
// threshold) and back at the first round that passes.
func TestActiveProbingTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing atomic.Bool
		probe := fakeTransport(func(host string) int {
			if host == "h:1" && failing.Load() {
				return http.StatusServiceUnavailable
			}
			return http.StatusOK
		})
		_, c := newCluster(t, dest("a", "h:1"), dest("b", "h:2"))
		m := New(Options{})
		ch := watch(t, m)
		const interval = time.Second
		require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: probe, Config: Config{
			Active: ActiveConfig{Enabled: true, Interval: interval},
		}}))
		start := time.Now()
		require.NoError(t, m.Start(t.Context()))
		defer m.Close()
		ev := await(t, ch, time.Minute, is("a", CheckActive, upstream.Healthy))
		assert.Zero(t, ev.Time.Sub(start), "the first round runs at once")

		time.Sleep(interval / 2)
		failing.Store(true)
		ev = await(t, ch, time.Minute, is("a", CheckActive, upstream.Unhealthy))
		assert.Equal(t, 2*interval, ev.Time.Sub(start), "out at the second failed round")
		assert.Contains(t, ev.Reason, "2 consecutive probes failed, last: status 503")

		time.Sleep(interval / 2)
		failing.Store(false)
		ev = await(t, ch, time.Minute, is("a", CheckActive, upstream.Healthy))
		assert.Equal(t, 3*interval, ev.Time.Sub(start), "back at the next round")
		assert.Equal(t, upstream.Healthy, c.Destination("b").ActiveHealth())
	})
}

func TestActiveThresholdFromMetadata(t *testing.T) {
	var fails atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fails.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	_, c := newCluster(t, dest("a", srv.Listener.Addr().String()))
	m := New(Options{})
	var atEvent atomic.Int32
	m.Subscribe(func(Change) { atEvent.Store(fails.Load()) })
	ch := watch(t, m)
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: transport(t), Config: Config{
		Active:   ActiveConfig{Enabled: true, Interval: 10 * time.Millisecond},
		Metadata: map[string]string{MetadataThreshold: "3"},
	}}))
	require.NoError(t, m.Start(context.Background()))
	defer m.Close()
	await(t, ch, 10*time.Second, is("a", CheckActive, upstream.Unhealthy))
	assert.EqualValues(t, 3, atEvent.Load())
}

func TestActiveConnectFailure(t *testing.T) {
	_, c := newCluster(t, dest("a", refusedAddr(t)))
	m := New(Options{})
	ch := watch(t, m)
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: transport(t), Config: Config{
		Active: ActiveConfig{Enabled: true, Interval: 10 * time.Millisecond, Timeout: 10 * time.Second},
	}}))
	require.NoError(t, m.Start(context.Background()))
	defer m.Close()
	ev := await(t, ch, 10*time.Second, is("a", CheckActive, upstream.Unhealthy))
	assert.Contains(t, ev.Reason, "last: connectError: ")
	assert.Contains(t, ev.Reason, "refused")
	assert.True(t, c.Members().Panic, "the only destination is out: HealthyOrPanic serves from all")
}

// recordingPolicy is ConsecutiveFailures that hands every result over.
type recordingPolicy chan ProbeResult

func (p recordingPolicy) Evaluate(r ProbeResult) (upstream.HealthState, string) {
	p <- r
	return ConsecutiveFailures{}.Evaluate(r)
}

// TestProbeOutcomes: probes are classified as the forwarder's round trips
// are, by upstream.ClassifyRoundTrip, against real loopback peers.
func TestProbeOutcomes(t *testing.T) {
	status := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }))
		t.Cleanup(srv.Close)
		return srv.Listener.Addr().String()
	}
	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	untrusted.StartTLS()
	t.Cleanup(untrusted.Close)
	// Connections to a listener that never accepts complete in the
	// kernel's backlog; nothing ever answers them.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { silent.Close() })

	want := map[string]struct {
		outcome upstream.Outcome
		status  int
		ok      bool
	}{
		"fine":        {upstream.Success, 200, true},
		"unavailable": {upstream.Success, 503, false},
		"refused":     {upstream.ConnectError, 0, false},
		"untrusted":   {upstream.TLSError, 0, false},
		"silent":      {upstream.Timeout, 0, false},
	}
	tlsDest := dest("untrusted", untrusted.Listener.Addr().String())
	tlsDest.Scheme = "https"
	_, c := newCluster(t, dest("fine", status(200)), dest("unavailable", status(503)), dest("refused", refusedAddr(t)),
		tlsDest, dest("silent", silent.Addr().String()))
	results := make(recordingPolicy, len(want))
	m := New(Options{Workers: len(want), ActivePolicies: map[string]ActivePolicy{"recording": results}})
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: transport(t), Config: Config{
		// The timeout is the silent peer's wait, and the room a TLS
		// handshake refused under -race on a loaded machine needs.
		Active: ActiveConfig{Enabled: true, Policy: "recording", Interval: time.Hour, Timeout: 3 * time.Second},
	}}))
	require.NoError(t, m.Start(context.Background()))
	defer m.Close()
	deadline := time.After(30 * time.Second)
	for range want {
		select {
		case r := <-results:
			w := want[r.Destination.ID()]
			assert.Equal(t, w.outcome, r.Outcome, "%s: %v", r.Destination.ID(), r.Err)
			assert.Equal(t, w.status, r.StatusCode, r.Destination.ID())
			assert.Equal(t, w.ok, r.OK, r.Destination.ID())
			assert.Equal(t, w.outcome != upstream.Success, r.Err != nil, r.Destination.ID())
		case <-deadline:
			t.Fatal("a probe of the first round never ended")
		}
	}
}

func TestStartAndClose(t *testing.T) {
	m := New(Options{})
	require.NoError(t, m.Start(context.Background()))
	assert.EqualError(t, m.Start(context.Background()), "health: Start called twice or after Close")
	assert.NoError(t, m.Close())
	assert.NoError(t, m.Close())
	assert.EqualError(t, m.Start(context.Background()), "health: Start called twice or after Close", "closed for good")

	// A cancelled context stops the goroutines too.
	m = New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, m.Start(ctx))
	cancel()
	within(t, 10*time.Second, m.wg.Wait)
}

// signallingProbes is the default probe factory that tells, for each
// request it is asked for, the destination's ID.
type signallingProbes chan string

func (s signallingProbes) NewProbeRequest(ctx context.Context, t ProbeTarget) (*http.Request, error) {
	select {
	case s <- t.Destination.ID():
	default: // nobody counts any more: never hold a worker up
	}
	return defaultProbeRequests{}.NewProbeRequest(ctx, t)
}

// TestProbeNotBuilt: a destination whose probe request cannot even be
// built (an address no URL holds, which NewCluster would have refused but
// a registry plan took) is not judged by it: after more rounds than the
// threshold it is as it was, never unhealthy for a responseHeaderError,
// and the log names the config's problem as requestInvalid.
func TestProbeNotBuilt(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer ok.Close()
	bad := dest("bad", "a b:80")
	require.Error(t, upstream.ClusterConfig{ID: "c", Destinations: []upstream.DestinationConfig{bad}}.Validate(), "the config's own check refuses it")
	_, c := newCluster(t, dest("ok", ok.Listener.Addr().String()), bad)
	calls := make(signallingProbes, 16)
	var logs logBuffer
	m := New(Options{Logger: logs.logger(), ProbeRequests: calls})
	ch := watch(t, m)
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: transport(t), Config: Config{
		Active: ActiveConfig{Enabled: true, Interval: 10 * time.Millisecond, Timeout: 10 * time.Second},
	}}))
	require.NoError(t, m.Start(context.Background()))
	defer m.Close()
	// A round is over before the next starts: the third call for bad
	// comes after two whole rounds, the default threshold.
	deadline := time.After(10 * time.Second)
	for n := 0; n < 3; {
		select {
		case id := <-calls:
			if id == "bad" {
				n++
			}
		case <-deadline:
			t.Fatal("no third round")
		}
	}
	await(t, ch, 10*time.Second, is("ok", CheckActive, upstream.Healthy))
	assert.Equal(t, upstream.Unknown, c.Destination("bad").ActiveHealth(), "the destination never saw the probe")
	for len(ch) > 0 {
		ev := <-ch
		assert.NotEqual(t, "bad", ev.DestinationID, "no change for bad: %+v", ev)
	}
	assert.True(t, logs.has("outcome=requestInvalid") && logs.has("destination=bad") && logs.has("level=ERROR"), logs.String())
	assert.False(t, logs.has("responseHeaderError"), logs.String())
}
