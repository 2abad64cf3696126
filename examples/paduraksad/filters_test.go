package main

// A route's filters and timeouts through the daemon: rewrites that reach
// a real upstream with the path and query the document says, redirects
// and fixed answers the gate gives itself, a redirect loop refused at
// push, and the request and per-try timeouts against upstreams that are
// slow to answer.

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/config"
)

// slowServer answers "slow" after wait, or nothing once the request
// ends.
func slowServer(t *testing.T, wait time.Duration) string {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(wait):
			io.WriteString(w, "slow")
		case <-r.Context().Done():
		case <-done:
		}
	})})
}

// eventServer sends a stream's head at once, then five events 100 ms
// apart.
func eventServer(t *testing.T) string {
	t.Helper()
	return serve(t, &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for range 5 {
			time.Sleep(100 * time.Millisecond) // the stream's pace
			io.WriteString(w, "data: tick\n\n")
			w.(http.Flusher).Flush()
		}
	})})
}

func filtersDoc(rec, slow, fast, events string) config.Document {
	pair := upstreamOf("pair", slow, fast)
	pair.LoadBalancing = "FirstAlphabetical" // d0, the slow one, first
	return config.Document{
		Hosts: []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{
			{ID: "v2", Path: "/app", Upstream: "rec", Rewrite: config.Rewrite{ReplacePrefix: "/v2"}},
			{ID: "page", Path: "/old-page", Upstream: "rec", Rewrite: config.Rewrite{Path: "/maintenance",
				Query: config.RewriteQuery{Set: map[string]string{"from": "old page"}, Add: map[string]string{"v": "2"}, Remove: []string{"token"}}}},
			{ID: "moved", Path: "/moved", Redirect: &config.RouteRedirect{Scheme: "https", Host: "new.test", Prefix: "/new", Status: 301},
				Headers: config.Headers{Response: []config.HeaderRule{{Name: "X-Moved", Value: "yes"}}}},
			{ID: "port", Path: "/port", Redirect: &config.RouteRedirect{Port: 8443, Path: "/landing"}},
			{ID: "down", Path: "/down", Fixed: &config.FixedAnswer{Status: 503, Body: "down for maintenance\n"},
				Headers: config.Headers{Response: []config.HeaderRule{{Name: "Retry-After", Value: "120"}}}},
			{ID: "slow", Path: "/slow", Upstream: "slow", Timeouts: config.RouteTimeouts{Request: "300ms"}},
			{ID: "try", Path: "/try", Upstream: "pair", Retry: config.RouteRetry{Attempts: 1}, Timeouts: config.RouteTimeouts{Request: "5s", PerTry: "300ms"}},
			{ID: "events", Path: "/events", Upstream: "events", Timeouts: config.RouteTimeouts{Request: "200ms"}},
		}}},
		Upstreams: []config.Upstream{upstreamOf("rec", rec), upstreamOf("slow", slow), pair, upstreamOf("events", events)},
	}
}

