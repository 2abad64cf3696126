package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// adminDo sends one request to the daemon's admin API; hdr holds header
// name and value pairs.
func (d *daemon) adminDo(t *testing.T, method, path, body string, hdr ...string) (int, http.Header, string) {
	t.Helper()
	require.NotEmpty(t, d.admin, "the admin API is off")
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+d.admin+path, r)
	require.NoError(t, err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{Transport: d.tr, Timeout: 10 * time.Second}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header, string(b)
}

// push PUTs a document to the admin API and decodes the answer.
func (d *daemon) push(t *testing.T, doc string, hdr ...string) (int, admin.PushResult) {
	t.Helper()
	status, _, body := d.adminDo(t, "PUT", "/config", doc, hdr...)
	var res admin.PushResult
	require.NoError(t, json.Unmarshal([]byte(body), &res), body)
	return status, res
}

// stop shuts the daemon down and waits for it, leaving its result for the
// test's cleanup.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cancel()
	select {
	case err := <-d.done:
		d.done <- err
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not shut down")
	}
}

// twoHosts is a config with app.test on upstream a and new.test on b.
func twoHosts(a, b string) string {
	return fmt.Sprintf(`hosts:
  - names: [app.test]
    routes: [{path: /, upstream: a}]
  - names: [new.test]
    routes: [{path: /, upstream: b}]
upstreams:
  - id: a
    destinations: [{id: one, address: "http://%s"}]
  - id: b
    destinations: [{id: one, address: "http://%s"}]
`, a, b)
}

func TestAdminPushIsServedAndSaved(t *testing.T) {
	a, b := upstreamServer(t, "A"), upstreamServer(t, "B")
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	writeConfig(t, path, a, "app.test")
	d := startDaemon(t, "-config", path, "-watch", "20ms")
	status, _ := d.get(t, "new.test", "/")
	require.Equal(t, 404, status)

	_, hdr, _ := d.adminDo(t, "GET", "/config", "")
	assert.Equal(t, `"1"`, hdr.Get("ETag"))
	doc := twoHosts(a, b)
	status, res := d.push(t, doc, "If-Match", `"1"`)
	require.Equal(t, 200, status, res)
	assert.Equal(t, "applied", res.Status)
	assert.Equal(t, uint64(2), res.Serving)
	assert.True(t, res.Persisted)
	status, body := d.get(t, "new.test", "/")
	assert.Equal(t, 200, status)
	assert.Equal(t, "B", body, "the pushed host answers")
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, doc, string(saved), "the push was written to -config")
	left, err := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary file is left")
	_, hdr, body = d.adminDo(t, "GET", "/config", "")
	assert.Equal(t, doc, body)
	assert.Equal(t, `"2"`, hdr.Get("ETag"))

	// The watcher knows the written file as applied: the next change of
	// the file is the next revision, with no republished push in between.
	writeConfig(t, path, b, "app.test")
	waitFor(t, "the edited file", func() bool { _, body := d.get(t, "app.test", "/"); return body == "B" })
	var revs admin.Revisions
	_, _, body = d.adminDo(t, "GET", "/revisions", "")
	require.NoError(t, json.Unmarshal([]byte(body), &revs))
	var got []string
	for _, o := range revs.Revisions {
		got = append(got, fmt.Sprint(o.Revision, " ", o.Status))
	}
	assert.Equal(t, []string{"3 applied", "2 applied", "1 applied"}, got)
	assert.Equal(t, uint64(3), revs.Serving)
	assert.Contains(t, d.logs.String(), "admin: config push")
	assert.Contains(t, d.logs.String(), "pushed config written")

	// A push survives a restart.
	status, _ = d.push(t, doc)
	require.Equal(t, 200, status)
	d.stop(t)
	again := startDaemon(t, "-config", path, "-watch", "0")
	status, body = again.get(t, "new.test", "/")
	assert.Equal(t, 200, status)
	assert.Equal(t, "B", body)
}

