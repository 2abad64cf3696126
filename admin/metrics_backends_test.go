package admin_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/telemetry"
)

// TestMetricsCountSplitsAndMirrors: a route with two backends counts each
// backend's requests by reason, and its mirror counts the copies by
// result and by how they ended at the mirror, read by Prometheus' parser;
// the access log names the reason and the mirror's result.
func TestMetricsCountSplitsAndMirrors(t *testing.T) {
	stable, canary := upstreamServer(t), upstreamServer(t)
	var mirrored atomic.Int64
	shadow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mirrored.Add(1)
	}))
	t.Cleanup(shadow.Close)
	var lines strings.Builder
	log := telemetry.NewAccessLog(telemetry.AccessLogConfig{Logger: slog.New(slog.NewJSONHandler(&lines, nil))})
	defer log.Close()
	g := startGateway(t, admin.MetricsConfig{}, snapshot.Compiler{AccessLog: log})
	g.publish(t, `
hosts:
  - names: [app.test]
    routes:
      - id: web
        backends:
          - {upstream: stable, weight: 9}
          - {upstream: canary, weight: 1}
        split:
          force: [{header: X-Canary, value: always, upstream: canary}]
        mirror: {upstream: shadow, maxBodyBytes: 16}
upstreams:
  - {id: stable, destinations: [{id: s1, address: "`+stable.URL+`"}]}
  - {id: canary, destinations: [{id: c1, address: "`+canary.URL+`"}]}
  - {id: shadow, destinations: [{id: m1, address: "`+shadow.URL+`"}]}
`)
	for range 10 {
		require.Equal(t, http.StatusOK, g.get(t, "app.test", "/x"))
	}
	for range 2 {
		req, err := http.NewRequest(http.MethodGet, g.url+"/x", nil)
		require.NoError(t, err)
		req.Host = "app.test"
		req.Header.Set("X-Canary", "always")
		res, err := g.client.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	req, err := http.NewRequest(http.MethodPost, g.url+"/x", strings.NewReader(strings.Repeat("b", 17)))
	require.NoError(t, err)
	req.Host = "app.test"
	res, err := g.client.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, res.Body)
	res.Body.Close()

	// The copies are sent off the requests' goroutines: wait for their
	// answers to be counted.
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, _ := value(g.scrape(t), "paduraksa_route_mirror_responses_total", "host", "app.test", "route", "web", "outcome", "success")
		if v == 12 || time.Now().After(deadline) {
			require.Equal(t, 12.0, v, "every copy sent is counted by its outcome")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	f := g.scrape(t)
	for _, c := range []struct {
		upstream, reason string
		n                float64
	}{
		{"stable", "weight", 9 + 1}, // the POST too: the 11th request by the weights
		{"canary", "weight", 1},
		{"canary", "forced", 2},
		{"stable", "forced", 0},
		{"canary", "sticky", 0},
		{"canary", "fallback", 0},
	} {
		v, ok := value(f, "paduraksa_route_backend_requests_total", "host", "app.test", "route", "web", "upstream", c.upstream, "reason", c.reason)
		assert.True(t, ok, "%+v", c)
		assert.Equal(t, c.n, v, "%+v", c)
	}
	for _, c := range []struct {
		result string
		n      float64
	}{{"sent", 12}, {"tooLarge", 1}, {"dropped", 0}, {"incomplete", 0}} {
		v, ok := value(f, "paduraksa_route_mirror_total", "host", "app.test", "route", "web", "result", c.result)
		assert.True(t, ok, "%+v", c)
		assert.Equal(t, c.n, v, "%+v", c)
	}
	v, _ := value(f, "paduraksa_route_mirror_in_flight", "host", "app.test", "route", "web")
	assert.Zero(t, v)
	assert.Equal(t, int64(12), mirrored.Load())
	v, _ = value(f, "paduraksa_upstream_requests_total", "upstream", "shadow", "outcome", "success")
	assert.Equal(t, 12.0, v, "the mirror's upstream counts its copies as its own")

	require.NoError(t, log.Close())
	out := lines.String()
	assert.Equal(t, 2, strings.Count(out, `"split":"forced"`), out)
	assert.Equal(t, 11, strings.Count(out, `"split":"weight"`), out)
	assert.Equal(t, 12, strings.Count(out, `"mirror":"sent"`), out)
	assert.Equal(t, 1, strings.Count(out, `"mirror":"tooLarge"`), out)
}
