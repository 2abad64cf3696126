package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecurityConfigWatch: a config file caught half-written by the
// watcher is never applied. Cut where it is, the document below is valid
// and leaves /secret open: the half ends just before the route's policies.
// The file is rewritten in place again and again (half, fsync, a pause of
// less than a watch period, the rest), while a client asks for /secret
// without pause: it must never get 200.
//
// The pause is shorter than the watch period so that a watcher that
// applies only what it read twice in a row, one period apart, never sees
// the half twice; one that applies what it read once sees it in about
// every other round.
func TestSecurityConfigWatch(t *testing.T) {
	t.Parallel()
	up := startRecorder(t, map[string]string{"/": "open"})
	head := `upstreams:
  - id: app
    destinations: [{id: one, address: "http://` + up.addr + `"}]
accessLists:
  - {id: no-loopback, deny: [127.0.0.0/8, "::1/128"]}
hosts:
  - names: [app.test]
    routes:
      - {path: /, upstream: app}
      - path: /secret
        upstream: app
`
	const guard = "        policies: [no-loopback]\n"
	const marker = "  - names: [v2.test]\n    routes: [{path: /, upstream: app}]\n"
	dir := t.TempDir()

	t.Run("the half is a valid document with /secret open", func(t *testing.T) {
		half := filepath.Join(dir, "half.yaml")
		require.NoError(t, os.WriteFile(half, []byte(head), 0o644))
		d := startDaemon(t, "-config", half, "-watch", "0")
		assert.Equal(t, http.StatusOK, roundTrip(t, d.addr, get("app.test", "/secret")).status)
	})

	const period = 100 * time.Millisecond
	file := filepath.Join(dir, "paduraksa.yaml")
	require.NoError(t, os.WriteFile(file, []byte(head+guard), 0o644))
	d := startDaemon(t, "-config", file, "-watch", period.String())
	require.Equal(t, http.StatusForbidden, roundTrip(t, d.addr, get("app.test", "/secret")).status)

	ctx, stop := context.WithCancel(context.Background())
	var probes, opened atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: wireTimeout}
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+d.addr+"/secret", nil)
			req.Host = "app.test"
			res, err := c.Do(req)
			if err != nil {
				continue
			}
			res.Body.Close()
			probes.Add(1)
			if res.StatusCode == http.StatusOK {
				opened.Add(1)
			}
		}
	}()
	defer func() { stop(); wg.Wait() }()

	full := []byte(head + guard + marker)
	cut := len(head)
	for round := range 10 {
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0o644)
		require.NoError(t, err)
		_, err = f.Write(full[:cut])
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		// The writer's pause is the attack, not a wait for an event.
		time.Sleep(period * 2 / 5)
		_, err = f.Write(full[cut:])
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
		if round == 0 {
			waitFor(t, "the whole document", func() bool {
				return roundTrip(t, d.addr, get("v2.test", "/")).status == http.StatusOK
			})
		}
		time.Sleep(period + period/5) // the whole file is read at least once
	}
	stop()
	wg.Wait()
	assert.Positive(t, probes.Load())
	assert.Zero(t, opened.Load(), "%d of %d requests for /secret got 200 while the file was being written", opened.Load(), probes.Load())
	assert.Equal(t, http.StatusForbidden, roundTrip(t, d.addr, get("app.test", "/secret")).status)
}
