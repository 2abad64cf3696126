package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewRefusesEveryProblem(t *testing.T) {
	_, err := New(Config{MaxDocumentBytes: -1, MaxPushes: -1})
	assert.Equal(t, []string{CodePublisherMissing + " publisher", CodeMaxDocumentInvalid + " maxDocumentBytes", CodeMaxPushesInvalid + " maxPushes"}, problem.CodePaths(err))
}

func TestPushThenGetConfig(t *testing.T) {
	a := newAPI(t, Config{})
	ans := a.do("GET", "/config", "")
	assert.Equal(t, 503, ans.status)
	assert.Equal(t, CodeNoConfig, errorCode(t, ans))

	doc := fixedDoc("app.test", "one")
	ans, res := a.push(doc)
	require.Equal(t, 200, ans.status, ans.body)
	assert.Equal(t, "applied", res.Status)
	assert.Equal(t, uint64(1), res.Revision)
	assert.Equal(t, uint64(1), res.Serving)
	assert.Equal(t, len(doc), res.Bytes)
	assert.False(t, res.Persisted, "no Persist: memory only")
	assert.Contains(t, res.Message, "memory only")
	assert.Equal(t, []Problem{}, res.Errors)
	assert.Equal(t, `"1"`, ans.header.Get("ETag"))
	e, ok := a.pub.Entry(1)
	require.True(t, ok)
	assert.True(t, e.Time.Equal(res.Time), "the time the history keeps")

	ans = a.do("GET", "/config", "")
	assert.Equal(t, 200, ans.status)
	assert.Equal(t, doc, ans.body, "served as it was pushed")
	assert.Equal(t, "application/yaml", ans.header.Get("Content-Type"))
	assert.Equal(t, `"1"`, ans.header.Get("ETag"))
	assert.Equal(t, "1", ans.header.Get("Paduraksa-Revision"))
	assert.Equal(t, "applied", ans.header.Get("Paduraksa-Status"))
	assert.Equal(t, "0", ans.header.Get("Paduraksa-Warnings"))
	_, err := http.ParseTime(ans.header.Get("Last-Modified"))
	assert.NoError(t, err)
	assert.Equal(t, 304, a.do("GET", "/config", "", "If-None-Match", `"1"`).status)
	assert.Equal(t, 200, a.do("GET", "/config", "", "If-None-Match", `"9"`).status)
	head := a.do("HEAD", "/config", "")
	assert.Equal(t, 200, head.status)
	assert.Empty(t, head.body)

	js := `{"hosts":[{"names":["app.test"],"kind":"fixed","fixed":{"status":200,"body":"two"}}]}`
	ans, res = a.push(js, "Content-Type", "application/json")
	require.Equal(t, 200, ans.status, ans.body)
	assert.Equal(t, "applied", res.Status)
	ans = a.do("GET", "/config", "")
	assert.Equal(t, js, ans.body)
	assert.Equal(t, "application/json", ans.header.Get("Content-Type"))

	// The same document again changes nothing.
	ans, res = a.push(js)
	assert.Equal(t, 200, ans.status)
	assert.Equal(t, "unchanged", res.Status)
	assert.Equal(t, uint64(2), res.Serving)

	// A document published as a Go value is served as canonical JSON.
	o, err := a.pub.Apply(testContext(t), &config.Document{})
	require.NoError(t, err)
	ans = a.do("GET", "/config", "")
	assert.Equal(t, "application/json", ans.header.Get("Content-Type"))
	assert.Equal(t, fmt.Sprintf(`"%d"`, o.Revision), ans.header.Get("ETag"))
	assert.JSONEq(t, `{}`, ans.body)
}

