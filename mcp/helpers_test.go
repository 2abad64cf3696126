package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/mcp"
	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
)

const testToken = "t0ken-s3cret"

// stack is a gateway and its admin API on real loopback listeners: a
// publisher serving two upstreams, the simulator and its sample, the
// admin handler behind a token, and the MCP endpoint beside it.
type stack struct {
	admin    *admin.Handler
	adminURL string // the admin API
	mcpURL   string // the admin API with /mcp mounted
	front    string // the gateway
	sample   *simulate.Sample
	client   *http.Client
}

// stackDoc routes app.test to upstream a and other.test to b.
func stackDoc(a, b string) string {
	return fmt.Sprintf(`hosts:
  - names: [app.test]
    routes: [{id: web, path: /, upstream: a}]
  - names: [other.test]
    routes: [{path: /, upstream: b}]
upstreams:
  - id: a
    destinations: [{id: a1, address: "%s"}]
  - id: b
    destinations: [{id: b1, address: "%s"}]
`, a, b)
}

func startStack(t *testing.T) *stack {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "up") }))
	t.Cleanup(up.Close)
	s := &stack{sample: simulate.NewSample(simulate.SampleConfig{Every: 1})}
	store := new(snapshot.Store)
	comp := snapshot.Compiler{Observer: s.sample}
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store, Compiler: comp})
	t.Cleanup(func() { pub.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := pub.PublishData([]byte(stackDoc(up.URL, up.URL))).Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, snapshot.Applied, out.Status, "%v", out.Errors)

	sim := simulate.NewHandler(simulate.HandlerConfig{Store: store, Compiler: &comp, Sample: s.sample})
	s.admin, err = admin.New(admin.Config{Publisher: pub, Simulate: sim, Recent: s.sample.Recent, Compiler: &comp, Token: testToken})
	require.NoError(t, err)
	tools, err := mcp.NewHTTPHandler(mcp.Config{Admin: s.admin, Token: testToken})
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.admin.Protect(tools))
	mux.Handle("/", s.admin)
	for _, srv := range []struct {
		h   http.Handler
		url *string
	}{{s.admin, &s.adminURL}, {mux, &s.mcpURL}, {store, &s.front}} {
		hs := httptest.NewServer(srv.h)
		t.Cleanup(hs.Close)
		*srv.url = hs.URL
	}
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	s.client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return s
}

// send makes one real request through the gateway, with credentials.
func (s *stack) send(t *testing.T, host, path string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.front+path, nil)
	require.NoError(t, err)
	req.Host = host
	req.Header.Set("Authorization", "Bearer client-s3cret")
	req.Header.Set("Cookie", "sid=client-s3cret")
	before := s.sample.Len()
	res, err := s.client.Do(req)
	require.NoError(t, err)
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	// The gateway observes a request after its answer: wait until the
	// sample holds it (the tests send fewer than the ring's size).
	deadline := time.Now().Add(5 * time.Second)
	for s.sample.Len() == before {
		require.True(t, time.Now().Before(deadline), "the request was not sampled")
		time.Sleep(time.Millisecond)
	}
}

// bearer adds the token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// httpSession connects the SDK's client to the streamable HTTP endpoint,
// with the token when it is not empty.
func httpSession(t *testing.T, url, token string) (*sdk.ClientSession, error) {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	var rt http.RoundTripper = tr
	if token != "" {
		rt = bearer{token, tr}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(testContext(t), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt, Timeout: 30 * time.Second},
		DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// memorySession serves cfg's tools over the SDK's in-memory transport
// and connects its client.
func memorySession(t *testing.T, cfg mcp.Config) *sdk.ClientSession {
	t.Helper()
	srv, err := mcp.NewServer(cfg)
	require.NoError(t, err)
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(testContext(t), st, nil)
	require.NoError(t, err)
	t.Cleanup(func() { ss.Close() })
	c := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "v0"}, nil)
	cs, err := c.Connect(testContext(t), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// call calls a tool and returns the result's JSON: its structured
// content, or for a tool error its text; isError says which.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(testContext(t), &sdk.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, name)
	if res.IsError {
		require.Len(t, res.Content, 1, name)
		text, ok := res.Content[0].(*sdk.TextContent)
		require.True(t, ok, name)
		return text.Text, true
	}
	b, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	return string(b), false
}
