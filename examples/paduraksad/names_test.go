package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/balance"
)

// TestDaemonServesEveryLoadBalancingPolicy: every policy balance exports
// is taken by the daemon's document under its own name and serves.
// PreferLocalZone keeps requests in the gateway's zone while a local
// destination is up: before, no document could select zone-aware
// balancing (the document knew it as ZoneAware, which then failed to
// compile).
func TestDaemonServesEveryLoadBalancingPolicy(t *testing.T) {
	local, remote := upstreamServer(t, "local"), upstreamServer(t, "remote")
	var doc strings.Builder
	doc.WriteString("global: {zone: eu-1}\nhosts:\n")
	for _, p := range balance.PolicyNames() {
		fmt.Fprintf(&doc, "  - names: [%s.test]\n    routes: [{path: /, upstream: %s}]\n", strings.ToLower(p), p)
	}
	doc.WriteString("upstreams:\n")
	for _, p := range balance.PolicyNames() {
		fmt.Fprintf(&doc, `  - id: %s
    loadBalancing: %s
    destinations:
      - {id: a, address: "http://%s", metadata: {zone: eu-1}}
      - {id: b, address: "http://%s", metadata: {zone: us-1}}
`, p, p, local, remote)
	}
	path := filepath.Join(t.TempDir(), "policies.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc.String()), 0o644))
	d := startDaemon(t, "-config", path, "-watch", "0")

	for _, p := range balance.PolicyNames() {
		t.Run(p, func(t *testing.T) {
			seen := map[string]int{}
			for range 40 {
				status, body := d.get(t, strings.ToLower(p)+".test", "/")
				require.Equal(t, 200, status, body)
				seen[body]++
			}
			if p == balance.PolicyPreferLocalZone {
				assert.Equal(t, map[string]int{"local": 40}, seen, "the local zone takes every request")
			}
		})
	}
	assert.NotContains(t, d.logs.String(), "config refused")
}
