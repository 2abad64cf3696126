package admin_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/internal/promtest"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/telemetry"
)

// gateway is a publisher, its store served on a real listener, and the
// metrics served on another.
type gateway struct {
	pub     *snapshot.Publisher
	store   *snapshot.Store
	url     string
	metrics string
	client  *http.Client
}

func startGateway(t *testing.T, cfg admin.MetricsConfig, c snapshot.Compiler) *gateway {
	t.Helper()
	g := &gateway{store: new(snapshot.Store)}
	g.pub = snapshot.NewPublisher(snapshot.PublisherConfig{Store: g.store, Compiler: c})
	t.Cleanup(func() { g.pub.Close() })
	front := httptest.NewServer(g.store)
	t.Cleanup(front.Close)
	cfg.Store = g.store
	ms := httptest.NewServer(admin.NewMetrics(cfg).Handler())
	t.Cleanup(ms.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	g.url, g.metrics, g.client = front.URL, ms.URL, &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return g
}

func (g *gateway) publish(t *testing.T, doc string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := g.pub.PublishData([]byte(doc)).Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, snapshot.Applied, out.Status, "%v", out.Errors)
}

func (g *gateway) get(t *testing.T, host, path string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.url+path, nil)
	require.NoError(t, err)
	req.Host = host
	res, err := g.client.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// scrape reads the metrics with the Prometheus project's own parser.
func (g *gateway) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	return promtest.Scrape(t, g.client, g.metrics)
}

var value = promtest.Value

