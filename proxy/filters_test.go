package proxy_test

import (
	"bytes"
	"io"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/upstream"
)

// records keeps the error kind and status of every finished request.
type records struct {
	mu   sync.Mutex
	errs []string
	sts  []int
	done chan struct{}
}

func newRecords() *records { return &records{done: make(chan struct{}, 64)} }

func (l *records) ObserveRequest(rec *telemetry.Record) {
	l.mu.Lock()
	l.errs, l.sts = append(l.errs, rec.Error), append(l.sts, rec.Status)
	l.mu.Unlock()
	l.done <- struct{}{}
}

// last waits for the next record and returns its error kind and status.
func (l *records) last(t *testing.T) (string, int) {
	t.Helper()
	recv(t, l.done)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.errs[len(l.errs)-1], l.sts[len(l.sts)-1]
}

func TestRewriteFiltersReachTheUpstream(t *testing.T) {
	got := make(chan string, 1)
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.RequestURI }))
	for _, tc := range []struct {
		name   string
		prefix string
		rw     proxy.Rewrite
		in     string
		want   string
	}{
		{"replacePrefix", "/app", proxy.Rewrite{StripPrefix: "/app", ReplacePrefix: "/v2"}, "/APP/a;x/%7ec?q=1", "/v2/a;x/~c?q=1"},
		{"replacePrefix bare", "/app", proxy.Rewrite{StripPrefix: "/app", ReplacePrefix: "/v2/"}, "/app", "/v2"},
		{"replacePrefix root", "/app", proxy.Rewrite{StripPrefix: "/app", ReplacePrefix: "/"}, "/app/x", "/x"},
		{"path", "/old", proxy.Rewrite{Path: "/maintenance"}, "/old/deep/x?keep=1", "/maintenance?keep=1"},
		{"query", "/", proxy.Rewrite{Query: proxy.QueryRewrite{
			Set:    map[string]string{"a b": "1&2", "mode": "x"},
			Add:    map[string]string{"z": "last"},
			Remove: []string{"secret"},
		}}, "/q?first=1&a+b=old&secret=s&a%20b=again&m=%41&secret=t", "/q?first=1&a+b=1%262&m=%41&mode=x&z=last"},
		{"query untouched", "/", proxy.Rewrite{Query: proxy.QueryRewrite{Remove: []string{"secret"}}}, "/q?a=1&b=%zz", "/q?a=1&b=%zz"},
		{"query emptied", "/", proxy.Rewrite{Query: proxy.QueryRewrite{Remove: []string{"secret"}}}, "/q?secret=1", "/q"},
		{"query added", "/", proxy.Rewrite{Query: proxy.QueryRewrite{Add: map[string]string{"v": "2"}}}, "/q?v=1", "/q?v=1&v=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr, _ := setup{prefix: tc.prefix, route: proxy.RouteConfig{Rewrite: tc.rw}}.start(t, up)
			res, _ := do(t, addr, mustReq("GET", tc.in))
			assert.Equal(t, 200, res.StatusCode)
			assert.Equal(t, tc.want, recv(t, got))
		})
	}
}

func TestReplacedPrefixMapsTheLocationBack(t *testing.T) {
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/v2/next")
		w.WriteHeader(302)
	}))
	addr, _ := setup{prefix: "/app", route: proxy.RouteConfig{Rewrite: proxy.Rewrite{StripPrefix: "/app", ReplacePrefix: "/v2"}}}.start(t, up)
	res, _ := do(t, addr, mustReq("GET", "/app/x"))
	assert.Equal(t, "/app/next", res.Header.Get("Location"))
}

