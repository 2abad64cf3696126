package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clusterLimitDoc is a host whose one route has a cluster rate limit of
// 10 a minute for each client.
func clusterLimitDoc(t *testing.T, upstream string) string {
	path := filepath.Join(t.TempDir(), "fleet.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf(`hosts:
  - names: [fleet.test]
    policies: [per-client]
    routes:
      - path: /
        upstream: app
upstreams:
  - id: app
    destinations:
      - id: one
        address: http://%s
rateLimits:
  - id: per-client
    requests: 10
    period: 1m
    scope: shared
    buckets: cluster
`, upstream)), 0o644))
	return path
}

// startRedis runs Debian's redis-server on a free loopback port until
// the test ends (fleet/internal/redistest does the same for the fleet
// module, whose internal packages this module cannot import).
func startRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	require.NoError(t, err, "the daemon's fleet tests run against a real Redis: apt-get install -y redis-server (.ci/run does)")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--daemonize", "no")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, "redis-server to answer PING", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		fmt.Fprint(c, "PING\r\n")
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.TrimSpace(line) == "+PONG"
	})
	return "redis://" + addr
}

// TestDaemonClusterRateLimit: three daemons serving one document share
// its cluster limit through one Redis: 30 requests of one client, round
// robin, get the limit's 10 through, where three local limits would let
// 30 through.
func TestDaemonClusterRateLimit(t *testing.T) {
	url := startRedis(t)
	doc := clusterLimitDoc(t, upstreamServer(t, "app"))
	fleet := make([]*daemon, 3)
	for i := range fleet {
		// A deadline no load spike on a shared machine reaches: this is
		// about sharing; fleet/redislimit tests the deadline.
		fleet[i] = startDaemon(t, "-config", doc, "-https", "off", "-redis", url, "-redis-timeout", "1s")
	}
	counts := map[int]int{}
	for i := range 30 {
		status, _ := fleet[i%3].get(t, "fleet.test", "/")
		counts[status]++
	}
	assert.Equal(t, map[int]int{http.StatusOK: 10, http.StatusTooManyRequests: 20}, counts)
	for i, d := range fleet {
		assert.Contains(t, d.logs.String(), "cluster rate limits shared", "daemon %d", i)
		assert.NotContains(t, d.logs.String(), "store failing", "daemon %d", i)
	}
}

// TestDaemonClusterRateLimitNeedsRedis: without -redis, a document with
// a cluster limit is refused at start with the code and the path.
func TestDaemonClusterRateLimitNeedsRedis(t *testing.T) {
	doc := clusterLimitDoc(t, "127.0.0.1:9")
	var out, logs syncBuffer
	// A daemon that wrongly starts serves until this deadline, then
	// returns no error.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := run(ctx, []string{"-config", doc, "-listen", "127.0.0.1:0", "-https", "off", "-admin", ""}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "rateLimits[0].buckets")
	assert.Contains(t, err.Error(), "gate.rateLimit.store.missing")

	err = run(ctx, []string{"-config", doc, "-listen", "127.0.0.1:0", "-redis", "http://x"}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redislimit.url.invalid")

	f, err := parseFlags([]string{"-redis", "redis://127.0.0.1:1"}, &syncBuffer{})
	require.NoError(t, err)
	assert.Equal(t, defaultRedisPool, f.redisPool)
	err = run(ctx, []string{"-config", doc, "-listen", "127.0.0.1:0", "-redis", "redis://127.0.0.1:1", "-redis-pool", "-1"}, options{stdout: &out, stderr: &logs})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redislimit.poolSize.invalid")
}

// TestDaemonRedisDownAtStart: a Redis that does not answer at start is
// said once; the daemon serves, its cluster limit decided by the local
// bucket.
func TestDaemonRedisDownAtStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	ln.Close()
	d := startDaemon(t, "-config", clusterLimitDoc(t, upstreamServer(t, "app")), "-https", "off", "-redis", "redis://"+dead)
	counts := map[int]int{}
	for range 12 {
		status, _ := d.get(t, "fleet.test", "/")
		counts[status]++
	}
	assert.Equal(t, map[int]int{http.StatusOK: 10, http.StatusTooManyRequests: 2}, counts, "the local bucket's limit")
	assert.Contains(t, d.logs.String(), "redis not answering")
	assert.Equal(t, 1, strings.Count(d.logs.String(), "store failing"), d.logs.String())
	assert.NotContains(t, d.logs.String(), "redis unreachable", "the probe's first answer is the start's, said there")
}
