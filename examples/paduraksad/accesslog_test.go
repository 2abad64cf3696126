package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// accessRecords returns the access-log records (msg "request") among the
// JSON lines of out.
func accessRecords(t *testing.T, out string) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m["msg"] == "request" {
			recs = append(recs, m)
		}
	}
	return recs
}

// TestDaemonAccessLog: the daemon logs one JSON record per request to a
// file by flag; a stopped upstream's 502 carries its error kind, upstream
// and destination; a host with accessLog: false is left out.
func TestDaemonAccessLog(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stopped := ln.Addr().String()
	ln.Close()
	off := false
	doc := config.Document{
		Hosts: []config.Host{
			{Names: []string{"app.test"}, Routes: []config.Route{{ID: "web", Path: "/", Upstream: "web"}, {ID: "gone", Path: "/gone", Upstream: "gone"}}},
			{Names: []string{"quiet.test"}, AccessLog: &off, Routes: []config.Route{{Path: "/", Upstream: "web"}}},
		},
		Upstreams: []config.Upstream{upstreamOf("web", upstreamServer(t, "web")), upstreamOf("gone", stopped)},
	}
	file := filepath.Join(t.TempDir(), "access.log")
	d := startWithDoc(t, doc, "-access-log", file)
	st, _ := d.get(t, "app.test", "/hello")
	require.Equal(t, 200, st)
	st, _ = d.get(t, "app.test", "/gone/x")
	require.Equal(t, 502, st)
	st, _ = d.get(t, "quiet.test", "/")
	require.Equal(t, 200, st)
	st, _ = d.get(t, "nobody.test", "/")
	require.Equal(t, 404, st)

	var recs []map[string]any
	waitFor(t, "three access-log records", func() bool {
		b, err := os.ReadFile(file)
		require.NoError(t, err)
		recs = accessRecords(t, string(b))
		return len(recs) >= 3
	})
	require.Len(t, recs, 3, "quiet.test is left out")
	assert.Equal(t, "/hello", recs[0]["path"])
	assert.EqualValues(t, 200, recs[0]["status"])
	assert.Equal(t, "web", recs[0]["route"])
	assert.Equal(t, "web", recs[0]["upstream"])
	assert.Equal(t, "d0", recs[0]["destination"])
	assert.Equal(t, "127.0.0.1", recs[0]["client"])
	assert.Equal(t, "HTTP/1.1", recs[0]["proto"])

	assert.EqualValues(t, 502, recs[1]["status"])
	assert.Equal(t, "connectError", recs[1]["error"])
	assert.Equal(t, "gone", recs[1]["upstream"])
	assert.Equal(t, "d0", recs[1]["destination"])

	assert.EqualValues(t, 404, recs[2]["status"])
	assert.Equal(t, "nobody.test", recs[2]["host"])
	assert.NotContains(t, d.logs.String(), `"msg":"request"`, "the file has them, stderr does not")
}

// TestDaemonWhatIf: with -what-if, a reload replays the sampled recent
// requests against the new document first and logs how many change.
func TestDaemonWhatIf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	writeConfig(t, path, upstreamServer(t, "A"), "app.test")
	d := startDaemon(t, "-config", path, "-watch", "0", "-what-if")
	// One request in 8 is sampled, at random: 100 leave none with a
	// chance of one in 600 000.
	for range 100 {
		st, _ := d.get(t, "app.test", "/")
		require.Equal(t, 200, st)
	}
	writeConfig(t, path, upstreamServer(t, "B"), "other.test")
	d.reload <- os.Interrupt
	waitFor(t, "the renamed host", func() bool { s, _ := d.get(t, "other.test", "/"); return s == 200 })
	logs := d.logs.String()
	i := strings.Index(logs, "what-if: ")
	require.GreaterOrEqual(t, i, 0, logs)
	line := logs[i : i+strings.IndexByte(logs[i:], '\n')]
	var compared, changed int
	_, err := fmt.Sscanf(line, "what-if: %d requests compared, %d change", &compared, &changed)
	require.NoError(t, err, line)
	assert.Positive(t, compared, line)
	assert.Equal(t, compared, changed, "every sampled request was for the host the reload renamed: %s", line)
	assert.Contains(t, line, "host", line)
}
