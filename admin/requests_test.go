package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
)

// TestRecentRequests: real requests through a published snapshot, kept
// by a real sample, read back newest first with their paths as received,
// filtered by host, status and upstream; bad filters get 400 at their
// name, and no credential the requests carried shows.
func TestRecentRequests(t *testing.T) {
	up := upstreamServer(t)
	sample := simulate.NewSample(simulate.SampleConfig{Every: 1})
	g := startGateway(t, admin.MetricsConfig{}, snapshot.Compiler{Observer: sample})
	g.publish(t, document(up.URL, "", false))

	send := func(host, path string) {
		req, err := http.NewRequest(http.MethodGet, g.url, nil)
		require.NoError(t, err)
		req.URL.Opaque = path // sent as is
		req.Host = host
		req.Header.Set("Authorization", "Bearer s3cret-token")
		req.Header.Set("Cookie", "sid=s3cret-cookie")
		res, err := g.client.Do(req)
		require.NoError(t, err)
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	send("app.test", "/api/a%2Fb/<script>")
	send("unknown.test", "/x")
	send("APP.test:8080", "/second")
	// The observer runs after the answer: wait until all three are kept.
	deadline := time.Now().Add(5 * time.Second)
	for sample.Len() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.Equal(t, 3, sample.Len())

	h, err := admin.New(admin.Config{Publisher: g.pub, Recent: sample.Recent, Token: "t"})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	get := func(query string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/requests"+query, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer t")
		res, err := g.client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	list := func(query string) admin.RecentRequests {
		t.Helper()
		status, body := get(query)
		require.Equal(t, 200, status, body)
		assert.NotContains(t, body, "s3cret")
		var out admin.RecentRequests
		require.NoError(t, json.Unmarshal([]byte(body), &out), body)
		return out
	}
	paths := func(rs admin.RecentRequests) []string {
		var out []string
		for _, r := range rs.Requests {
			out = append(out, r.Path)
		}
		return out
	}

	all := list("")
	assert.Equal(t, 3, all.Kept)
	assert.Equal(t, 3, all.Matched)
	assert.Equal(t, []string{"/second", "/x", "/api/a%2Fb/<script>"}, paths(all), "newest first, as received")
	first := all.Requests[2]
	assert.Equal(t, "GET", first.Method)
	assert.Equal(t, "app.test", first.Host)
	assert.Equal(t, "HTTP/1.1", first.Proto)
	assert.Equal(t, 400, first.Status, "the gate refuses an encoded slash")
	assert.Empty(t, first.Upstream)
	assert.Equal(t, 404, all.Requests[1].Status)
	last := all.Requests[0]
	assert.Equal(t, "APP.test:8080", last.Host, "as received")
	assert.Equal(t, 200, last.Status)
	assert.Equal(t, "app", last.Upstream)
	assert.Equal(t, "a1", last.Destination)
	assert.Equal(t, "127.0.0.1", last.Client)
	assert.NotZero(t, last.Time)

	assert.Equal(t, []string{"/second", "/api/a%2Fb/<script>"}, paths(list("?host=app.test")), "with or without the port, any case")
	assert.Equal(t, []string{"/second"}, paths(list("?host=app.test:8080")))
	assert.Equal(t, []string{"/x", "/api/a%2Fb/<script>"}, paths(list("?status=4xx")))
	assert.Equal(t, []string{"/x"}, paths(list("?status=404")))
	assert.Empty(t, paths(list("?status=0")))
	assert.Equal(t, []string{"/second"}, paths(list("?upstream=app&status=200")))
	one := list("?limit=1")
	assert.Equal(t, []string{"/second"}, paths(one))
	assert.Equal(t, 3, one.Matched)

	for query, path := range map[string]string{
		"?status=abc": "status", "?status=6xx": "status", "?status=42": "status", "?status=600": "status",
		"?limit=0": "limit", "?limit=x": "limit", "?limit=10001": "limit",
		"?host=": "host", "?host=a%20b": "host", "?upstream=" + strings.Repeat("u", 256): "upstream",
		"?status=200&status=404": "status", "?bogus=1": "bogus",
	} {
		status, body := get(query)
		assert.Equal(t, 400, status, query)
		var e admin.ErrorBody
		require.NoError(t, json.Unmarshal([]byte(body), &e), body)
		assert.Equal(t, admin.CodeFilterInvalid, e.Error.Code, query)
		assert.Equal(t, path, e.Error.Path, query)
	}
}

func TestRecentRequestsWithoutSample(t *testing.T) {
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{})
	t.Cleanup(func() { pub.Close() })
	h, err := admin.New(admin.Config{Publisher: pub})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://localhost/requests", nil))
	assert.Equal(t, 404, rec.Code)
	assert.Contains(t, rec.Body.String(), admin.CodeNotFound)
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "http://localhost/requests", nil))
	assert.Equal(t, 405, rec.Code)
}