func TestCheckRewriteFilters(t *testing.T) {
	code := func(rw proxy.Rewrite) []string {
		return problemsOf(proxy.CheckRewrite(rw))
	}
	assert.Equal(t, []string{proxy.CodeRewriteReplacePrefixInvalid + " replacePrefix"}, code(proxy.Rewrite{StripPrefix: "/a", ReplacePrefix: "v2"}))
	assert.Equal(t, []string{proxy.CodeRewriteReplacePrefixInvalid + " replacePrefix"}, code(proxy.Rewrite{StripPrefix: "/a", ReplacePrefix: "/x/../y"}))
	assert.Equal(t, []string{proxy.CodeRewriteReplacePrefixConflict + " replacePrefix"}, code(proxy.Rewrite{StripPrefix: "/a", ReplacePrefix: "/b", AddPrefix: "/c"}))
	assert.Equal(t, []string{proxy.CodeRewritePathInvalid + " path"}, code(proxy.Rewrite{Path: "x"}))
	assert.Equal(t, []string{proxy.CodeRewritePathInvalid + " path"}, code(proxy.Rewrite{Path: "/a//b"}))
	assert.Equal(t, []string{proxy.CodeRewritePathConflict + " path"}, code(proxy.Rewrite{Path: "/a", StripPrefix: "/b"}))
	assert.Equal(t, []string{proxy.CodeRewriteQueryConflict + ` query.add["a"]`}, code(proxy.Rewrite{Query: proxy.QueryRewrite{Set: map[string]string{"a": "1"}, Add: map[string]string{"a": "2"}}}))
	assert.Equal(t, []string{proxy.CodeRewriteQueryNameInvalid + " query.remove[0]"}, code(proxy.Rewrite{Query: proxy.QueryRewrite{Remove: []string{""}}}))
	assert.Equal(t, []string{proxy.CodeRewriteQueryValueInvalid + ` query.set["a"]`}, code(proxy.Rewrite{Query: proxy.QueryRewrite{Set: map[string]string{"a": strings.Repeat("v", proxy.MaxQueryValueLen+1)}}}))
	many := make([]string, proxy.MaxQueryRules+1)
	for i := range many {
		many[i] = "n" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	assert.Equal(t, []string{proxy.CodeRewriteQueryTooMany + " query"}, code(proxy.Rewrite{Query: proxy.QueryRewrite{Remove: many}}))
	assert.Equal(t, []string{proxy.CodeTimeoutsPerTryInvalid + " perTry"}, problemsOf(proxy.CheckTimeouts(proxy.Timeouts{Request: time.Second, PerTry: 2 * time.Second})))
	assert.Equal(t, []string{proxy.CodeTimeoutsRequestInvalid + " request"}, problemsOf(proxy.CheckTimeouts(proxy.Timeouts{Request: -1})))
}

// slowUpstream answers after wait, or when the request or the test ends.
func slowUpstream(t *testing.T, wait time.Duration) string {
	t.Helper()
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	return listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(wait):
		case <-block:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "slow")
	}))
}

func TestRequestTimeoutAnswers504(t *testing.T) {
	up := slowUpstream(t, time.Hour)
	obs, log := new(recorder), newRecords()
	addr, _ := setup{cfg: gate.Config{AccessLog: log}, observer: obs, route: proxy.RouteConfig{Timeouts: proxy.Timeouts{Request: 200 * time.Millisecond}}}.start(t, up)
	start := time.Now()
	res, _ := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 504, res.StatusCode)
	assert.Less(t, time.Since(start), 5*time.Second)
	kind, status := log.last(t)
	assert.Equal(t, "requestTimeout", kind)
	assert.Equal(t, 504, status)
	assert.Equal(t, []upstream.Outcome{upstream.Timeout}, obs.outcomes(), "the destination was slow to answer")

	// In time, the same route answers.
	fast := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	addr, _ = setup{route: proxy.RouteConfig{Timeouts: proxy.Timeouts{Request: 2 * time.Second, PerTry: time.Second}}}.start(t, fast)
	for range 3 {
		res, body := do(t, addr, mustReq("GET", "/"))
		assert.Equal(t, 200, res.StatusCode)
		assert.Equal(t, "ok", body)
	}
}

