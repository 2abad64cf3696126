package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/admin"
)

// Error codes of the tool errors this package gives itself; the others
// are the admin API's and the simulator's own (admin.CodeFilterInvalid,
// simulate.CodeProbeURLInvalid, ...).
const (
	CodeAdminUnreachable = "mcp.admin.unreachable" // the admin API could not be called
	CodeAdminAnswer      = "mcp.admin.answer"      // the admin API answered something that is not its JSON
	CodeUpstreamUnknown  = "mcp.upstream.unknown"  // destination_health: no such upstream in the serving config
)

// MaxAnswerBytes bounds what one call of the admin API may answer.
const MaxAnswerBytes = 64 << 20

// ToolError is the error of a tool call the admin API or the simulator
// refused: the status it answered and every problem, each with its
// stable code and its path in the tool's input. A tool call that fails
// carries it as its text, in JSON:
//
//	{"status": 400, "errors": [{"code": "simulate.probe.url.invalid", "path": "probe.url", "message": "..."}]}
type ToolError struct {
	Status int             `json:"status,omitempty"`
	Errors []admin.Problem `json:"errors"`
}

// Error returns the error as JSON.
func (e *ToolError) Error() string {
	b, _ := json.Marshal(e)
	return string(b)
}

// caller calls the admin API: over HTTP, or in process through its
// handler; both build the same requests and read the same answers.
type caller struct {
	base   string // the API's URL, without a trailing slash
	token  string
	client *http.Client
}

// call sends one request and decodes a 2xx answer into out; any other
// answer is a *ToolError with the problems it lists.
func (c *caller) call(ctx context.Context, method, path string, query url.Values, body []byte, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return &ToolError{Errors: []admin.Problem{{Code: CodeAdminUnreachable, Message: err.Error()}}}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.client.Do(req)
	if err != nil {
		return &ToolError{Errors: []admin.Problem{{Code: CodeAdminUnreachable, Message: err.Error()}}}
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, MaxAnswerBytes+1))
	switch {
	case err != nil:
		return &ToolError{Status: res.StatusCode, Errors: []admin.Problem{{Code: CodeAdminUnreachable, Message: "reading the answer: " + err.Error()}}}
	case len(data) > MaxAnswerBytes:
		return &ToolError{Status: res.StatusCode, Errors: []admin.Problem{{Code: CodeAdminAnswer, Message: "the answer is over " + strconv.Itoa(MaxAnswerBytes) + " bytes"}}}
	case res.StatusCode/100 != 2:
		return refusal(res.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &ToolError{Status: res.StatusCode, Errors: []admin.Problem{{Code: CodeAdminAnswer, Message: "decoding the answer: " + err.Error()}}}
	}
	return nil
}

// refusal reads the problems of an answer that is not a 2xx: the admin
// API's {"error": {...}} or the simulator's {"errors": [...]}.
func refusal(status int, data []byte) *ToolError {
	var body struct {
		Error  *admin.Problem  `json:"error"`
		Errors []admin.Problem `json:"errors"`
	}
	e := &ToolError{Status: status}
	if json.Unmarshal(data, &body) == nil {
		e.Errors = body.Errors
		if body.Error != nil {
			e.Errors = append(e.Errors, *body.Error)
		}
	}
	if len(e.Errors) == 0 {
		msg := strings.TrimSpace(string(data[:min(len(data), 200)]))
		e.Errors = []admin.Problem{{Code: CodeAdminAnswer, Message: strconv.Itoa(status) + " " + http.StatusText(status) + ": " + msg}}
	}
	return e
}

// handlerTransport serves each request with an http.Handler in process:
// the admin API's own handler, so that the tools of its /mcp endpoint
// take the code path of those over stdio, without a connection.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil {
		req.Body = http.NoBody
	}
	req.RemoteAddr = "in-process:0"
	req.RequestURI = req.URL.RequestURI()
	w := &recorder{header: http.Header{}}
	t.h.ServeHTTP(w, req)
	if err := req.Context().Err(); err != nil && w.status == 0 {
		return nil, err
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		StatusCode: w.status, Status: strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()), Request: req,
	}, nil
}

// recorder is the in-process answer: its header, status and body, at
// most MaxAnswerBytes (and one more, so the caller sees it was over).
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *recorder) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if room := MaxAnswerBytes + 1 - w.body.Len(); room < len(p) {
		w.body.Write(p[:max(room, 0)])
		return len(p), errAnswerTooLarge
	}
	return w.body.Write(p)
}

var errAnswerTooLarge = errors.New("mcp: the answer is over MaxAnswerBytes")
