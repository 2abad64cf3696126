package admin_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/telemetry"
)

// TestMetricsCountCircuitBreakers: an upstream's thresholds, what they
// count now and their trips are series read by Prometheus' parser; the
// requests past maxInFlight are 503 with Retry-After, logged as
// overloaded.
func TestMetricsCountCircuitBreakers(t *testing.T) {
	release, arrived := make(chan struct{}), make(chan struct{}, 8)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
	}))
	t.Cleanup(slow.Close)
	var lines strings.Builder
	log := telemetry.NewAccessLog(telemetry.AccessLogConfig{Logger: slog.New(slog.NewJSONHandler(&lines, nil))})
	defer log.Close()
	g := startGateway(t, admin.MetricsConfig{}, snapshot.Compiler{AccessLog: log})
	g.publish(t, `
hosts:
  - names: [app.test]
    routes: [{upstream: slow}]
upstreams:
  - id: slow
    destinations: [{id: s1, address: "`+slow.URL+`"}]
    limits: {maxInFlight: 2, maxPending: 5, maxConnectionsPerDestination: 4}
`)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { assert.Equal(t, http.StatusOK, g.get(t, "app.test", "/")) })
	}
	<-arrived
	<-arrived
	for range 3 {
		req, err := http.NewRequest(http.MethodGet, g.url+"/", nil)
		require.NoError(t, err)
		req.Host = "app.test"
		res, err := g.client.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
		assert.Equal(t, "1", res.Header.Get("Retry-After"))
	}
	f := g.scrape(t)
	for _, c := range []struct {
		series, limit string
		n             float64
	}{
		{"paduraksa_upstream_limit", "maxInFlight", 2},
		{"paduraksa_upstream_limit", "maxPending", 5},
		{"paduraksa_upstream_limit", "maxRetriesInFlight", 0},
		{"paduraksa_upstream_limit", "maxConnectionsPerDestination", 4},
		{"paduraksa_upstream_limit_trips_total", "maxInFlight", 3},
		{"paduraksa_upstream_limit_trips_total", "maxPending", 0},
		{"paduraksa_upstream_limit_current", "maxInFlight", 2},
		{"paduraksa_upstream_limit_current", "maxPending", 0},
	} {
		v, ok := value(f, c.series, "upstream", "slow", "limit", c.limit)
		assert.True(t, ok, "%+v", c)
		assert.Equal(t, c.n, v, "%+v", c)
	}
	close(release)
	wg.Wait()
	v, _ := value(g.scrape(t), "paduraksa_upstream_limit_current", "upstream", "slow", "limit", "maxInFlight")
	assert.Zero(t, v)
	v, _ = value(g.scrape(t), "paduraksa_destination_health_changes_total", "upstream", "slow", "destination", "s1")
	assert.Zero(t, v, "the trips are not the destination's failures")
	require.NoError(t, log.Close())
	assert.Equal(t, 3, strings.Count(lines.String(), `"error":"overloaded"`), lines.String())
}
