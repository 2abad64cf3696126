package main

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/promtest"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrape reads the daemon's /metrics with Prometheus' own parser.
func (d *daemon) scrape(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	return promtest.Scrape(t, &http.Client{Transport: d.tr, Timeout: 10 * time.Second}, "http://"+d.admin+"/metrics")
}

// metric returns the value of name's series with exactly these labels.
func metric(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	v, ok := promtest.Value(fams, name, labels...)
	require.True(t, ok, "no %s%v", name, labels)
	return v
}

// TestDaemonMetrics: real requests through the daemon, then a scrape of
// the admin listener's /metrics has the exact counts per host, route,
// status and upstream, the stopped upstream's connect errors, the shadow
// policy's would-have-blocked count, the open connections and the
// publishes.
func TestDaemonMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stopped := ln.Addr().String()
	ln.Close()
	doc := config.Document{
		Hosts: []config.Host{{
			Names:    []string{"app.test"},
			Policies: []string{"watch"},
			Routes:   []config.Route{{ID: "web", Path: "/", Upstream: "web"}, {ID: "gone", Path: "/gone", Upstream: "gone"}},
		}},
		RuleSets:  []config.RuleSet{{ID: "watch", Mode: "shadow", Rules: []config.Rule{{PathPrefix: "/admin", Action: "deny"}}}},
		Upstreams: []config.Upstream{upstreamOf("web", upstreamServer(t, "web")), upstreamOf("gone", stopped)},
	}
	d := startWithDoc(t, doc, "-access-log", "off")
	for _, p := range []string{"/a", "/b", "/admin/x"} {
		st, _ := d.get(t, "app.test", p)
		require.Equal(t, 200, st)
	}
	st, _ := d.get(t, "app.test", "/gone/x")
	require.Equal(t, 502, st)
	st, _ = d.get(t, "other.test", "/")
	require.Equal(t, 404, st)

	f := d.scrape(t)
	assert.Equal(t, 3.0, metric(t, f, "paduraksa_requests_total", "host", "app.test", "route", "web", "code", "200"))
	assert.Equal(t, 1.0, metric(t, f, "paduraksa_requests_total", "host", "app.test", "route", "gone", "code", "502"))
	assert.Equal(t, 1.0, metric(t, f, "paduraksa_requests_total", "host", "(unknown)", "route", "", "code", "404"))
	assert.Equal(t, 3.0, metric(t, f, "paduraksa_upstream_requests_total", "upstream", "web", "outcome", "success"))
	assert.Equal(t, 1.0, metric(t, f, "paduraksa_upstream_requests_total", "upstream", "gone", "outcome", "connectError"))
	assert.Equal(t, 1.0, metric(t, f, "paduraksa_destination_exchanges_total", "upstream", "gone", "destination", "d0", "outcome", "connectError"))
	assert.Equal(t, 1.0, metric(t, f, "paduraksa_policy_decisions_total", "policy", "watch", "decision", "wouldBlock"))
	assert.Equal(t, 3.0, metric(t, f, "paduraksa_policy_decisions_total", "policy", "watch", "decision", "allowed"))
	assert.Equal(t, 1.0, metric(t, f, "paduraksa_config_publishes_total", "outcome", "applied"))
	assert.Equal(t, 1.0, metric(t, f, "paduraksa_config_revision"))
	assert.GreaterOrEqual(t, metric(t, f, "paduraksa_connections_open", "listener", "http"), 1.0, "the test client's keep-alive connection")
	assert.NotNil(t, f["go_goroutines"], "the Go runtime's metrics come along")
}

// TestDaemonSimulateOnAdmin: the admin listener answers POST /simulate
// with what the live config would do with a request, without doing it.
func TestDaemonSimulateOnAdmin(t *testing.T) {
	doc := config.Document{
		Hosts:     []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{ID: "web", Path: "/", Upstream: "web"}}}},
		Upstreams: []config.Upstream{upstreamOf("web", upstreamServer(t, "web"))},
	}
	d := startWithDoc(t, doc, "-access-log", "off")
	c := &http.Client{Transport: d.tr, Timeout: 10 * time.Second}
	res, err := c.Post("http://"+d.admin+"/simulate", "application/json", strings.NewReader(`{"probe": {"url": "http://app.test/x"}}`))
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	var out struct {
		Outcome struct {
			Kind     string `json:"kind"`
			Route    string `json:"route"`
			Upstream struct {
				ID string `json:"id"`
			} `json:"upstream"`
		} `json:"outcome"`
		Trace []json.RawMessage `json:"trace"`
	}
	require.NoError(t, json.NewDecoder(res.Body).Decode(&out))
	assert.Equal(t, "web", out.Outcome.Route)
	assert.Equal(t, "web", out.Outcome.Upstream.ID)
	assert.NotEmpty(t, out.Trace)
	f := d.scrape(t)
	_, counted := f["paduraksa_requests_total"]
	assert.False(t, counted, "a simulation is no request")
}
