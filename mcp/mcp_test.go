package mcp_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/mcp"
	"github.com/paduraksa/paduraksa/simulate"
)

// codePaths lists a tool error's problems as "code path".
func codePaths(t *testing.T, text string) []string {
	t.Helper()
	ps := mcp.Problems(text)
	require.NotEmpty(t, ps, text)
	var out []string
	for _, p := range ps {
		out = append(out, strings.TrimSpace(p.Code+" "+p.Path))
	}
	return out
}

// exerciseTools calls every tool over cs, with good inputs and with
// refused ones, and checks that no credential shows.
func exerciseTools(t *testing.T, s *stack, cs *sdk.ClientSession) {
	tools, err := cs.ListTools(testContext(t), nil)
	require.NoError(t, err)
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		assert.NotNil(t, tool.OutputSchema, tool.Name)
		assert.NotEmpty(t, tool.Description, tool.Name)
	}
	slices.Sort(names)
	assert.Equal(t, []string{"check_config", "destination_health", "recent_requests", "simulate_diff", "simulate_request"}, names)

	t.Run("simulate_request", func(t *testing.T) {
		out, isErr := call(t, cs, mcp.ToolSimulateRequest, map[string]any{"probe": map[string]any{
			"url": "http://app.test/x", "header": map[string]any{"Authorization": []string{"Bearer probe-s3cret"}, "X-Api-Key": []string{"probe-s3cret"}},
		}})
		require.False(t, isErr, out)
		var res simulate.Result
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		assert.Equal(t, simulate.Forwarded, res.Outcome.Kind)
		assert.Equal(t, "web", res.Outcome.Route)
		require.NotNil(t, res.Outcome.Upstream)
		assert.Equal(t, "a", res.Outcome.Upstream.ID)
		assert.NotEmpty(t, res.Trace)
		assert.NotContains(t, out, "s3cret")

		out, isErr = call(t, cs, mcp.ToolSimulateRequest, map[string]any{"probe": map[string]any{"url": "ftp://app.test/"}})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{simulate.CodeProbeURLInvalid + " probe.url"}, codePaths(t, out))
		out, isErr = call(t, cs, mcp.ToolSimulateRequest, map[string]any{})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{simulate.CodeRequestInvalid + " probe"}, codePaths(t, out))
		out, isErr = call(t, cs, mcp.ToolSimulateRequest, map[string]any{"probe": map[string]any{"url": "http://app.test/"}, "revision": 99})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{simulate.CodeRevisionUnknown + " revision"}, codePaths(t, out))
	})

	t.Run("simulate_diff", func(t *testing.T) {
		draft := map[string]any{
			"hosts":     []any{map[string]any{"names": []string{"app.test"}, "routes": []any{map[string]any{"path": "/", "upstream": "b"}}}},
			"upstreams": []any{map[string]any{"id": "b", "destinations": []any{map[string]any{"id": "b1", "address": "http://127.0.0.1:9"}}}},
		}
		out, isErr := call(t, cs, mcp.ToolSimulateDiff, map[string]any{"draft": draft, "probes": []any{
			map[string]any{"url": "http://app.test/", "header": map[string]any{"Cookie": []string{"sid=probe-s3cret"}}},
			map[string]any{"url": "http://nowhere.test/"},
		}})
		require.False(t, isErr, out)
		var rep mcp.DiffOutput
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		assert.Equal(t, 2, rep.Compared)
		require.Len(t, rep.Changes, 1, out)
		assert.Equal(t, "http://app.test/", rep.Changes[0].Probe.URL)
		assert.Equal(t, []string{"(redacted)"}, rep.Changes[0].Probe.Header["Cookie"])
		assert.Contains(t, rep.Changes[0].Fields, "upstream")
		assert.Equal(t, "a", rep.Changes[0].Before.Outcome.Upstream.ID)
		assert.Equal(t, "b", rep.Changes[0].After.Outcome.Upstream.ID)
		assert.NotContains(t, out, "s3cret")

		// Without probes, the sampled requests are replayed.
		s.send(t, "app.test", "/sampled")
		out, isErr = call(t, cs, mcp.ToolSimulateDiff, map[string]any{"draft": draft})
		require.False(t, isErr, out)
		assert.Contains(t, out, "http://app.test/sampled")
		assert.NotContains(t, out, "s3cret")

		out, isErr = call(t, cs, mcp.ToolSimulateDiff, map[string]any{"draft": map[string]any{"hosts": []any{map[string]any{"names": []string{"x.test"}, "bogus": 1}}}})
		assert.True(t, isErr, out)
		assert.Contains(t, codePaths(t, out), "document.field.unknown hosts[0].bogus")
		out, isErr = call(t, cs, mcp.ToolSimulateDiff, map[string]any{"probes": []any{map[string]any{"url": "http://app.test/"}}})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{simulate.CodeRequestInvalid + " draft"}, codePaths(t, out))
		out, isErr = call(t, cs, mcp.ToolSimulateDiff, map[string]any{"draft": draft, "probes": []any{map[string]any{"url": "http://app.test/", "peer": "not-an-ip"}}})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{simulate.CodeProbePeerInvalid + " probes[0].peer"}, codePaths(t, out))
	})

	t.Run("check_config", func(t *testing.T) {
		out, isErr := call(t, cs, mcp.ToolCheckConfig, map[string]any{"document": "hosts:\n  - names: [app.test]\n    routes: [{upstream: missing}]\n    bogus: 1\n"})
		require.False(t, isErr, out)
		var res admin.CheckResult
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		assert.False(t, res.OK)
		var got []string
		for _, p := range res.Errors {
			got = append(got, p.Code+" "+p.Path)
		}
		assert.Equal(t, []string{"document.field.unknown hosts[0].bogus", "route.upstream.unknown hosts[0].routes[0].upstream"}, got)

		out, isErr = call(t, cs, mcp.ToolCheckConfig, map[string]any{"document": `{"hosts": [{"names": ["b.test"], "kind": "fixed", "fixed": {"status": 204}}]}`})
		require.False(t, isErr, out)
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		assert.True(t, res.OK, out)

		out, isErr = call(t, cs, mcp.ToolCheckConfig, map[string]any{})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{admin.CodeBodyEmpty}, codePaths(t, out))
	})

	t.Run("destination_health", func(t *testing.T) {
		out, isErr := call(t, cs, mcp.ToolDestinationHealth, map[string]any{})
		require.False(t, isErr, out)
		var h admin.Health
		require.NoError(t, json.Unmarshal([]byte(out), &h))
		require.Len(t, h.Clusters, 2)
		assert.Equal(t, "a", h.Clusters[0].ID)
		assert.Equal(t, "a1", h.Clusters[0].Destinations[0].ID)
		assert.True(t, h.Clusters[0].Destinations[0].Available)

		out, isErr = call(t, cs, mcp.ToolDestinationHealth, map[string]any{"upstream": "b"})
		require.False(t, isErr, out)
		require.NoError(t, json.Unmarshal([]byte(out), &h))
		require.Len(t, h.Clusters, 1)
		assert.Equal(t, "b", h.Clusters[0].ID)

		out, isErr = call(t, cs, mcp.ToolDestinationHealth, map[string]any{"upstream": "nope"})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{mcp.CodeUpstreamUnknown + " upstream"}, codePaths(t, out))
	})

	t.Run("recent_requests", func(t *testing.T) {
		s.send(t, "app.test", "/recent/<b>")
		s.send(t, "nowhere.test", "/missing")
		out, isErr := call(t, cs, mcp.ToolRecentRequests, map[string]any{"limit": 2})
		require.False(t, isErr, out)
		var rr admin.RecentRequests
		require.NoError(t, json.Unmarshal([]byte(out), &rr))
		require.Len(t, rr.Requests, 2)
		assert.Equal(t, "/missing", rr.Requests[0].Path, "newest first")
		assert.Equal(t, 404, rr.Requests[0].Status)
		assert.Equal(t, "/recent/%3Cb%3E", rr.Requests[1].Path, "as received (the client escaped it)")
		assert.Equal(t, "a", rr.Requests[1].Upstream)
		assert.NotContains(t, out, "s3cret")

		out, isErr = call(t, cs, mcp.ToolRecentRequests, map[string]any{"status": "4xx", "host": "nowhere.test"})
		require.False(t, isErr, out)
		require.NoError(t, json.Unmarshal([]byte(out), &rr))
		require.NotEmpty(t, rr.Requests)
		for _, r := range rr.Requests {
			assert.Equal(t, 404, r.Status)
		}

		out, isErr = call(t, cs, mcp.ToolRecentRequests, map[string]any{"status": "teapot"})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{admin.CodeFilterInvalid + " status"}, codePaths(t, out))
		out, isErr = call(t, cs, mcp.ToolRecentRequests, map[string]any{"limit": -1})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{admin.CodeFilterInvalid + " limit"}, codePaths(t, out))
	})
}