// send makes one request to the daemon, following no redirect, and
// returns the response with its body read.
func (d *daemon) send(t *testing.T, method, target string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+d.addr+target, body)
	require.NoError(t, err)
	req.Host = "app.test"
	c := &http.Client{Transport: d.tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

func TestFiltersAndTimeoutsThroughTheDaemon(t *testing.T) {
	rec := startRecorder(t, map[string]string{"/": "rec"})
	slow := slowServer(t, time.Hour)
	fast := upstreamServer(t, "fast")
	log := filepath.Join(t.TempDir(), "access.log")
	d := startWithDoc(t, filtersDoc(rec.addr, slow, fast, eventServer(t)), "-access-log", log)

	// Rewrites: what the upstream reads.
	for _, tc := range []struct{ in, sent string }{
		{"/app/users/7?x=1", "/v2/users/7?x=1"},
		{"/APP", "/v2"},
		{"/old-page/deep?token=s&keep=1", "/maintenance?keep=1&from=old+page&v=2"},
	} {
		res, body := d.send(t, "GET", tc.in, nil)
		assert.Equal(t, 200, res.StatusCode, tc.in)
		assert.Equal(t, "rec", body, tc.in)
		seen := rec.take()
		require.Len(t, seen, 1, tc.in)
		assert.Equal(t, tc.sent, seen[0].requestURI, tc.in)
	}

	// Redirects and fixed answers, with the route's response rules.
	res, _ := d.send(t, "GET", "/moved/a/b?q=1", nil)
	assert.Equal(t, 301, res.StatusCode)
	assert.Equal(t, "https://new.test/new/a/b?q=1", res.Header.Get("Location"))
	assert.Equal(t, "yes", res.Header.Get("X-Moved"))
	res, _ = d.send(t, "GET", "/port/x", nil)
	assert.Equal(t, 302, res.StatusCode)
	assert.Equal(t, "http://app.test:8443/landing", res.Header.Get("Location"))
	res, body := d.send(t, "GET", "/down/x", nil)
	assert.Equal(t, 503, res.StatusCode)
	assert.Equal(t, "down for maintenance\n", body)
	assert.Equal(t, "120", res.Header.Get("Retry-After"))
	assert.Empty(t, rec.take(), "no upstream is asked")

	// The request timeout: 504, logged as requestTimeout.
	start := time.Now()
	res, _ = d.send(t, "GET", "/slow", nil)
	assert.Equal(t, 504, res.StatusCode)
	assert.Less(t, time.Since(start), 5*time.Second)

	// The per-try timeout moves a GET to the other destination, not a POST.
	res, body = d.send(t, "GET", "/try", nil)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "fast", body)
	res, _ = d.send(t, "POST", "/try", strings.NewReader("x"))
	assert.Equal(t, 504, res.StatusCode)

	// A stream whose head came in time outlives the request timeout.
	res, body = d.send(t, "GET", "/events", nil)
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, strings.Repeat("data: tick\n\n", 5), body)

	var recs []map[string]any
	waitFor(t, "the access-log records", func() bool {
		b, err := os.ReadFile(log)
		require.NoError(t, err)
		recs = accessRecords(t, string(b))
		return len(recs) >= 10
	})
	byRoute := map[string][]map[string]any{}
	for _, r := range recs {
		id, _ := r["route"].(string)
		byRoute[id] = append(byRoute[id], r)
	}
	require.Len(t, byRoute["slow"], 1)
	assert.Equal(t, "requestTimeout", byRoute["slow"][0]["error"])
	require.Len(t, byRoute["try"], 2)
	assert.EqualValues(t, 200, byRoute["try"][0]["status"])
	assert.Equal(t, "d1", byRoute["try"][0]["destination"])
	assert.Equal(t, "timeout", byRoute["try"][1]["error"])
	require.Len(t, byRoute["moved"], 1)
	assert.EqualValues(t, 301, byRoute["moved"][0]["status"])
}

func TestRedirectLoopRefusedAtPush(t *testing.T) {
	d := startWithDoc(t, filtersDoc(upstreamServer(t, "a"), upstreamServer(t, "b"), upstreamServer(t, "c"), upstreamServer(t, "e")))
	doc := filtersDoc("127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4")
	doc.Hosts[0].Routes[2].Redirect = &config.RouteRedirect{Prefix: "/moved/again"}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	status, res := d.push(t, string(data))
	assert.Equal(t, 422, status)
	var got []string
	for _, p := range res.Errors {
		got = append(got, p.Code+" "+p.Path)
	}
	assert.Equal(t, []string{"gate.route.redirect.loop hosts[0].routes[2].redirect"}, got)
	res2, _ := d.send(t, "GET", "/moved/x", nil)
	assert.Equal(t, 301, res2.StatusCode, "the old document keeps serving")
}
