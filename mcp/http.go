package mcp

import (
	"net/http"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxRequestBytes bounds the body of one MCP request over HTTP: room for
// a draft document as large as PUT /config takes (admin's
// DefaultMaxDocumentBytes) in a tool call's JSON.
const MaxRequestBytes = 32 << 20

// NewHTTPHandler returns the tools of [NewServer] over MCP's streamable
// HTTP transport, stateless (every request stands alone: no session is
// kept, so nothing lives past a request) and answering in JSON, for
// mounting on the admin listener at /mcp. It does not authenticate:
// serve it behind the admin API's token, with
// [admin.Handler.Protect].
func NewHTTPHandler(cfg Config) (http.Handler, error) {
	s, err := NewServer(cfg)
	if err != nil {
		return nil, err
	}
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s },
		&sdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true, MaxRequestBodyBytes: MaxRequestBytes}), nil
}