func TestAdminRefusesABadPushAndAStaleOne(t *testing.T) {
	a := upstreamServer(t, "A")
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	writeConfig(t, path, a, "app.test")
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	d := startDaemon(t, "-config", path, "-watch", "0")

	bad := "hosts:\n  - names: [app.test]\n    routes: [{path: /, upstream: missing}]\n    bogus: 1\nupstreams:\n  - id: x\n    destinations: [{id: d, address: 'ftp://nowhere'}]\n"
	status, res := d.push(t, bad)
	assert.Equal(t, 422, status)
	assert.Equal(t, "refused", res.Status)
	var got []string
	for _, p := range res.Errors {
		got = append(got, p.Code+" "+p.Path)
	}
	assert.Equal(t, []string{
		"document.field.unknown hosts[0].bogus",
		"upstream.destination.address.invalid upstreams[0].destinations[0].address",
		"route.upstream.unknown hosts[0].routes[0].upstream",
	}, got, "every problem")
	assert.False(t, res.Persisted)
	status, body := d.get(t, "app.test", "/")
	assert.Equal(t, 200, status)
	assert.Equal(t, "A", body, "the old config keeps serving")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "a refused push is not written")
	assert.Contains(t, d.logs.String(), "config refused; the previous config keeps serving")

	// Revision 2 was the refusal; revision 1 still serves.
	status, res = d.push(t, twoHosts(a, a), "If-Match", `"2"`)
	assert.Equal(t, 412, status)
	assert.Equal(t, "stale", res.Status)
	assert.Equal(t, uint64(1), res.Serving)
	status, _ = d.get(t, "new.test", "/")
	assert.Equal(t, 404, status, "the stale push was not applied")

	status, _, body = d.adminDo(t, "DELETE", "/config", "")
	assert.Equal(t, 405, status)
	assert.Contains(t, body, admin.CodeMethodNotAllowed)
	status, _, _ = d.adminDo(t, "PUT", "/config", "")
	assert.Equal(t, 400, status, "an empty body")
}

func TestAdminEmbeddedConfigPushIsInMemory(t *testing.T) {
	d := startDaemon(t)
	status, _, body := d.adminDo(t, "GET", "/healthz", "")
	assert.Equal(t, 200, status)
	assert.JSONEq(t, `{"status":"serving","serving":1}`, body)
	_, _, served := d.adminDo(t, "GET", "/config", "")
	assert.Contains(t, served, "status.localhost")
	assert.NotContains(t, served, "{{DEMO}}", "the document as it serves")

	status, res := d.push(t, "hosts:\n  - names: [localhost]\n    kind: fixed\n    fixed: {status: 200, body: \"pushed\\n\"}\n")
	require.Equal(t, 200, status, res)
	assert.Equal(t, "applied", res.Status)
	assert.False(t, res.Persisted)
	assert.Contains(t, res.Message, "memory only")
	status, body = d.get(t, "localhost", "/")
	assert.Equal(t, 200, status)
	assert.Equal(t, "pushed\n", body)
	assert.Contains(t, d.logs.String(), "pushed configs apply in memory only")
}

func TestAdminToken(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("  s3cret-token\n"), 0o600))
	d := startDaemon(t, "-admin", "127.0.0.1:0", "-admin-token-file", tokenFile)
	for _, auth := range []string{"", "Bearer wrong", "Bearer s3cret-token-but-longer"} {
		status, hdr, _ := d.adminDo(t, "GET", "/config", "", "Authorization", auth)
		assert.Equal(t, 401, status, auth)
		assert.True(t, strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer "), auth)
		status, _, _ = d.adminDo(t, "PUT", "/config", "{}", "Authorization", auth)
		assert.Equal(t, 401, status, auth)
	}
	status, _, _ := d.adminDo(t, "GET", "/healthz", "", "Authorization", "Bearer s3cret-token")
	assert.Equal(t, 200, status, "the file's surrounding space is not part of the token")
	status, _ = d.get(t, "localhost", "/hello")
	assert.Equal(t, 200, status, "nothing was pushed")
}

func TestAdminAddressChecksAtStart(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-admin", "0.0.0.0:9901"}, "-admin 0.0.0.0:9901 is not a loopback address"},
		{[]string{"-admin", ":9901"}, "-admin :9901 is not a loopback address"},
		{[]string{"-admin", "[::]:9901"}, "is not a loopback address"},
		{[]string{"-admin", "192.0.2.1:9901"}, "give a bearer token with -admin-token-file"},
		{[]string{"-admin", "localhost.example:9901"}, "-admin localhost.example:9901 is not a loopback address"},
		{[]string{"-admin", "localhostx:9901"}, "-admin localhostx:9901 is not a loopback address"},
		{[]string{"-admin", "127.0.0.1"}, "-admin \"127.0.0.1\""},
		{[]string{"-admin", "0.0.0.0:9901", "-admin-token-file", empty}, "is empty"},
		{[]string{"-admin-token-file", filepath.Join(t.TempDir(), "missing")}, "-admin-token-file"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var out, logs syncBuffer
		err := run(ctx, append([]string{"-listen", "127.0.0.1:0", "-https", "off"}, tc.args...), options{stdout: &out, stderr: &logs})
		cancel()
		require.Error(t, err, tc.args)
		assert.Contains(t, err.Error(), tc.msg, tc.args)
		assert.Empty(t, out.String(), "refused before anything started")
	}

	off := startDaemon(t, "-admin", "off")
	assert.Empty(t, off.admin)
	assert.NotContains(t, off.out.String(), "admin API")
}