func upstreamServer(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

// deadAddress is a loopback address nothing listens on.
func deadAddress(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func document(up, dead string, full bool) string {
	old, down, deadUp := "", "", ""
	if full {
		old = `
  - names: [old.test]
    routes:
      - path: /
        upstream: app`
		down = `
      - id: down
        path: /down
        upstream: dead`
		deadUp = `
  - id: dead
    destinations:
      - id: d1
        address: http://` + dead
	}
	return `
hosts:
  - names: [app.test]
    policies: [watch]
    routes:
      - id: api
        path: /api
        upstream: app
      - path: /
        upstream: app` + down + old + `
ruleSets:
  - id: watch
    mode: shadow
    rules:
      - pathPrefix: /api/secret
        action: deny
upstreams:
  - id: app
    destinations:
      - id: a1
        address: ` + up + deadUp + "\n"
}

// TestMetricsCountExactly: real requests through a published snapshot,
// then a scrape parsed by Prometheus' parser has the exact count of every
// host, route, code, upstream and destination, the shadow policy's
// would-have-blocked count, and an unknown host as one label value.
func TestMetricsCountExactly(t *testing.T) {
	up := upstreamServer(t)
	var lines strings.Builder
	log := telemetry.NewAccessLog(telemetry.AccessLogConfig{Logger: slog.New(slog.NewJSONHandler(&lines, nil))})
	defer log.Close()
	g := startGateway(t, admin.MetricsConfig{AccessLog: log}, snapshot.Compiler{AccessLog: log})
	g.publish(t, document(up.URL, deadAddress(t), true))

	for range 3 {
		require.Equal(t, http.StatusOK, g.get(t, "app.test", "/api/x"))
	}
	require.Equal(t, http.StatusOK, g.get(t, "app.test", "/api/secret"), "shadowed: forwarded")
	require.Equal(t, http.StatusOK, g.get(t, "APP.test", "/"))
	require.Equal(t, http.StatusOK, g.get(t, "old.test", "/"))
	require.Equal(t, http.StatusBadGateway, g.get(t, "app.test", "/down"))
	for _, h := range []string{"a.test", "b.test", "c.test"} {
		require.Equal(t, http.StatusNotFound, g.get(t, h, "/"))
	}

	f := g.scrape(t)
	for _, c := range []struct {
		host, route, code string
		n                 float64
	}{
		{"app.test", "api", "200", 4},
		{"app.test", "/", "200", 1},
		{"old.test", "/", "200", 1},
		{"app.test", "down", "502", 1},
		{"(unknown)", "", "404", 3},
	} {
		v, ok := value(f, "paduraksa_requests_total", "host", c.host, "route", c.route, "code", c.code)
		assert.True(t, ok, "%+v", c)
		assert.Equal(t, c.n, v, "%+v", c)
		d, _ := value(f, "paduraksa_request_duration_seconds", "host", c.host, "route", c.route)
		assert.GreaterOrEqual(t, d, c.n, "%+v: every request is in the duration histogram", c)
	}
	_, ok := value(f, "paduraksa_requests_total", "host", "a.test", "route", "", "code", "404")
	assert.False(t, ok, "client-chosen names are not label values")

	v, _ := value(f, "paduraksa_policy_decisions_total", "policy", "watch", "decision", "wouldBlock")
	assert.Equal(t, 1.0, v)
	v, _ = value(f, "paduraksa_policy_decisions_total", "policy", "watch", "decision", "allowed")
	assert.Equal(t, 5.0, v, "app.test's three /api/x, / and /down; old.test has no policy")
	v, _ = value(f, "paduraksa_policy_decisions_total", "policy", "watch", "decision", "blocked")
	assert.Zero(t, v)

	v, _ = value(f, "paduraksa_destination_exchanges_total", "upstream", "app", "destination", "a1", "outcome", "success")
	assert.Equal(t, 6.0, v)
	v, _ = value(f, "paduraksa_destination_exchanges_total", "upstream", "dead", "destination", "d1", "outcome", "connectError")
	assert.Equal(t, 1.0, v)
	v, _ = value(f, "paduraksa_upstream_requests_total", "upstream", "dead", "outcome", "connectError")
	assert.Equal(t, 1.0, v)
	v, _ = value(f, "paduraksa_destination_ttfb_seconds", "upstream", "app", "destination", "a1")
	assert.Equal(t, 6.0, v)
	v, _ = value(f, "paduraksa_response_body_bytes_total", "host", "app.test", "route", "api")
	assert.Equal(t, float64(3*len("hello from /api/x")+len("hello from /api/secret")), v)
	v, _ = value(f, "paduraksa_requests_in_flight", "host", "app.test", "route", "api")
	assert.Zero(t, v)

	// The access log has every request, the 502 with its error kind.
	require.NoError(t, log.Close())
	records := strings.Split(strings.TrimSpace(lines.String()), "\n")
	assert.Len(t, records, 10)
	var bad []string
	for _, r := range records {
		if strings.Contains(r, `"status":502`) {
			bad = append(bad, r)
		}
	}
	require.Len(t, bad, 1)
	assert.Contains(t, bad[0], `"error":"connectError"`)
	assert.Contains(t, bad[0], `"upstream":"dead"`)
	assert.Contains(t, bad[0], `"destination":"d1"`)
	assert.Contains(t, bad[0], `"route":"down"`)
	v, _ = value(g.scrape(t), "paduraksa_access_log_records_total", "result", "written")
	assert.Equal(t, 10.0, v)

	// A publish without old.test and without the dead upstream: their
	// series are gone; the others keep counting.
	g.publish(t, document(up.URL, "", false))
	require.Equal(t, http.StatusOK, g.get(t, "app.test", "/api/x"))
	f = g.scrape(t)
	_, ok = value(f, "paduraksa_requests_total", "host", "old.test", "route", "/", "code", "200")
	assert.False(t, ok, "a removed host's series go away")
	_, ok = value(f, "paduraksa_destination_exchanges_total", "upstream", "dead", "destination", "d1", "outcome", "connectError")
	assert.False(t, ok, "a removed upstream's series go away")
	v, _ = value(f, "paduraksa_requests_total", "host", "app.test", "route", "api", "code", "200")
	assert.Equal(t, 5.0, v, "a kept route keeps its count across publishes")
}

// TestMetricsCountHTTP1Fallbacks: requests an upstream's direct HTTP/1.1
// client leaves to net/http's are counted by reason, read by Prometheus'
// parser; an upstream set to net/http's client has no fallback to count.
func TestMetricsCountHTTP1Fallbacks(t *testing.T) {
	up := upstreamServer(t)
	g := startGateway(t, admin.MetricsConfig{}, snapshot.Compiler{})
	g.publish(t, `
hosts:
  - names: [app.test]
    routes:
      - {path: /direct, upstream: direct}
      - {path: /nethttp, upstream: nethttp}
upstreams:
  - id: direct
    destinations: [{id: a1, address: `+up.URL+`}]
  - id: nethttp
    http: {http1Client: netHTTP}
    destinations: [{id: a1, address: `+up.URL+`}]
`)
	send := func(path string, expect bool) {
		t.Helper()
		var body io.Reader = io.MultiReader(strings.NewReader("chunked")) // no length: sent chunked
		if expect {
			body = strings.NewReader("sized")
		}
		req, err := http.NewRequest(http.MethodPut, g.url+path, body)
		require.NoError(t, err)
		req.Host = "app.test"
		if expect {
			req.Header.Set("Expect", "100-continue")
		}
		res, err := g.client.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusOK, res.StatusCode)
	}
	for _, path := range []string{"/direct", "/nethttp"} {
		send(path, true)
		send(path, false)
		send(path, false)
	}
	require.Equal(t, http.StatusOK, g.get(t, "app.test", "/direct"))

	f := g.scrape(t)
	for _, c := range []struct {
		upstream, reason string
		n                float64
	}{
		{"direct", "expectContinue", 1},
		{"direct", "unknownLength", 2},
		{"direct", "upgrade", 0},
		{"direct", "trailers", 0},
		{"nethttp", "expectContinue", 0},
		{"nethttp", "unknownLength", 0},
	} {
		v, ok := value(f, "paduraksa_upstream_http1_fallbacks_total", "upstream", c.upstream, "reason", c.reason)
		assert.True(t, ok, "%+v", c)
		assert.Equal(t, c.n, v, "%+v", c)
	}
}
