package main

// Weighted, sticky and forced backends and mirroring through the daemon:
// real upstreams that answer with their name, a mirror that records the
// copies it receives or hangs, and the daemon's own clients, access log
// and metrics.

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/promtest"
)

// backend answers with its name, the X-Route it received in X-Seen-Route,
// and its /healthz with 503 while down is set.
type backend struct {
	addr string
	down atomic.Bool
}

func startBackend(t *testing.T, name string) *backend {
	t.Helper()
	b := &backend{}
	b.addr = serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			if b.down.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		w.Header().Set("X-Seen-Route", r.Header.Get("X-Route"))
		io.WriteString(w, name)
	})})
	return b
}

// splitDoc splits app.test between stable and canary by weight, sticky by
// the cookie canary-side, forced to canary by X-Canary: always, with the
// route's header rules; both upstreams are probed every 50ms.
func splitDoc(stable, canary string, rule string) config.Document {
	ninety, ten := 90, 10
	probe := config.HealthCheck{Active: config.ActiveHealth{Enabled: true, Interval: "50ms", Timeout: "5s", Path: "/healthz", Threshold: 1}}
	st, ca := upstreamOf("stable", stable), upstreamOf("canary", canary)
	st.Health, ca.Health = probe, probe
	return config.Document{
		Hosts: []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{
			ID:       "web",
			Backends: []config.Backend{{Upstream: "stable", Weight: &ninety}, {Upstream: "canary", Weight: &ten}},
			Split: config.Split{
				Sticky: config.Sticky{Cookie: "canary-side"},
				Force:  []config.Force{{Header: "X-Canary", Value: "always", Upstream: "canary"}},
			},
			Headers: config.Headers{
				Request:  []config.HeaderRule{{Name: "X-Route", Value: rule}},
				Response: []config.HeaderRule{{Name: "X-Answered-By", Value: "gateway"}},
			},
		}}}},
		Upstreams: []config.Upstream{st, ca},
	}
}

// ask sends GET / to app.test with hdr (name, value pairs) and returns
// the side that answered, after checking the header rules both ways.
func (d *daemon) ask(t *testing.T, rule string, hdr ...string) string {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+d.addr+"/", nil)
	require.NoError(t, err)
	req.Host = "app.test"
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	res, err := (&http.Client{Transport: d.tr, Timeout: 10 * time.Second}).Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, 200, res.StatusCode, string(b))
	assert.Equal(t, rule, res.Header.Get("X-Seen-Route"), "the side got the route's request rules")
	assert.Equal(t, "gateway", res.Header.Get("X-Answered-By"), "the client gets the route's response rules from %s", b)
	return string(b)
}

func cookie(key string) []string { return []string{"Cookie", "canary-side=" + key} }

func TestBackendsThroughTheDaemon(t *testing.T) {
	stable, canary := startBackend(t, "stable"), startBackend(t, "canary")
	d := startWithDoc(t, splitDoc(stable.addr, canary.addr, "one"))

	// By weight: the Weyl sequence holds 90/10 within a request or two.
	n := 0
	for range 1000 {
		if d.ask(t, "one") == "canary" {
			n++
		}
	}
	assert.InDelta(t, 100, n, 2, "canary's share of 1000 requests")

	// Sticky: each key stays on its side; both sides have keys.
	side := map[string]string{}
	count := map[string]int{}
	for k := range 60 {
		key := "user-" + strconv.Itoa(k)
		side[key] = d.ask(t, "one", cookie(key)...)
		count[side[key]]++
	}
	require.Positive(t, count["canary"], "some keys land on canary")
	require.Positive(t, count["stable"])
	for range 3 {
		for key, s := range side {
			require.Equal(t, s, d.ask(t, "one", cookie(key)...), "key %s flipped", key)
		}
	}

	// Forcing wins over the key.
	var onStable, onCanary string
	for key, s := range side {
		if s == "stable" {
			onStable = key
		} else {
			onCanary = key
		}
	}
	assert.Equal(t, "canary", d.ask(t, "one", append(cookie(onStable), "X-Canary", "always")...))
	assert.Equal(t, "stable", d.ask(t, "one", append(cookie(onStable), "X-Canary", "never")...))

	// A publish that keeps the weights keeps every key on its side.
	data, err := json.Marshal(splitDoc(stable.addr, canary.addr, "two"))
	require.NoError(t, err)
	status, res := d.push(t, string(data))
	require.Equal(t, 200, status, "%+v", res)
	for key, s := range side {
		require.Equal(t, s, d.ask(t, "two", cookie(key)...), "key %s flipped across the publish", key)
	}

	// Canary goes unhealthy: its keys go to stable, stable's stay; and
	// back when it recovers.
	canary.down.Store(true)
	waitFor(t, "canary's keys on stable", func() bool { return d.ask(t, "two", cookie(onCanary)...) == "stable" })
	for key := range side {
		require.Equal(t, "stable", d.ask(t, "two", cookie(key)...), "key %s while canary is down", key)
	}
	canary.down.Store(false)
	waitFor(t, "canary's keys back", func() bool { return d.ask(t, "two", cookie(onCanary)...) == "canary" })
	for key, s := range side {
		require.Equal(t, s, d.ask(t, "two", cookie(key)...), "key %s once canary recovered", key)
	}

	waitFor(t, "the access log's split reasons", func() bool {
		l := d.logs.String()
		return strings.Contains(l, `"split":"weight"`) && strings.Contains(l, `"split":"sticky"`) &&
			strings.Contains(l, `"split":"forced"`) && strings.Contains(l, `"split":"fallback"`)
	})
	f := d.scrape(t)
	v, _ := promtest.Value(f, "paduraksa_route_backend_requests_total", "host", "app.test", "route", "web", "upstream", "canary", "reason", "forced")
	assert.Equal(t, 1.0, v)
	v, _ = promtest.Value(f, "paduraksa_route_backend_requests_total", "host", "app.test", "route", "web", "upstream", "canary", "reason", "weight")
	assert.Equal(t, float64(n), v, "the counts are kept across the publish")
	v, _ = promtest.Value(f, "paduraksa_route_backend_requests_total", "host", "app.test", "route", "web", "upstream", "stable", "reason", "fallback")
	assert.Positive(t, v)
}

