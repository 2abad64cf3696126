package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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

// mcpDaemon is a daemon with an admin token serving app.test on upstream
// a and new.test on b, with real requests sampled.
func mcpDaemon(t *testing.T) (*daemon, string) {
	t.Helper()
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("mcp-s3cret-token\n"), 0o600))
	d := startDaemon(t, "-admin-token-file", tokenFile)
	status, res := d.push(t, twoHosts(upstreamServer(t, "a"), upstreamServer(t, "b")), "Authorization", "Bearer mcp-s3cret-token")
	require.Equal(t, 200, status, "%+v", res)
	// The sample keeps one request in eight, at random: send until one
	// of app.test's is kept.
	deadline := time.Now().Add(10 * time.Second)
	for {
		req, err := http.NewRequest("GET", "http://"+d.addr+"/sampled", nil)
		require.NoError(t, err)
		req.Host = "app.test"
		req.Header.Set("Authorization", "Bearer client-s3cret")
		res, err := (&http.Client{Transport: d.tr}).Do(req)
		require.NoError(t, err)
		res.Body.Close()
		_, _, body := d.adminDo(t, "GET", "/requests?host=app.test&limit=1", "", "Authorization", "Bearer mcp-s3cret-token")
		if strings.Contains(body, `"/sampled"`) {
			break
		}
		require.True(t, time.Now().Before(deadline), "no request sampled: %s", body)
	}
	return d, tokenFile
}

// toolCall calls a tool: its structured content's JSON, or its error's
// problems as "code path".
func toolCall(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	if res.IsError {
		require.NotEmpty(t, res.Content)
		text := res.Content[0].(*sdk.TextContent).Text
		var codes []string
		for _, p := range mcp.Problems(text) {
			codes = append(codes, strings.TrimSpace(p.Code+" "+p.Path))
		}
		require.NotEmpty(t, codes, text)
		return text, codes
	}
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	return string(b), nil
}

// everyTool calls each tool of the daemon over cs, once as it should be
// and once refused, and finds no credential in any answer.
func everyTool(t *testing.T, cs *sdk.ClientSession) {
	t.Helper()
	out, codes := toolCall(t, cs, "simulate_request", map[string]any{"probe": map[string]any{"url": "http://app.test/x",
		"header": map[string]any{"Cookie": []string{"sid=probe-s3cret"}}}})
	require.Nil(t, codes, out)
	var res simulate.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, simulate.Forwarded, res.Outcome.Kind)
	assert.Equal(t, "a", res.Outcome.Upstream.ID)
	assert.NotContains(t, out, "s3cret")
	_, codes = toolCall(t, cs, "simulate_request", map[string]any{"probe": map[string]any{"url": "http://app.test/", "tls": map[string]any{"version": "9"}}})
	assert.Equal(t, []string{simulate.CodeProbeTLSVersionInvalid + " probe.tls.version"}, codes)

	draft := map[string]any{
		"hosts":     []any{map[string]any{"names": []string{"app.test"}, "routes": []any{map[string]any{"path": "/", "upstream": "b"}}}},
		"upstreams": []any{map[string]any{"id": "b", "destinations": []any{map[string]any{"id": "one", "address": "http://127.0.0.1:9"}}}},
	}
	out, codes = toolCall(t, cs, "simulate_diff", map[string]any{"draft": draft})
	require.Nil(t, codes, out)
	var rep mcp.DiffOutput
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Contains(t, out, "http://app.test/sampled", "the sampled requests replayed")
	assert.NotEmpty(t, rep.Changes)
	assert.NotContains(t, out, "s3cret")
	_, codes = toolCall(t, cs, "simulate_diff", map[string]any{"draft": map[string]any{"upstreams": []any{map[string]any{"id": "x"}}, "hosts": "no"}})
	assert.NotEmpty(t, codes)

	out, codes = toolCall(t, cs, "check_config", map[string]any{"document": "hosts:\n  - names: [app.test]\n    routes: [{upstream: gone}]\n"})
	require.Nil(t, codes, out)
	var check admin.CheckResult
	require.NoError(t, json.Unmarshal([]byte(out), &check))
	assert.False(t, check.OK)
	require.Len(t, check.Errors, 1)
	assert.Equal(t, "hosts[0].routes[0].upstream", check.Errors[0].Path)
	_, codes = toolCall(t, cs, "check_config", map[string]any{"document": " "})
	assert.Equal(t, []string{admin.CodeBodyEmpty}, codes)

	out, codes = toolCall(t, cs, "destination_health", map[string]any{})
	require.Nil(t, codes, out)
	var health admin.Health
	require.NoError(t, json.Unmarshal([]byte(out), &health))
	require.Len(t, health.Clusters, 2)
	assert.Equal(t, "one", health.Clusters[0].Destinations[0].ID)
	_, codes = toolCall(t, cs, "destination_health", map[string]any{"upstream": "zzz"})
	assert.Equal(t, []string{mcp.CodeUpstreamUnknown + " upstream"}, codes)

	out, codes = toolCall(t, cs, "recent_requests", map[string]any{"host": "app.test", "limit": 1})
	require.Nil(t, codes, out)
	var recent admin.RecentRequests
	require.NoError(t, json.Unmarshal([]byte(out), &recent))
	require.Len(t, recent.Requests, 1)
	assert.Equal(t, "/sampled", recent.Requests[0].Path)
	assert.Equal(t, "a", recent.Requests[0].Upstream)
	assert.NotContains(t, out, "s3cret")
	_, codes = toolCall(t, cs, "recent_requests", map[string]any{"limit": 100000})
	assert.Equal(t, []string{admin.CodeFilterInvalid + " limit"}, codes)
}