func TestAdminSettings(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("tok\n"), 0o600))
	for _, tc := range []struct {
		addr, tokenFile string
		want            adminSettings
		err             string
	}{
		{"off", "", adminSettings{}, ""},
		{"", "", adminSettings{}, ""},
		{"127.0.0.1:9901", "", adminSettings{addr: "127.0.0.1:9901"}, ""},
		{"127.0.0.2:9901", "", adminSettings{addr: "127.0.0.2:9901"}, ""},
		{"[::1]:9901", "", adminSettings{addr: "[::1]:9901"}, ""},
		{"localhost:9901", "", adminSettings{addr: "localhost:9901"}, ""},
		{"0.0.0.0:9901", tokenFile, adminSettings{addr: "0.0.0.0:9901", token: "tok"}, ""},
		{"127.0.0.1:9901", tokenFile, adminSettings{addr: "127.0.0.1:9901", token: "tok"}, ""},
		{"admin.example:9901", "", adminSettings{}, "not a loopback address"},
		{"[::ffff:127.0.0.1]:9901", "", adminSettings{addr: "[::ffff:127.0.0.1]:9901"}, ""},
		{"[fe80::1%eth0]:9901", "", adminSettings{}, "not a loopback address"},
		// Only the name localhost itself, in any case, is loopback: a
		// name that starts with it resolves wherever its DNS says.
		{"LOCALHOST:9901", "", adminSettings{addr: "LOCALHOST:9901"}, ""},
		{"localhost.example:9901", "", adminSettings{}, "not a loopback address"},
		{"localhost.example:9901", tokenFile, adminSettings{addr: "localhost.example:9901", token: "tok"}, ""},
	} {
		addr, file := tc.addr, tc.tokenFile
		got, err := adminFlags{addr: &addr, tokenFile: &file}.settings()
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.addr)
			continue
		}
		assert.NoError(t, err, tc.addr)
		assert.Equal(t, tc.want, got, tc.addr)
	}
}

func TestAdminHealthShowsAStoppedUpstream(t *testing.T) {
	stable := upstreamServer(t, "stable")
	ln, srv := stoppableUpstream(t)
	doc := fmt.Sprintf(`hosts:
  - names: [app.test]
    routes: [{path: /, upstream: app}]
upstreams:
  - id: app
    health: {active: {enabled: true, interval: 50ms, timeout: 5s, threshold: 1}}
    destinations:
      - {id: stable, address: "http://%s"}
      - {id: flaky, address: "http://%s"}
`, stable, ln)
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	require.NoError(t, os.WriteFile(path, []byte(doc), 0o644))
	d := startDaemon(t, "-config", path, "-watch", "0")

	flaky := func() admin.Destination {
		_, _, body := d.adminDo(t, "GET", "/health", "")
		var h admin.Health
		require.NoError(t, json.Unmarshal([]byte(body), &h), body)
		require.Len(t, h.Clusters, 1)
		require.Len(t, h.Clusters[0].Destinations, 2)
		assert.Equal(t, "stable", h.Clusters[0].Destinations[1].ID, "ordered by ID")
		return h.Clusters[0].Destinations[0]
	}
	waitFor(t, "a passing probe", func() bool { return flaky().Health == "healthy" })
	srv.Close()
	waitFor(t, "the failed probe", func() bool { return flaky().Health == "unhealthy" })
	got := flaky()
	assert.Equal(t, "flaky", got.ID)
	assert.False(t, got.Available)
	require.NotNil(t, got.LastChange)
	assert.Equal(t, "active", got.LastChange.Check)
	assert.Equal(t, "healthy", got.LastChange.From)
	assert.Equal(t, "unhealthy", got.LastChange.To)
	assert.Contains(t, got.LastChange.Reason, "connectError")
	assert.WithinDuration(t, time.Now(), got.LastChange.Time, time.Minute)
	for range 3 {
		_, body := d.get(t, "app.test", "/")
		assert.Equal(t, "stable", body, "the unhealthy destination is out of rotation")
	}
}

// stoppableUpstream is an upstream answering "flaky" that the test stops
// by closing its server.
func stoppableUpstream(t *testing.T) (string, *http.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "flaky") })}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), srv
}