func TestPerTryTimeoutMovesAGetNotAPost(t *testing.T) {
	slow := slowUpstream(t, time.Hour) // "a", tried first
	fast := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "fast") }))
	obs, log := new(recorder), newRecords()
	addr, _ := setup{cfg: gate.Config{AccessLog: log}, observer: obs, route: proxy.RouteConfig{
		Retry:    proxy.Retry{Attempts: 1},
		Timeouts: proxy.Timeouts{Request: 5 * time.Second, PerTry: 200 * time.Millisecond},
	}}.start(t, slow, fast)
	res, body := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "fast", body)
	log.last(t)
	assert.Equal(t, []upstream.Outcome{upstream.Timeout, upstream.Success}, obs.outcomes())

	req := mustReq("POST", "/")
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader([]byte("x"))), 1
	res, _ = do(t, addr, req)
	assert.Equal(t, 504, res.StatusCode, "a POST is not sent twice")
	kind, _ := log.last(t)
	assert.Equal(t, "timeout", kind, "the try's timeout, not the request's")
}

func TestStreamOutlivesTheRequestTimeout(t *testing.T) {
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for range 5 {
			time.Sleep(100 * time.Millisecond) // the upstream's pace, not a synchronisation
			io.WriteString(w, "data: x\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	addr, _ := setup{route: proxy.RouteConfig{Timeouts: proxy.Timeouts{Request: 150 * time.Millisecond, PerTry: 100 * time.Millisecond}}}.start(t, up)
	res, body := do(t, addr, mustReq("GET", "/"))
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, strings.Repeat("data: x\n\n", 5), body, "the head came in time: the stream runs past the timeout")
}

func TestSlowBodyAtTheRequestTimeoutIsTheClients(t *testing.T) {
	up := slowUpstream(t, 0)
	obs, log := new(recorder), newRecords()
	addr, _ := setup{cfg: gate.Config{AccessLog: log}, observer: obs, route: proxy.RouteConfig{Timeouts: proxy.Timeouts{Request: 200 * time.Millisecond}}}.start(t, up)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	go pw.Write([]byte("part")) // and never the rest
	req := mustReq("POST", "/")
	req.Body, req.ContentLength = pr, 100
	req.URL.Host, req.URL.Scheme, req.Host = addr, "http", "app.test"
	res, err := roundTrip(t, clientTransport(t), req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 408, res.StatusCode)
	kind, _ := log.last(t)
	assert.Equal(t, upstream.ClientBodyError.String(), kind)
	assert.Empty(t, obs.outcomes(), "a slow body is never held against the destination")
}

// forwardOwnTimed is forwardOwn on a route with both timeouts.
func forwardOwnTimed(tb testing.TB) func() {
	tb.Helper()
	canned, r, w := ownExchange(tb)
	_, cl := setup{}.start(tb, "127.0.0.1:1")
	cl.Transport = canned
	rt, err := proxy.NewRoute(proxy.RouteConfig{Cluster: cl, Timeouts: proxy.Timeouts{Request: time.Minute, PerTry: 30 * time.Second}})
	if err != nil {
		tb.Fatal(err)
	}
	rq := &gate.Request{Client: netip.MustParseAddr("192.0.2.10"), Scheme: "http"}
	return func() {
		clear(w.h)
		rt.Forward(w, r, rq)
	}
}

// BenchmarkForwardOwnTimeouts is BenchmarkForwardOwn on a route with a
// request and a per-try timeout: what its timer and contexts cost.
func BenchmarkForwardOwnTimeouts(b *testing.B) {
	f := forwardOwnTimed(b)
	b.ReportAllocs()
	for b.Loop() {
		f()
	}
}

// An event stream's head reaches the client as the upstream sent it, not
// with the first event: a client (EventSource's open, a readiness check)
// waits for it, and the first event may be long in coming.
func TestEventStreamHeadIsNotHeldForTheFirstEvent(t *testing.T) {
	first := make(chan struct{})
	t.Cleanup(func() { close(first) })
	up := listen(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-first:
		case <-r.Context().Done():
		}
	}))
	addr, _ := setup{}.start(t, up)
	req := mustReq("GET", "/")
	req.URL.Host, req.URL.Scheme, req.Host = addr, "http", "app.test"
	res, err := roundTrip(t, clientTransport(t), req)
	require.NoError(t, err, "the head arrives while the upstream holds the first event")
	defer res.Body.Close()
	assert.Equal(t, 200, res.StatusCode)
	assert.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
}
