package mcp

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/simulate"
)

// The tools' names.
const (
	ToolSimulateRequest   = "simulate_request"
	ToolSimulateDiff      = "simulate_diff"
	ToolCheckConfig       = "check_config"
	ToolDestinationHealth = "destination_health"
	ToolRecentRequests    = "recent_requests"
)

// DefaultTimeout bounds one tool call by default.
const DefaultTimeout = 30 * time.Second

// Config configures [NewServer] and [NewHTTPHandler]: where the admin
// API is and its token. One of AdminURL and Admin is required.
type Config struct {
	// AdminURL is the admin API's URL ("http://127.0.0.1:9901"), called
	// with HTTPClient: for a server in a process of its own (paduraksad
	// mcp, over stdio).
	AdminURL string
	// Admin is the admin API's handler (an *admin.Handler), called in
	// process: for the admin listener's own /mcp endpoint. It takes
	// precedence over AdminURL.
	Admin http.Handler
	// Token is the admin API's bearer token, sent with every call; empty
	// sends none.
	Token string
	// HTTPClient calls AdminURL; nil means a client of its own, without
	// proxies.
	HTTPClient *http.Client
	// Timeout bounds a tool call; 0 means [DefaultTimeout].
	Timeout time.Duration
	// Version is the server's version in the MCP handshake; empty means
	// "devel".
	Version string
}

// Problems of a Config, returned by [NewServer].
const (
	CodeConfigAdminMissing = "mcp.admin.missing" // neither AdminURL nor Admin
	CodeConfigAdminURL     = "mcp.adminUrl.invalid"
)

// NewServer returns the MCP server of the five tools over the admin API
// cfg names (see the package documentation). Serve it over stdio with
// server.Run(ctx, &mcp.StdioTransport{}) (package
// github.com/modelcontextprotocol/go-sdk/mcp), or over HTTP with
// [NewHTTPHandler].
func NewServer(cfg Config) (*sdk.Server, error) {
	c, err := newCaller(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Version == "" {
		cfg.Version = "devel"
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "paduraksa", Title: "Paduraksa gateway", Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "Tools of a Paduraksa gateway's admin API: simulate a request against the live config or a draft " +
			"(what it would get, and why, step by step), the what-if of a draft over the recent requests, a draft's check " +
			"(every problem a publish would refuse it with), the health of every destination and the recent requests. " +
			"None of them changes the gateway.",
	})
	t := &tools{c: c, timeout: cfg.Timeout}
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	sdk.AddTool(s, &sdk.Tool{Name: ToolSimulateRequest, Annotations: readOnly,
		Description: "Simulate one request against the live config, a kept revision or a draft, through the gateway's real code, " +
			"and answer its outcome (forwarded, answered, redirected, refused, ...) and the trace of every step: client resolution, " +
			"host, TLS, policies with their verdicts, limits, the route and why it won, the upstream and its destinations' health. " +
			"Nothing is sent upstream. Refusals carry the simulator's codes at the input's paths."}, t.simulateRequest)
	sdk.AddTool(s, &sdk.Tool{Name: ToolSimulateDiff, Annotations: readOnly,
		Description: "What if this draft were published: simulate requests (the given probes, or by default the recent requests the " +
			"gateway sampled) against the live config and the draft, and list each one whose decision changes (host, policy verdict, " +
			"route, upstream, status, redirect) with both results."}, t.simulateDiff)
	sdk.AddTool(s, &sdk.Tool{Name: ToolCheckConfig, Annotations: readOnly,
		Description: "Check a draft config document (JSON or YAML) as a publish would compile it, publishing nothing: ok, and every " +
			"problem a publish would refuse it with (stable code, path in the document, message) and its warnings."}, t.checkConfig)
	sdk.AddTool(s, &sdk.Tool{Name: ToolDestinationHealth, Annotations: readOnly,
		Description: "The health of every destination of every upstream in the serving config (or of one upstream): combined, active " +
			"and passive verdicts, availability, in-flight requests, drain, ejection and the last change with its reason."}, t.destinationHealth)
	sdk.AddTool(s, &sdk.Tool{Name: ToolRecentRequests, Annotations: readOnly,
		Description: "The recent requests the gateway sampled, newest first: method, host and path as received, status, route, " +
			"upstream, destination, client. Filter by host, status (404 or 5xx) and upstream; limit the count."}, t.recentRequests)
	return s, nil
}

