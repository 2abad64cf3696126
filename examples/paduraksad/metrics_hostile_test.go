package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetricsAndLogUnderHostileSpellings: requests written by hand over
// raw sockets, in several spellings of the host (case, trailing dot,
// port, underscores, duplicates, junk) and of the path (escapes, case,
// parameters, dot segments), count under the config's own labels only,
// one label value for every name no host has, and the access log shows
// each path as it was sent, not decoded.
func TestMetricsAndLogUnderHostileSpellings(t *testing.T) {
	doc := config.Document{
		Hosts: []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{
			{ID: "api", Path: "/api", Upstream: "web"}, {ID: "web", Path: "/", Upstream: "web"},
		}}},
		Upstreams: []config.Upstream{upstreamOf("web", upstreamServer(t, "web"))},
	}
	logFile := filepath.Join(t.TempDir(), "access.log")
	d := startWithDoc(t, doc, "-access-log", logFile)

	api := []string{"/api/x", "/API/x", "/%61pi/x", "/api;v=1/x", "/Api/%78"}
	for _, host := range []string{"app.test", "APP.TEST", "app.test.", "App.Test:8080"} {
		for _, p := range api {
			require.Equal(t, 200, roundTrip(t, d.addr, get(host, p)).status, host+p)
		}
	}
	// Refused by the gate for the host: counted as app.test's, outside
	// any route.
	for _, p := range []string{"/%2e%2e/api", "/api/%2e%2e/x", "/a%00b"} {
		require.Equal(t, 400, roundTrip(t, d.addr, get("app.test", p)).status, p)
	}
	// Names no host has, however many: one label value.
	for i := range 30 {
		require.Equal(t, 404, roundTrip(t, d.addr, get("evil-"+strconv.Itoa(i)+".test", "/")).status)
	}
	for _, host := range []string{"app_test", "app.test..", "xn--app-.test", strings.Repeat("a", 250) + ".test"} {
		require.Equal(t, 404, roundTrip(t, d.addr, get(host, "/api/x")).status, host)
	}
	// Refused before the gate by net/http: no request, no record.
	require.Equal(t, 400, roundTrip(t, d.addr, "GET /api/x HTTP/1.1\r\nHost: app.test\r\nHost: evil.test\r\nConnection: close\r\n\r\n").status)

	f := d.scrape(t)
	assert.Equal(t, 20.0, metric(t, f, "paduraksa_requests_total", "host", "app.test", "route", "api", "code", "200"))
	assert.Equal(t, 3.0, metric(t, f, "paduraksa_requests_total", "host", "app.test", "route", "(none)", "code", "400"))
	assert.Equal(t, 34.0, metric(t, f, "paduraksa_requests_total", "host", "(unknown)", "route", "", "code", "404"))
	for _, m := range f["paduraksa_requests_total"].Metric {
		for _, l := range m.Label {
			switch l.GetName() {
			case "host":
				assert.Contains(t, []string{"app.test", "(unknown)"}, l.GetValue(), "a label value from the client")
			case "route":
				assert.Contains(t, []string{"api", "web", "(none)", ""}, l.GetValue(), "a label value from the client")
			}
		}
	}

	var recs []map[string]any
	waitFor(t, "every access-log record", func() bool {
		b, err := os.ReadFile(logFile)
		require.NoError(t, err)
		recs = accessRecords(t, string(b))
		return len(recs) >= 57
	})
	paths := map[string]bool{}
	for _, r := range recs {
		paths[r["path"].(string)] = true
	}
	for _, p := range append(api, "/%2e%2e/api", "/api/%2e%2e/x", "/a%00b") {
		assert.True(t, paths[p], "%s is logged as sent", p)
	}
	assert.False(t, paths["/../api"], "a decoded spelling is not what was sent")
}