func commandSession(t *testing.T, args ...string) *sdk.ClientSession {
	t.Helper()
	bin := daemonBinary(t) // built before the connection's deadline starts
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.Command(bin, append([]string{"mcp"}, args...)...)
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestMCPOverStdio runs "paduraksad mcp", the binary built from this
// package, as an MCP client starts it, against a running daemon.
func TestMCPOverStdio(t *testing.T) {
	d, tokenFile := mcpDaemon(t)
	everyTool(t, commandSession(t, "-admin", d.admin, "-admin-token-file", tokenFile))

	// Without the token, every call is the admin API's 401.
	cs := commandSession(t, "-admin", "http://"+d.admin)
	_, codes := toolCall(t, cs, "destination_health", map[string]any{})
	assert.Equal(t, []string{admin.CodeTokenMissing}, codes)
}

// TestMCPOverHTTP: the admin listener's /mcp, with the SDK's
// streamable client, behind the admin token.
func TestMCPOverHTTP(t *testing.T) {
	d, _ := mcpDaemon(t)
	connect := func(token string) (*sdk.ClientSession, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var rt http.RoundTripper = d.tr
		if token != "" {
			rt = tokenTransport{token, d.tr}
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil).Connect(ctx, &sdk.StreamableClientTransport{
			Endpoint: "http://" + d.admin + "/mcp", HTTPClient: &http.Client{Transport: rt}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
		if err == nil {
			t.Cleanup(func() { cs.Close() })
		}
		return cs, err
	}
	cs, err := connect("mcp-s3cret-token")
	require.NoError(t, err)
	everyTool(t, cs)

	_, err = connect("")
	assert.Error(t, err)
	_, err = connect("wrong")
	assert.Error(t, err)
	status, hdr, body := d.adminDo(t, "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Content-Type", "application/json")
	assert.Equal(t, 401, status)
	assert.Contains(t, hdr.Get("WWW-Authenticate"), "Bearer")
	assert.Contains(t, body, admin.CodeTokenMissing)
}

// tokenTransport adds the admin token to every request.
type tokenTransport struct {
	token string
	next  http.RoundTripper
}

func (tt tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tt.token)
	return tt.next.RoundTrip(r)
}

func TestMCPCommandRefusesBadFlags(t *testing.T) {
	var stderr strings.Builder
	err := runMCP(context.Background(), []string{"-admin", "ftp://x"}, strings.NewReader(""), &strings.Builder{}, &stderr)
	assert.ErrorContains(t, err, "mcp.adminUrl.invalid")
	err = runMCP(context.Background(), []string{"-admin-token-file", filepath.Join(t.TempDir(), "none")}, strings.NewReader(""), &strings.Builder{}, &stderr)
	assert.ErrorContains(t, err, "-admin-token-file")
	err = runMCP(context.Background(), []string{"extra"}, strings.NewReader(""), &strings.Builder{}, &stderr)
	assert.ErrorContains(t, err, "no arguments")
}
