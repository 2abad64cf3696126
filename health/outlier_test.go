package health

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/upstream"
)

func answered(m *Monitor, d *upstream.Destination, status int) {
	m.Observe(upstream.Observation{Destination: d, Outcome: upstream.Success, Status: status})
}

func outlierCluster(t *testing.T, o OutlierConfig, ids ...string) (*Monitor, *upstream.Cluster, chan Change) {
	var ds []upstream.DestinationConfig
	for i, id := range ids {
		ds = append(ds, dest(id, "h:"+string(rune('1'+i))))
	}
	_, c := newCluster(t, ds...)
	m := New(Options{})
	t.Cleanup(func() { m.Close() })
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Config: Config{Outlier: o}}))
	return m, c, watch(t, m)
}

// TestOutlierEjectionGrows: consecutive gateway errors eject a
// destination for the base time, the next ejection in a row for twice
// that, capped at the maximum; it comes back when the time elapsed, and
// a success in between ends a run.
func TestOutlierEjectionGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, c, ch := outlierCluster(t, OutlierConfig{ConsecutiveGatewayErrors: 3, BaseEjectionTime: 10 * time.Second, MaxEjectionTime: 25 * time.Second}, "a", "b")
		a := c.Destination("a")
		answered(m, a, 503)
		answered(m, a, 503)
		answered(m, a, 200) // ends the run
		answered(m, a, 502)
		answered(m, a, 504)
		assert.False(t, a.Ejected(), "two in a row")
		answered(m, a, 503)
		require.True(t, a.Ejected())
		assert.Equal(t, upstream.Unhealthy, a.Health())
		assert.Equal(t, []string{"b"}, ids(c.Members().Available))
		ev := await(t, ch, time.Second, is("a", CheckEjection, upstream.Unhealthy))
		assert.Equal(t, upstream.EjectGatewayErrors, ev.EjectReason)
		assert.Equal(t, 10*time.Second, ev.EjectedFor)
		assert.Contains(t, ev.Reason, "3 gateway errors in a row (last 503)")
		e, ok := m.Ejection(a)
		require.True(t, ok)
		assert.Equal(t, 1, e.Count)

		back := await(t, ch, time.Minute, is("a", CheckEjection, upstream.Unknown))
		assert.Equal(t, 10*time.Second, back.Time.Sub(ev.Time))
		assert.False(t, a.Ejected())
		assert.Equal(t, []string{"a", "b"}, ids(c.Members().Available))

		// At once again: twice as long, then the cap.
		for _, want := range []time.Duration{20 * time.Second, 25 * time.Second} {
			for range 3 {
				m.Observe(upstream.Observation{Destination: a, Outcome: upstream.ResponseHeaderError})
			}
			ev = await(t, ch, time.Second, is("a", CheckEjection, upstream.Unhealthy))
			assert.Equal(t, want, ev.EjectedFor)
			await(t, ch, time.Minute, is("a", CheckEjection, upstream.Unknown))
		}
		assert.Equal(t, uint64(3), a.Metrics().Ejections[upstream.EjectGatewayErrors].Load())
		assert.Equal(t, uint64(3), a.Metrics().Returns.Load())

		// Time in rotation brings the multiplier down: after 25 s (two
		// base times) the next ejection counts 3 - 2 + 1 = 2.
		time.Sleep(25 * time.Second)
		for range 3 {
			answered(m, a, 502)
		}
		ev = await(t, ch, time.Second, is("a", CheckEjection, upstream.Unhealthy))
		assert.Equal(t, 20*time.Second, ev.EjectedFor)
	})
}

// TestOutlier5xxRun: consecutive5xx counts every answer of 500 or more;
// a 500 breaks a run of gateway errors but not of 5xx.
func TestOutlier5xxRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, c, ch := outlierCluster(t, OutlierConfig{ConsecutiveGatewayErrors: 2, Consecutive5xx: 4}, "a", "b")
		a := c.Destination("a")
		answered(m, a, 502)
		answered(m, a, 500)
		answered(m, a, 502)
		assert.False(t, a.Ejected(), "the 500 broke the gateway run")
		answered(m, a, 501)
		ev := await(t, ch, time.Second, is("a", CheckEjection, upstream.Unhealthy))
		assert.Equal(t, upstream.Eject5xx, ev.EjectReason)
		assert.Contains(t, ev.Reason, "4 5xx in a row")
	})
}

// TestOutlierShareWhenEverythingFails: when every destination fails,
// ejections stop at the share (50 % of four is two), the others keep
// taking requests; a cluster of one may still eject its one.
func TestOutlierShareWhenEverythingFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, c, _ := outlierCluster(t, OutlierConfig{Consecutive5xx: 1}, "a", "b", "c", "d")
		for range 3 {
			for _, d := range c.Members().All {
				answered(m, d, 500)
			}
		}
		ejected := 0
		for _, d := range c.Members().All {
			if d.Ejected() {
				ejected++
			}
		}
		assert.Equal(t, 2, ejected)
		assert.Len(t, c.Members().Available, 2)
		assert.False(t, c.Members().Panic)

		m1, c1, _ := outlierCluster(t, OutlierConfig{Consecutive5xx: 1, MaxEjectionPercent: 10}, "only")
		answered(m1, c1.Destination("only"), 500)
		assert.True(t, c1.Destination("only").Ejected(), "one may always be ejected")
		assert.True(t, c1.Members().Panic, "and the availability policy still serves from it")
	})
}

