package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/snapshot"
)

// serveHandler serves h on a loopback listener and returns a function
// that posts a body to a path and returns the status and the body.
func serveHandler(t *testing.T, h http.Handler) func(method, path, body string) (int, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: patienceTest}
	return func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), method, "http://"+ln.Addr().String()+path, strings.NewReader(body))
		require.NoError(t, err)
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
}

func errorCodes(t *testing.T, body string) []string {
	t.Helper()
	var out struct {
		Errors []wireError `json:"errors"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &out), body)
	var codes []string
	for _, e := range out.Errors {
		codes = append(codes, e.Code+" "+e.Path)
	}
	return codes
}

func TestHandlerSimulate(t *testing.T) {
	store := publish(t, diffBase, snapshot.Compiler{})
	post := serveHandler(t, NewHandler(HandlerConfig{Store: store, MaxRequestBytes: 1 << 16}))
	result := func(body string) Result {
		t.Helper()
		status, b := post("POST", "/simulate", body)
		require.Equal(t, http.StatusOK, status, b)
		var r Result
		require.NoError(t, json.Unmarshal([]byte(b), &r))
		return r
	}
	r := result(`{"probe": {"url": "http://api.example.com/v2/x", "peer": "10.1.1.1", "header": {"User-Agent": ["curl/8"]}}}`)
	assert.Equal(t, Forwarded, r.Outcome.Kind)
	assert.Equal(t, "v2", r.Outcome.Upstream.ID)
	assert.Equal(t, "10.1.1.1", r.Trace[1].Facts["client"])

	draft := `{"hosts": [{"names": ["api.example.com"], "routes": [{"path": "/", "upstream": "v3"}]}],
		"upstreams": [{"id": "v3", "destinations": [{"id": "c", "address": "http://127.0.0.1:11"}]}]}`
	r = result(`{"draft": ` + draft + `, "probe": {"url": "http://api.example.com/v2/x"}}`)
	assert.Equal(t, "v3", r.Outcome.Upstream.ID)
	assert.Equal(t, "the live gateway has no upstream v3: health unknown until the draft is published", r.Outcome.Upstream.Note)

	r = result(`{"revision": ` + jsonNumber(store.Load().Revision()) + `, "probe": {"url": "https://api.example.com/v1", "tls": {"version": "1.2"}}}`)
	assert.Equal(t, TLSRefused, r.Outcome.Kind, "the document serves no TLS")

	for _, tc := range []struct {
		method, path, body string
		status             int
		codes              []string
	}{
		{"POST", "/simulate", `{"probe": {"url": "ftp://x"}}`, 400, []string{CodeProbeURLInvalid + " probe.url"}},
		{"POST", "/simulate", `{"probe": {"url": "http://x/", "peer": "here", "tls": {"version": "9"}}}`, 400, []string{CodeProbePeerInvalid + " probe.peer", CodeProbeTLSVersionInvalid + " probe.tls.version"}},
		{"POST", "/simulate", `{}`, 400, []string{CodeRequestInvalid + " probe"}},
		{"POST", "/simulate", `{"probe": {"url": "http://x/"}, "bogus": 1}`, 400, []string{CodeRequestInvalid + " "}},
		{"POST", "/simulate", `{"probe": {"url": "http://x/"}} {}`, 400, []string{CodeRequestInvalid + " "}},
		{"POST", "/simulate", `not json`, 400, []string{CodeRequestInvalid + " "}},
		{"POST", "/simulate", `{"revision": 99, "probe": {"url": "http://x/"}}`, 404, []string{CodeRevisionUnknown + " revision"}},
		{"POST", "/simulate", `{"revision": 1, "draft": {}, "probe": {"url": "http://x/"}}`, 400, []string{CodeRequestInvalid + " revision"}},
		{"POST", "/simulate", `{"draft": {"hosts": [{"names": ["a.b"], "routes": [{"upstream": "x"}]}], "bogus": 1}, "probe": {"url": "http://x/"}}`, 422,
			[]string{"document.field.unknown bogus", "route.upstream.unknown hosts[0].routes[0].upstream"}},
		{"POST", "/simulate", `{"probe": {"url": "http://x/", "method": "` + strings.Repeat("A", 1<<16) + `"}}`, 413, []string{CodeRequestTooLarge + " "}},
		{"POST", "/simulate/diff", `{"probes": [{"url": "http://x/"}]}`, 400, []string{CodeRequestInvalid + " draft"}},
		{"POST", "/simulate/diff", `{"draft": {}}`, 400, []string{CodeDiffProbesNeeded + " probes"}},
		{"POST", "/simulate/diff", `{"draft": {}, "probes": [{"url": "http://x/", "peer": "?"}]}`, 400, []string{CodeProbePeerInvalid + " probes[0].peer"}},
	} {
		status, body := post(tc.method, tc.path, tc.body)
		assert.Equal(t, tc.status, status, "%s %.80s: %s", tc.path, tc.body, body)
		assert.Equal(t, tc.codes, errorCodes(t, body), "%s %.80s", tc.path, tc.body)
	}
	status, _ := post("GET", "/simulate", "")
	assert.Equal(t, http.StatusMethodNotAllowed, status)

	empty := serveHandler(t, NewHandler(HandlerConfig{Store: new(snapshot.Store)}))
	status, body := empty("POST", "/simulate", `{"probe": {"url": "http://x/"}}`)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Equal(t, []string{CodeTargetEmpty + " "}, errorCodes(t, body))
}

func TestHandlerDiff(t *testing.T) {
	store := publish(t, diffBase, snapshot.Compiler{})
	sample := NewSample(SampleConfig{Size: 8, Every: 1})
	sample.ObserveRequest(record("api.example.com", "/admin", "192.0.2.1:1", "192.0.2.1"))
	sample.ObserveRequest(record("api.example.com", "/v2/x", "192.0.2.1:1", "192.0.2.1"))
	post := serveHandler(t, NewHandler(HandlerConfig{Store: store, Sample: sample}))
	draft := strings.Replace(diffBase, "{id: admin, path: /admin, upstream: v1}", "{id: admin, path: /admin, upstream: v1, policies: [office]}", 1)
	draftJSON, err := json.Marshal(decode(t, draft))
	require.NoError(t, err)

	report := func(body string) DiffReport {
		t.Helper()
		status, b := post("POST", "/simulate/diff", body)
		require.Equal(t, http.StatusOK, status, b)
		var rep DiffReport
		require.NoError(t, json.Unmarshal([]byte(b), &rep))
		return rep
	}
	rep := report(`{"draft": ` + string(draftJSON) + `}`)
	assert.Equal(t, 2, rep.Compared, "the sampled requests")
	require.Len(t, rep.Changes, 1)
	assert.Equal(t, "http://api.example.com/admin", rep.Changes[0].Probe.URL)
	assert.Equal(t, Forwarded, rep.Changes[0].Before.Outcome.Kind)
	assert.Equal(t, 403, rep.Changes[0].After.Outcome.Status)

	rep = report(`{"draft": ` + string(draftJSON) + `, "probes": [{"url": "http://api.example.com/v1"}, {"url": "http://api.example.com/admin", "peer": "10.0.0.9"}]}`)
	assert.Equal(t, 2, rep.Compared)
	require.Len(t, rep.Changes, 1)
	assert.Equal(t, []string{"verdict"}, rep.Changes[0].Fields)
}

func jsonNumber(n uint64) string {
	var b bytes.Buffer
	json.NewEncoder(&b).Encode(n)
	return strings.TrimSpace(b.String())
}