func newCaller(cfg Config) (*caller, error) {
	c := &caller{token: cfg.Token, client: cfg.HTTPClient}
	switch {
	case cfg.Admin != nil:
		// Addressed to localhost: a handler without a token serves only
		// loopback names, and these requests never leave the process.
		c.base, c.client = "http://localhost", &http.Client{Transport: handlerTransport{cfg.Admin}}
	case cfg.AdminURL != "":
		u, err := url.Parse(cfg.AdminURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return nil, &ToolError{Errors: []admin.Problem{{Code: CodeConfigAdminURL, Path: "adminUrl",
				Message: strconv.Quote(cfg.AdminURL) + " is not an http:// or https:// URL of the admin API"}}}
		}
		c.base = strings.TrimSuffix(u.String(), "/")
		if c.client == nil {
			c.client = &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
		}
	default:
		return nil, &ToolError{Errors: []admin.Problem{{Code: CodeConfigAdminMissing, Message: "name the admin API: AdminURL or Admin"}}}
	}
	return c, nil
}

type tools struct {
	c       *caller
	timeout time.Duration
}

// Probe is a request to simulate, as the simulator's API takes it; only
// url is required.
type Probe struct {
	Method        string              `json:"method,omitempty" jsonschema:"the request method; empty means GET"`
	URL           string              `json:"url,omitempty" jsonschema:"the absolute request URL, http or https, with host, optional port, path and query"`
	Header        map[string][]string `json:"header,omitempty" jsonschema:"request headers as the client sends them, by name; Host comes from url"`
	Peer          string              `json:"peer,omitempty" jsonschema:"the address the connection comes from (192.0.2.1 or 192.0.2.1:5000); a proxy's when one is in front"`
	ProxyProtocol string              `json:"proxyProtocol,omitempty" jsonschema:"the source a PROXY protocol v2 header names, as a load balancer at peer sends it"`
	TLS           *ProbeTLS           `json:"tls,omitempty" jsonschema:"the client's TLS handshake on an https url"`
	HTTPVersion   int                 `json:"httpVersion,omitempty" jsonschema:"1, 2 or 3; 0 means what the handshake settles"`
}

// ProbeTLS is a probe's TLS handshake.
type ProbeTLS struct {
	SNI     string   `json:"sni,omitempty" jsonschema:"the server name sent; empty means the url's host"`
	NoSNI   bool     `json:"noSni,omitempty" jsonschema:"send no server name"`
	ALPN    []string `json:"alpn,omitempty" jsonschema:"the ALPN protocols offered"`
	Version string   `json:"version,omitempty" jsonschema:"the highest TLS version offered: 1.0, 1.1, 1.2 or 1.3"`
}

// SimulateInput is the input of simulate_request.
type SimulateInput struct {
	Probe    *Probe         `json:"probe,omitempty" jsonschema:"the request to simulate (required)"`
	Draft    map[string]any `json:"draft,omitempty" jsonschema:"a draft config document (JSON), simulated as a publish would compile it; omit for the live config"`
	Revision uint64         `json:"revision,omitempty" jsonschema:"a kept revision to simulate against instead of the live config"`
}

// DiffInput is the input of simulate_diff.
type DiffInput struct {
	Draft  map[string]any `json:"draft,omitempty" jsonschema:"the draft config document (JSON) to compare with the live config (required)"`
	Probes []Probe        `json:"probes,omitempty" jsonschema:"the requests to compare; omit to replay the recent requests the gateway sampled"`
}

// DiffOutput is the answer of simulate_diff: [simulate.DiffReport] with
// each request as the simulator's API spells a probe.
type DiffOutput struct {
	Compared int          `json:"compared" jsonschema:"the requests simulated against both"`
	Changes  []DiffChange `json:"changes" jsonschema:"every request whose decision changes, in order"`
	Refused  []string     `json:"refused,omitempty" jsonschema:"the requests that could not be simulated, with the reason"`
}

// DiffChange is one request whose decision changes.
type DiffChange struct {
	Probe  DiffProbe        `json:"probe"`
	Fields []string         `json:"fields" jsonschema:"what changed: kind, host, verdict, route, upstream, status, location"`
	Before *simulate.Result `json:"before"`
	After  *simulate.Result `json:"after"`
}

// DiffProbe is the request of a change, its credentials redacted.
type DiffProbe struct {
	Method string              `json:"method,omitempty"`
	URL    string              `json:"url"`
	Header map[string][]string `json:"header,omitempty"`
	Peer   string              `json:"peer,omitempty"`
}