// mirrorSink records the copies it receives; a request for /hang waits
// until the test ends.
type mirrorSink struct {
	addr    string
	copies  chan seenCopy
	hanging atomic.Int64
}

type seenCopy struct {
	method, uri, host, route, body string
}

func startMirrorSink(t *testing.T) *mirrorSink {
	t.Helper()
	m := &mirrorSink{copies: make(chan seenCopy, 16)}
	release := make(chan struct{})
	m.addr = serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			m.hanging.Add(1)
			<-release
			return
		}
		b, _ := io.ReadAll(r.Body)
		m.copies <- seenCopy{r.Method, r.RequestURI, r.Host, r.Header.Get("X-Route"), string(b)}
	})})
	t.Cleanup(func() { close(release) }) // before the server closes
	return m
}

func TestMirrorThroughTheDaemon(t *testing.T) {
	app := startBackend(t, "app")
	sink := startMirrorSink(t)
	doc := config.Document{
		Hosts: []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{
			ID: "m", Upstream: "app",
			Mirror:  &config.Mirror{Upstream: "shadow", MaxBodyBytes: 1024, MaxInFlight: 2, HostName: "shadow.internal"},
			Headers: config.Headers{Request: []config.HeaderRule{{Name: "X-Route", Value: "m"}}},
		}}}},
		Upstreams: []config.Upstream{upstreamOf("app", app.addr), upstreamOf("shadow", sink.addr)},
	}
	d := startWithDoc(t, doc)
	post := func(path, body string) {
		t.Helper()
		req, err := http.NewRequest("POST", "http://"+d.addr+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Host = "app.test"
		res, err := (&http.Client{Transport: d.tr, Timeout: 10 * time.Second}).Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode)
		require.Equal(t, "app", string(b))
	}

	// The copy: same method, path and query, the route's request rules,
	// the mirror's Host and the body.
	post("/echo?x=1", "hello mirror")
	select {
	case c := <-sink.copies:
		assert.Equal(t, seenCopy{"POST", "/echo?x=1", "shadow.internal", "m", "hello mirror"}, c)
	case <-time.After(10 * time.Second):
		t.Fatal("no copy reached the mirror")
	}

	// A body over maxBodyBytes is not copied, and counted.
	post("/big", strings.Repeat("b", 4096))
	post("/after", "")
	select {
	case c := <-sink.copies:
		assert.Equal(t, "/after", c.uri, "the large body's copy is skipped")
	case <-time.After(10 * time.Second):
		t.Fatal("no copy reached the mirror")
	}

	// A mirror that hangs delays no answer; two copies wait, the others
	// are dropped. (The copies above hold their places until their
	// answers are read.)
	waitFor(t, "no copy in flight", func() bool {
		v, _ := promtest.Value(d.scrape(t), "paduraksa_route_mirror_in_flight", "host", "app.test", "route", "m")
		return v == 0
	})
	for range 5 {
		start := time.Now()
		post("/hang", "")
		assert.Less(t, time.Since(start), 5*time.Second, "the client's answer waits for no copy")
	}
	waitFor(t, "two copies hanging", func() bool { return sink.hanging.Load() == 2 })
	f := d.scrape(t)
	for _, c := range []struct {
		result string
		n      float64
	}{{"sent", 4}, {"tooLarge", 1}, {"dropped", 3}} {
		v, _ := promtest.Value(f, "paduraksa_route_mirror_total", "host", "app.test", "route", "m", "result", c.result)
		assert.Equal(t, c.n, v, c.result)
	}
	v, _ := promtest.Value(f, "paduraksa_route_mirror_in_flight", "host", "app.test", "route", "m")
	assert.Equal(t, 2.0, v)
	v, _ = promtest.Value(f, "paduraksa_upstream_requests_total", "upstream", "app", "outcome", "success")
	assert.Equal(t, 8.0, v, "every request reached the primary")
	waitFor(t, "the access log's mirror results", func() bool {
		l := d.logs.String()
		return strings.Count(l, `"mirror":"sent"`) == 4 && strings.Count(l, `"mirror":"dropped"`) == 3 && strings.Count(l, `"mirror":"tooLarge"`) == 1
	})
}