// TestRefusedConnectionEjects: a request that never left ejects its
// destination at once, in a cluster the monitor does not even check, for
// ConnectFailureEjectionTime, beyond the outlier share.
func TestRefusedConnectionEjects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := newCluster(t, dest("a", "h:1"), dest("b", "h:2"))
		m := New(Options{})
		t.Cleanup(func() { m.Close() })
		ch := watch(t, m)
		for _, d := range c.Members().All {
			m.Observe(upstream.Observation{Destination: d, Outcome: upstream.ConnectError, NotSent: true})
		}
		assert.True(t, c.Destination("a").Ejected())
		assert.True(t, c.Destination("b").Ejected(), "a refusal is not held to the share")
		assert.True(t, c.Members().Panic)
		ev := await(t, ch, time.Second, is("a", CheckEjection, upstream.Unhealthy))
		assert.Equal(t, upstream.EjectConnectFailure, ev.EjectReason)
		back := await(t, ch, time.Minute, is("a", CheckEjection, upstream.Unknown))
		assert.Equal(t, ConnectFailureEjectionTime, back.Time.Sub(ev.Time))
		assert.Equal(t, "returned from ejection (connectFailure): ejection time elapsed", back.Reason)

		// The same outcome after the request left is no ejection.
		m.Observe(upstream.Observation{Destination: c.Destination("a"), Outcome: upstream.ConnectError})
		assert.False(t, c.Destination("a").Ejected())
	})
}

// TestProbeEndsEjection: a passing probe returns an ejected destination
// at once, long before its ejection time.
func TestProbeEndsEjection(t *testing.T) {
	var up atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !up.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	addr := srv.Listener.Addr().String()
	_, c := newCluster(t, dest("a", addr), dest("b", refusedAddr(t)))
	m := New(Options{})
	t.Cleanup(func() { m.Close() })
	ch := watch(t, m)
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: transport(t), Config: Config{
		Active:  ActiveConfig{Enabled: true, Interval: 20 * time.Millisecond, Timeout: time.Second},
		Outlier: OutlierConfig{ConsecutiveGatewayErrors: 1, BaseEjectionTime: time.Hour, MaxEjectionTime: time.Hour},
	}}))
	a := c.Destination("a")
	answered(m, a, 503)
	require.True(t, a.Ejected())
	e, _ := m.Ejection(a)
	assert.Equal(t, time.Hour, e.Until.Sub(e.Since))
	up.Store(true)
	require.NoError(t, m.Start(context.Background()))
	ev := await(t, ch, 10*time.Second, is("a", CheckEjection, upstream.Unknown))
	assert.Equal(t, "returned from ejection (consecutiveGatewayErrors): active probe passed", ev.Reason)
	assert.False(t, a.Ejected())
}

// TestOutlierValidation: every problem of an outlier block, at its path.
func TestOutlierValidation(t *testing.T) {
	for _, tc := range []struct {
		o          OutlierConfig
		code, path string
		warning    bool
	}{
		{OutlierConfig{ConsecutiveGatewayErrors: -1}, CodeOutlierThresholdInvalid, "outlier.consecutiveGatewayErrors", false},
		{OutlierConfig{Consecutive5xx: -1}, CodeOutlierThresholdInvalid, "outlier.consecutive5xx", false},
		{OutlierConfig{Consecutive5xx: 1, BaseEjectionTime: -1}, CodeOutlierEjectionTimeInvalid, "outlier.baseEjectionTime", false},
		{OutlierConfig{Consecutive5xx: 1, MaxEjectionTime: -1}, CodeOutlierEjectionTimeInvalid, "outlier.maxEjectionTime", false},
		{OutlierConfig{Consecutive5xx: 1, MaxEjectionTime: time.Second}, CodeOutlierEjectionTimeInvalid, "outlier.maxEjectionTime", false},
		{OutlierConfig{Consecutive5xx: 1, MaxEjectionPercent: 101}, CodeOutlierPercentInvalid, "outlier.maxEjectionPercent", false},
		{OutlierConfig{BaseEjectionTime: time.Second}, CodeOutlierOff, "outlier", true},
	} {
		t.Run(tc.code+" "+tc.path, func(t *testing.T) {
			errs, warns := Config{Outlier: tc.o}.Validate()
			list := errs
			if tc.warning {
				assert.Empty(t, errs)
				list = warns
			}
			require.Len(t, list, 1)
			var ve *ValidationError
			require.True(t, errors.As(list[0], &ve))
			assert.Equal(t, tc.code, ve.Code)
			assert.Equal(t, tc.path, ve.Path)
		})
	}
	errs, warns := Config{Outlier: OutlierConfig{ConsecutiveGatewayErrors: 5}}.Validate()
	assert.Empty(t, errs)
	assert.Empty(t, warns)
}