// CheckInput is the input of check_config.
type CheckInput struct {
	Document string `json:"document,omitempty" jsonschema:"the draft config document, JSON or YAML (required)"`
}

// HealthInput is the input of destination_health.
type HealthInput struct {
	Upstream string `json:"upstream,omitempty" jsonschema:"an upstream's ID; omit for every upstream"`
}

// RecentInput is the input of recent_requests.
type RecentInput struct {
	Host     string `json:"host,omitempty" jsonschema:"only requests to this host, with or without the port, any case"`
	Status   string `json:"status,omitempty" jsonschema:"only requests answered with this status (404) or class (5xx); 0 for dropped ones"`
	Upstream string `json:"upstream,omitempty" jsonschema:"only requests forwarded to this upstream ID"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many, newest first"`
}

func (t *tools) context(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, t.timeout)
}

func (t *tools) simulateRequest(ctx context.Context, _ *sdk.CallToolRequest, in SimulateInput) (*sdk.CallToolResult, *simulate.Result, error) {
	ctx, cancel := t.context(ctx)
	defer cancel()
	body, err := json.Marshal(in)
	if err != nil {
		return nil, nil, err
	}
	var out simulate.Result
	if err := t.c.call(ctx, http.MethodPost, "/simulate", nil, body, &out); err != nil {
		return nil, nil, err
	}
	return nil, &out, nil
}

func (t *tools) simulateDiff(ctx context.Context, _ *sdk.CallToolRequest, in DiffInput) (*sdk.CallToolResult, *DiffOutput, error) {
	ctx, cancel := t.context(ctx)
	defer cancel()
	body, err := json.Marshal(in)
	if err != nil {
		return nil, nil, err
	}
	// The report spells a probe with Go's field names (Method, URL,
	// Header, Peer): they decode into DiffProbe's, whose case differs.
	var out DiffOutput
	if err := t.c.call(ctx, http.MethodPost, "/simulate/diff", nil, body, &out); err != nil {
		return nil, nil, err
	}
	if out.Changes == nil {
		out.Changes = []DiffChange{}
	}
	return nil, &out, nil
}

func (t *tools) checkConfig(ctx context.Context, _ *sdk.CallToolRequest, in CheckInput) (*sdk.CallToolResult, *admin.CheckResult, error) {
	ctx, cancel := t.context(ctx)
	defer cancel()
	var out admin.CheckResult
	if err := t.c.call(ctx, http.MethodPost, "/config/check", nil, []byte(in.Document), &out); err != nil {
		return nil, nil, err
	}
	return nil, &out, nil
}

func (t *tools) destinationHealth(ctx context.Context, _ *sdk.CallToolRequest, in HealthInput) (*sdk.CallToolResult, *admin.Health, error) {
	ctx, cancel := t.context(ctx)
	defer cancel()
	var out admin.Health
	if err := t.c.call(ctx, http.MethodGet, "/health", nil, nil, &out); err != nil {
		return nil, nil, err
	}
	if out.Clusters == nil {
		out.Clusters = []admin.Cluster{}
	}
	if in.Upstream == "" {
		return nil, &out, nil
	}
	for _, c := range out.Clusters {
		if c.ID == in.Upstream {
			return nil, &admin.Health{Clusters: []admin.Cluster{c}}, nil
		}
	}
	return nil, nil, &ToolError{Status: http.StatusNotFound, Errors: []admin.Problem{{Code: CodeUpstreamUnknown, Path: "upstream",
		Message: "the serving config has no upstream " + strconv.Quote(in.Upstream)}}}
}

func (t *tools) recentRequests(ctx context.Context, _ *sdk.CallToolRequest, in RecentInput) (*sdk.CallToolResult, *admin.RecentRequests, error) {
	ctx, cancel := t.context(ctx)
	defer cancel()
	q := url.Values{}
	for name, v := range map[string]string{"host": in.Host, "status": in.Status, "upstream": in.Upstream} {
		if v != "" {
			q.Set(name, v)
		}
	}
	if in.Limit != 0 {
		q.Set("limit", strconv.Itoa(in.Limit))
	}
	var out admin.RecentRequests
	if err := t.c.call(ctx, http.MethodGet, "/requests", q, nil, &out); err != nil {
		return nil, nil, err
	}
	return nil, &out, nil
}

// Problems returns the problems of a tool call's error text (a
// [ToolError] in JSON), or nil when the text is not one.
func Problems(text string) []admin.Problem {
	var e ToolError
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		return nil
	}
	return e.Errors
}

var _ error = (*ToolError)(nil)