func TestPushRefusedListsEveryProblem(t *testing.T) {
	a := newAPI(t, Config{})
	good := fixedDoc("app.test", "one")
	ans, _ := a.push(good)
	require.Equal(t, 200, ans.status)

	bad := "hosts:\n  - names: [app.test]\n    routes: [{upstream: missing}]\n    bogus: 1\nupstreams:\n  - id: a\n    destinations: [{id: d, address: 'ftp://x'}]\n"
	ans, res := a.push(bad)
	assert.Equal(t, 422, ans.status)
	assert.Equal(t, "refused", res.Status)
	assert.Equal(t, uint64(2), res.Revision)
	assert.Equal(t, uint64(1), res.Serving, "the old config keeps serving")
	assert.Equal(t, []string{
		"document.field.unknown hosts[0].bogus",
		"upstream.destination.address.invalid upstreams[0].destinations[0].address",
		"route.upstream.unknown hosts[0].routes[0].upstream",
	}, codePaths(res.Errors))
	for _, p := range res.Errors {
		assert.NotEmpty(t, p.Message)
	}
	assert.Empty(t, ans.header.Get("ETag"))
	assert.Equal(t, good, a.do("GET", "/config", "").body)
}

func TestPushIfMatch(t *testing.T) {
	a := newAPI(t, Config{})
	ans, res := a.push(fixedDoc("app.test", "x"), "If-Match", "*")
	assert.Equal(t, 412, ans.status, "nothing serves: * matches nothing")
	assert.Equal(t, "stale", res.Status)
	assert.Equal(t, []string{CodeRevisionStale}, codePaths(res.Errors))

	ans, res = a.push(fixedDoc("app.test", "one"), "If-Match", `"0"`)
	require.Equal(t, 200, ans.status, "0 is the revision of no config")
	require.Equal(t, uint64(1), res.Revision, "the refusal of * was answered before publishing")

	ans, res = a.push(fixedDoc("app.test", "two"), "If-Match", `"1"`)
	require.Equal(t, 200, ans.status, ans.body)
	assert.Equal(t, "applied", res.Status)

	// Based on revision 1, which no longer serves.
	ans, res = a.push(fixedDoc("app.test", "three"), "If-Match", `"1"`)
	assert.Equal(t, 412, ans.status)
	assert.Equal(t, "application/json", ans.header.Get("Content-Type"))
	assert.Equal(t, "stale", res.Status)
	assert.Equal(t, uint64(2), res.Serving)
	assert.Equal(t, []string{CodeRevisionStale}, codePaths(res.Errors))
	assert.Contains(t, res.Errors[0].Message, "revision 2 is serving")
	assert.Contains(t, a.do("GET", "/config", "").body, "two")

	ans, _ = a.push(fixedDoc("app.test", "four"), "If-Match", "2") // bare
	assert.Equal(t, 200, ans.status)
	ans, _ = a.push(fixedDoc("app.test", "five"), "If-Match", "*")
	assert.Equal(t, 200, ans.status)

	for _, v := range []string{`W/"6"`, "six", `"6", "7"`, `""`, "-1"} {
		ans = a.do("PUT", "/config", fixedDoc("app.test", "x"), "If-Match", v)
		assert.Equal(t, 400, ans.status, v)
		assert.Equal(t, CodeIfMatchInvalid, errorCode(t, ans), v)
	}
}

// TestPushUnchangedIsTheServingRevision: a push of the serving document
// takes no revision of its own, so the revision its answer names is the
// serving one and the next push's If-Match; an unchanged push based on
// the ETag of an answer is unchanged again, not stale.
func TestPushUnchangedIsTheServingRevision(t *testing.T) {
	a := newAPI(t, Config{})
	one := fixedDoc("app.test", "one")
	ans, res := a.push(one)
	require.Equal(t, 200, ans.status, ans.body)
	require.Equal(t, "applied", res.Status)

	ans, res = a.push(one)
	require.Equal(t, 200, ans.status, ans.body)
	require.Equal(t, "unchanged", res.Status)
	assert.Equal(t, res.Serving, res.Revision, "the answer names the serving revision")
	assert.Equal(t, etag(res.Serving), ans.header.Get("ETag"))

	ifMatch := strconv.Quote(strconv.FormatUint(res.Revision, 10))
	ans, res = a.push(fixedDoc("app.test", "two"), "If-Match", ifMatch)
	require.Equal(t, 200, ans.status, "If-Match %s from the unchanged answer: %s", ifMatch, ans.body)
	assert.Equal(t, "applied", res.Status)
	assert.Equal(t, uint64(2), res.Revision, "the unchanged push took no number")

	ans, res = a.push(fixedDoc("app.test", "two"), "If-Match", ans.header.Get("ETag"))
	require.Equal(t, 200, ans.status, ans.body)
	assert.Equal(t, "unchanged", res.Status)
	ans, res = a.push(fixedDoc("app.test", "three"), "If-Match", ans.header.Get("ETag"))
	require.Equal(t, 200, ans.status, ans.body)
	assert.Equal(t, uint64(3), res.Revision)
	assert.Contains(t, a.do("GET", "/config", "").body, "three")
}