// TestToolsOverHTTPInProcess: the SDK's client over streamable HTTP to
// the admin listener's /mcp, whose tools call the admin handler in
// process.
func TestToolsOverHTTPInProcess(t *testing.T) {
	s := startStack(t)
	cs, err := httpSession(t, s.mcpURL+"/mcp", testToken)
	require.NoError(t, err)
	exerciseTools(t, s, cs)
}

// TestToolsOverAdminURL: the tools of a server of its own (as paduraksad
// mcp runs them) calling the admin API over HTTP, through the SDK's
// in-memory transport (the stdio framing is tested with the daemon's
// binary, in examples/paduraksad).
func TestToolsOverAdminURL(t *testing.T) {
	s := startStack(t)
	exerciseTools(t, s, memorySession(t, mcp.Config{AdminURL: s.adminURL, Token: testToken}))
}

// TestMissingToken: /mcp answers 401 without the token, or with another,
// and the SDK's client cannot connect; a server without the admin
// token gets the admin API's 401 as a tool error.
func TestMissingToken(t *testing.T) {
	s := startStack(t)
	for _, auth := range []string{"", "Bearer wrong"} {
		req, err := http.NewRequest(http.MethodPost, s.mcpURL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := s.client.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode, auth)
		assert.True(t, strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer "), auth)
	}
	_, err := httpSession(t, s.mcpURL+"/mcp", "")
	assert.Error(t, err, "no token")
	_, err = httpSession(t, s.mcpURL+"/mcp", "wrong")
	assert.Error(t, err, "another token")

	cs := memorySession(t, mcp.Config{AdminURL: s.adminURL})
	out, isErr := call(t, cs, mcp.ToolDestinationHealth, map[string]any{})
	assert.True(t, isErr, out)
	assert.Equal(t, []string{admin.CodeTokenMissing}, codePaths(t, out))
	cs = memorySession(t, mcp.Config{AdminURL: s.adminURL, Token: "wrong"})
	out, isErr = call(t, cs, mcp.ToolRecentRequests, map[string]any{})
	assert.True(t, isErr, out)
	assert.Equal(t, []string{admin.CodeTokenInvalid}, codePaths(t, out))
}

func TestNewServerRefusesABadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  mcp.Config
		code string
	}{
		{mcp.Config{}, mcp.CodeConfigAdminMissing},
		{mcp.Config{AdminURL: "127.0.0.1:9901"}, mcp.CodeConfigAdminURL},
		{mcp.Config{AdminURL: "ftp://127.0.0.1:9901"}, mcp.CodeConfigAdminURL},
		{mcp.Config{AdminURL: "http://127.0.0.1:9901/?x=1"}, mcp.CodeConfigAdminURL},
	} {
		_, err := mcp.NewServer(tc.cfg)
		require.Error(t, err, tc.cfg.AdminURL)
		assert.Equal(t, tc.code, mcp.Problems(err.Error())[0].Code, tc.cfg.AdminURL)
	}
}

