package health

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDrainingIsNotProbed: a draining destination gets no probe while
// the others' rounds go on, and is probed again once undrained.
func TestDrainingIsNotProbed(t *testing.T) {
	var probesA, probesB atomic.Int64
	a := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { probesA.Add(1) }))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { probesB.Add(1) }))
	defer b.Close()
	_, c := newCluster(t, dest("a", a.Listener.Addr().String()), dest("b", b.Listener.Addr().String()))
	c.Destination("a").SetDrain(true)
	m := New(Options{Workers: 2})
	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: transport(t), Config: Config{
		Active: ActiveConfig{Enabled: true, Interval: 10 * time.Millisecond, Timeout: 10 * time.Second},
	}}))
	require.NoError(t, m.Start(context.Background()))
	defer m.Close()
	require.Eventually(t, func() bool { return probesB.Load() >= 5 }, 10*time.Second, time.Millisecond, "rounds go on")
	assert.Zero(t, probesA.Load(), "the draining destination is not probed")
	c.Destination("a").SetDrain(false)
	require.Eventually(t, func() bool { return probesA.Load() > 0 }, 10*time.Second, time.Millisecond, "probed again once undrained")
}