// Pushes racing on one revision: exactly one applies, every other is
// told it is stale (MaxPushes lets them all in).
func TestPushIfMatchRace(t *testing.T) {
	const n = 6
	a := newAPI(t, Config{MaxPushes: n})
	ans, _ := a.push(fixedDoc("app.test", "base"))
	require.Equal(t, 200, ans.status)
	statuses := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req, err := http.NewRequest("PUT", a.url+"/config", strings.NewReader(fixedDoc("app.test", fmt.Sprint(i))))
			if err != nil {
				return
			}
			req.Header.Set("If-Match", `"1"`)
			res, err := a.c.Do(req)
			if err != nil {
				return
			}
			res.Body.Close()
			statuses[i] = res.StatusCode
		})
	}
	wg.Wait()
	count := map[int]int{}
	for _, s := range statuses {
		count[s]++
	}
	assert.Equal(t, map[int]int{200: 1, 412: n - 1}, count)
}

func TestPushBodies(t *testing.T) {
	a := newAPI(t, Config{MaxDocumentBytes: 100})
	for _, tc := range []struct {
		name, body, ctype string
		status            int
		code              string
	}{
		{"empty", "", "", 400, CodeBodyEmpty},
		{"blank", " \n\t", "", 400, CodeBodyEmpty},
		{"too large", "hosts: []\n" + strings.Repeat("#", 100), "", 413, CodeBodyTooLarge},
		{"html", "{}", "text/html", 415, CodeContentType},
		{"multipart", "{}", "multipart/form-data; boundary=x", 415, CodeContentType},
		{"unparsable type", "{}", "application/", 415, CodeContentType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ans := a.do("PUT", "/config", tc.body, "Content-Type", tc.ctype)
			assert.Equal(t, tc.status, ans.status, ans.body)
			assert.Equal(t, tc.code, errorCode(t, ans))
		})
	}
	assert.Empty(t, a.pub.History(), "nothing was published")

	// What curl --data-binary sends, and the document types, are taken.
	for i, ct := range []string{"application/x-www-form-urlencoded", "application/yaml", "application/json; charset=utf-8", "text/plain", ""} {
		ans, res := a.push(fixedDoc("h.test", fmt.Sprint(i)), "Content-Type", ct)
		assert.Equal(t, 200, ans.status, ct)
		assert.Equal(t, "applied", res.Status, ct)
	}
}

func TestPersist(t *testing.T) {
	var mu sync.Mutex
	var saved []string
	fail := false
	a := newAPI(t, Config{Persist: func(_ context.Context, data []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errDisk
		}
		saved = append(saved, string(data))
		return nil
	}})
	one := fixedDoc("app.test", "one")
	ans, res := a.push(one)
	require.Equal(t, 200, ans.status)
	assert.True(t, res.Persisted)
	assert.Equal(t, "applied and saved", res.Message)
	a.push(one)                               // unchanged: nothing to save
	a.push("hosts: [{names: [x], bogus: 1}]") // refused: never saved
	mu.Lock()
	assert.Equal(t, []string{one}, saved)
	fail = true
	mu.Unlock()

	ans, res = a.push(fixedDoc("app.test", "two"))
	assert.Equal(t, 500, ans.status)
	assert.Equal(t, "applied", res.Status, "it serves, unsaved")
	assert.False(t, res.Persisted)
	assert.Equal(t, []string{CodePersistFailed}, codePaths(res.Errors))
	assert.Equal(t, "disk full", res.Errors[0].Message)
}