// TestAdminUnreachable: a daemon that is not running is a tool error
// with its own code, not a hang.
func TestAdminUnreachable(t *testing.T) {
	cs := memorySession(t, mcp.Config{AdminURL: "http://127.0.0.1:1", Timeout: 5 * time.Second})
	out, isErr := call(t, cs, mcp.ToolDestinationHealth, map[string]any{})
	assert.True(t, isErr, out)
	assert.Equal(t, []string{mcp.CodeAdminUnreachable}, codePaths(t, out))
}

// TestAdminAnswers: answers that are not the admin API's JSON are tool
// errors with their own code, and arguments of the wrong type are
// refused by the SDK against the derived schema.
func TestAdminAnswers(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{http.StatusBadGateway, "upstream gone", mcp.CodeAdminAnswer},
		{http.StatusOK, "not json", mcp.CodeAdminAnswer},
		{http.StatusNotFound, `{"error": {"code": "admin.notFound", "message": "no sample"}}`, admin.CodeNotFound},
	} {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body))
		})
		cs := memorySession(t, mcp.Config{Admin: h})
		out, isErr := call(t, cs, mcp.ToolRecentRequests, map[string]any{})
		assert.True(t, isErr, out)
		assert.Equal(t, []string{tc.want}, codePaths(t, out), tc.body)
	}
	s := startStack(t)
	cs := memorySession(t, mcp.Config{AdminURL: s.adminURL, Token: testToken})
	out, isErr := call(t, cs, mcp.ToolRecentRequests, map[string]any{"limit": "ten"})
	assert.True(t, isErr, out)
	assert.Contains(t, out, "limit")
}
