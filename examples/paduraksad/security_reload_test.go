package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecurityConfigWatch: a config file caught half-written by the
// watcher is not applied unless it stayed half-written for a whole watch
// period. Cut where it is, the document below is valid and leaves /secret
// open: the half ends just before the route's policies. The file is
// rewritten in place again and again (half, fsync, a pause of less than a
// watch period, the rest), while a client asks for /secret without pause.
//
// The watcher applies a change once two reads at least a period apart
// agree, so it applies a half only when the half stayed for a period: a
// pause that overslept on a loaded machine. The test measures each
// round's half, from the start of its write to the end of the rest's, and
// holds every 200 for /secret to a round whose half lasted a period or
// more, between a period after the half began and the moment the round's
// whole document was seen serving; any other 200 fails. Each round's
// half starts with its own comment, so the halves of two rounds never
// read alike, and at another phase of the polls, so a watcher that
// applies what it read once applies the half in some rounds, with no
// such window.
func TestSecurityConfigWatch(t *testing.T) {
	t.Parallel()
	up := startRecorder(t, map[string]string{"/": "open"})
	head := func(round int) string {
		return "# round " + strconv.Itoa(round) + `
upstreams:
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
	}
	const guard = "        policies: [no-loopback]\n"
	marker := func(round int) string {
		return "  - names: [round-" + strconv.Itoa(round) + ".test]\n    routes: [{path: /, upstream: app}]\n"
	}
	dir := t.TempDir()

	t.Run("the half is a valid document with /secret open", func(t *testing.T) {
		half := filepath.Join(dir, "half.yaml")
		require.NoError(t, os.WriteFile(half, []byte(head(0)), 0o644))
		d := startDaemon(t, "-config", half, "-watch", "0")
		assert.Equal(t, http.StatusOK, roundTrip(t, d.addr, get("app.test", "/secret")).status)
	})

	const period = 100 * time.Millisecond
	file := filepath.Join(dir, "paduraksa.yaml")
	require.NoError(t, os.WriteFile(file, []byte(head(0)+guard), 0o644))
	d := startDaemon(t, "-config", file, "-watch", period.String())
	require.Equal(t, http.StatusForbidden, roundTrip(t, d.addr, get("app.test", "/secret")).status)

	// opening is one answer 200 for /secret: the request was decided
	// between sent and got.
	type opening struct{ sent, got time.Time }
	var mu sync.Mutex
	var opened []opening
	var probes atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
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
			sent := time.Now()
			res, err := c.Do(req)
			if err != nil {
				continue
			}
			res.Body.Close()
			probes.Add(1)
			if res.StatusCode == http.StatusOK {
				mu.Lock()
				opened = append(opened, opening{sent, time.Now()})
				mu.Unlock()
			}
		}
	}()
	defer func() { stop(); wg.Wait() }()

	// round is one rewrite: the half was in the file at most from half to
	// rest, and the whole document served by served.
	type round struct{ half, rest, served time.Time }
	var rounds []round
	for i := range 10 {
		full := []byte(head(i) + guard + marker(i))
		cut := len(head(i))
		// The watcher's polls follow the publish of the round before, so
		// each round's half starts at another tenth of a period after it:
		// across the rounds, some poll falls inside a half. Like the
		// pause, this is the attack's timing, not a wait for an event.
		time.Sleep(period * time.Duration(i*3%10) / 10)
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_TRUNC, 0o644)
		require.NoError(t, err)
		var r round
		r.half = time.Now()
		_, err = f.Write(full[:cut])
		require.NoError(t, err)
		require.NoError(t, f.Sync())
		// The writer's pause is the attack, not a wait for an event.
		time.Sleep(period * 2 / 5)
		_, err = f.Write(full[cut:])
		require.NoError(t, err)
		r.rest = time.Now()
		require.NoError(t, f.Sync())
		require.NoError(t, f.Close())
		waitFor(t, "round "+strconv.Itoa(i)+"'s whole document", func() bool {
			return roundTrip(t, d.addr, get("round-"+strconv.Itoa(i)+".test", "/")).status == http.StatusOK
		})
		r.served = time.Now()
		rounds = append(rounds, r)
	}
	stop()
	wg.Wait()

	lasted := func(r round) bool { return r.rest.Sub(r.half) >= period }
	var stable int
	for _, r := range rounds {
		if lasted(r) {
			stable++
		}
	}
	var outside []opening
	for _, o := range opened {
		allowed := false
		for _, r := range rounds {
			allowed = allowed || lasted(r) && !o.got.Before(r.half.Add(period)) && !o.sent.After(r.served)
		}
		if !allowed {
			outside = append(outside, o)
		}
	}
	t.Logf("%d requests for /secret, %d answered 200 (%d within a window), %d of %d halves stayed a whole period",
		probes.Load(), len(opened), len(opened)-len(outside), stable, len(rounds))
	assert.Positive(t, probes.Load())
	if len(outside) > 0 {
		o, i := outside[0], 0 // the round whose half began last before the request
		for j, r := range rounds {
			if !r.half.After(o.sent) {
				i = j
			}
		}
		r := rounds[i]
		t.Errorf("%d of %d requests for /secret got 200 outside the windows where a half stayed a period; the first in round %d, "+
			"asked %v after its half began: the half lasted %v (the period is %v), the whole document served %v after it began",
			len(outside), probes.Load(), i, o.sent.Sub(r.half), r.rest.Sub(r.half), period, r.served.Sub(r.half))
	}
	assert.Equal(t, http.StatusForbidden, roundTrip(t, d.addr, get("app.test", "/secret")).status)
}