func TestTokenIsRequired(t *testing.T) {
	a := newAPI(t, Config{Token: "right-token"})
	for _, tc := range []struct {
		name, auth, code, challenge string
	}{
		{"none", "", CodeTokenMissing, `Bearer realm="paduraksa admin"`},
		{"basic", "Basic dXNlcjpwYXNz", CodeTokenMissing, `Bearer realm="paduraksa admin"`},
		{"empty bearer", "Bearer ", CodeTokenMissing, `Bearer realm="paduraksa admin"`},
		{"wrong", "Bearer wrong-token", CodeTokenInvalid, `Bearer realm="paduraksa admin", error="invalid_token"`},
		{"prefix", "Bearer right", CodeTokenInvalid, `Bearer realm="paduraksa admin", error="invalid_token"`},
		{"longer", "Bearer right-token-and-more", CodeTokenInvalid, `Bearer realm="paduraksa admin", error="invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{"/healthz", "/config", "/nope"} {
				ans := a.do("GET", path, "", "Authorization", tc.auth)
				assert.Equal(t, 401, ans.status, path)
				assert.Equal(t, tc.challenge, ans.header.Get("WWW-Authenticate"))
				assert.Equal(t, tc.code, errorCode(t, ans))
			}
			ans := a.do("PUT", "/config", "{}", "Authorization", tc.auth)
			assert.Equal(t, 401, ans.status)
			for _, path := range []string{"/upstreams/u/destinations/d/drain", "/upstreams/u/destinations/d/undrain"} {
				ans := a.do("POST", path, "", "Authorization", tc.auth)
				assert.Equal(t, 401, ans.status, path)
				assert.Equal(t, tc.code, errorCode(t, ans), path)
			}
		})
	}
	assert.Empty(t, a.pub.History(), "no unauthorized push was published")
	assert.Contains(t, a.do("GET", "/healthz", "").body, "Bearer <token>", "no HTML escaping")
	assert.Equal(t, 503, a.do("GET", "/healthz", "", "Authorization", "Bearer right-token").status)
	assert.Equal(t, 503, a.do("GET", "/healthz", "", "Authorization", "bearer right-token").status, "the scheme is case-insensitive")
}

func TestMethodsAndMounts(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "metrics here") })
	sim := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "simulate ", r.Method, " ", r.URL.Path) })
	with := newAPI(t, Config{Metrics: metrics, Simulate: sim})
	without := newAPI(t, Config{})
	for _, tc := range []struct {
		a            *api
		method, path string
		status       int
		allow, body  string
	}{
		{with, "DELETE", "/config", 405, "GET, HEAD, PUT", ""},
		{with, "POST", "/config", 405, "GET, HEAD, PUT", ""},
		{with, "PUT", "/revisions", 405, "GET, HEAD", ""},
		{with, "POST", "/health", 405, "GET, HEAD", ""},
		{with, "DELETE", "/healthz", 405, "GET, HEAD", ""},
		{with, "POST", "/metrics", 405, "GET, HEAD", ""},
		{with, "GET", "/metrics", 200, "", "metrics here"},
		{with, "POST", "/simulate", 200, "", "simulate POST /simulate"},
		{with, "GET", "/simulate/diff", 200, "", "simulate GET /simulate/diff"},
		{without, "GET", "/metrics", 404, "", ""},
		{without, "POST", "/simulate", 404, "", ""},
		{without, "GET", "/simulate/diff", 404, "", ""},
		{with, "GET", "/config/", 404, "", ""},
		{with, "GET", "/", 404, "", ""},
	} {
		ans := tc.a.do(tc.method, tc.path, "")
		assert.Equal(t, tc.status, ans.status, "%s %s", tc.method, tc.path)
		assert.Equal(t, tc.allow, ans.header.Get("Allow"), "%s %s", tc.method, tc.path)
		switch {
		case tc.body != "":
			assert.Equal(t, tc.body, ans.body)
		case tc.status == 405:
			assert.Equal(t, CodeMethodNotAllowed, errorCode(t, ans))
		case tc.status == 404:
			assert.Equal(t, CodeNotFound, errorCode(t, ans))
		}
	}
}

func TestRevisionsAndHealthz(t *testing.T) {
	a := newAPI(t, Config{})
	ans := a.do("GET", "/healthz", "")
	assert.Equal(t, 503, ans.status)
	assert.JSONEq(t, `{"status":"starting","serving":0}`, ans.body)

	a.push(fixedDoc("app.test", "one"))
	a.push("hosts: [{names: [x], bogus: 1}]")
	a.push(fixedDoc("app.test", "one"))
	ans = a.do("GET", "/revisions", "")
	require.Equal(t, 200, ans.status)
	var revs Revisions
	require.NoError(t, json.Unmarshal([]byte(ans.body), &revs))
	assert.Equal(t, uint64(1), revs.Serving)
	require.Len(t, revs.Revisions, 2)
	var got []string
	for _, o := range revs.Revisions {
		got = append(got, fmt.Sprint(o.Revision, " ", o.Status, " ", codePaths(o.Errors)))
		assert.False(t, o.Time.IsZero())
		assert.NotNil(t, o.Warnings)
	}
	assert.Equal(t, []string{"2 refused [document.field.unknown hosts[0].bogus host.routes.empty hosts[0].routes]", "1 applied []"}, got,
		"an unchanged push is the serving revision: not kept as one of its own")
	assert.Contains(t, ans.body, `"tookSeconds"`, "the documented names")

	ans = a.do("GET", "/healthz", "")
	assert.Equal(t, 200, ans.status)
	assert.JSONEq(t, `{"status":"serving","serving":1}`, ans.body)
}

func TestHealthShowsAFailedProbe(t *testing.T) {
	a := newAPI(t, Config{})
	live := httpServer(t)
	dead := refusedAddr(t)
	changes := make(chan health.Change, 16)
	cancel := a.pub.Health().Subscribe(func(c health.Change) { changes <- c })
	t.Cleanup(cancel)
	doc := fmt.Sprintf(`upstreams:
  - id: app
    health: {active: {enabled: true, interval: 20ms, timeout: 5s, threshold: 1}}
    destinations:
      - {id: alive, address: "http://%s"}
      - {id: dead, address: "http://%s"}
  - id: plain
    destinations: [{id: p, address: "http://%s"}]
`, live, dead, live)
	ans, _ := a.push(doc)
	require.Equal(t, 200, ans.status, ans.body)
	deadline := time.After(10 * time.Second)
	for seen := 0; seen < 2; {
		select {
		case c := <-changes:
			if c.Check == health.CheckActive && c.New != upstream.Unknown {
				seen++
			}
		case <-deadline:
			t.Fatal("no probe verdicts")
		}
	}

	ans = a.do("GET", "/health", "")
	require.Equal(t, 200, ans.status)
	var h Health
	require.NoError(t, json.Unmarshal([]byte(ans.body), &h), ans.body)
	require.Len(t, h.Clusters, 2)
	app, plain := h.Clusters[0], h.Clusters[1]
	assert.Equal(t, "app", app.ID)
	assert.True(t, app.Checked)
	assert.Equal(t, "normal", app.Mode)
	require.Len(t, app.Destinations, 2)
	alive, down := app.Destinations[0], app.Destinations[1]
	assert.Equal(t, "alive", alive.ID)
	assert.Equal(t, "healthy", alive.Health)
	assert.True(t, alive.Available)
	assert.Equal(t, "dead", down.ID)
	assert.Equal(t, "http://"+dead, down.Address)
	assert.Equal(t, "unhealthy", down.Health)
	assert.Equal(t, "unhealthy", down.Active)
	assert.Equal(t, "unknown", down.Passive)
	assert.False(t, down.Available)
	require.NotNil(t, down.LastChange)
	assert.Equal(t, "active", down.LastChange.Check)
	assert.Equal(t, "unknown", down.LastChange.From)
	assert.Equal(t, "unhealthy", down.LastChange.To)
	assert.Contains(t, down.LastChange.Reason, "connectError")
	assert.False(t, down.LastChange.Time.IsZero())

	assert.Equal(t, "plain", plain.ID)
	assert.False(t, plain.Checked, "no health block")
	assert.Equal(t, "unknown", plain.Destinations[0].Health)
	assert.True(t, plain.Destinations[0].Available)
	assert.Nil(t, plain.Destinations[0].LastChange)
	assert.NotContains(t, ans.body, `"lastChange": null`)
}

// httpServer is a loopback upstream that answers 200.
func httpServer(t *testing.T) string {
	t.Helper()
	srv := httptestServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	return srv
}
