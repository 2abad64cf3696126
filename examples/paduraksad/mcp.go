package main

// "paduraksad mcp": the admin API's MCP tools over stdio, for an MCP
// client (an assistant) that starts the command; the admin listener
// serves the same tools at /mcp over streamable HTTP (see admin.go).

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/mcp"
)

// runMCP is "paduraksad mcp": it serves the tools over in and out until
// in ends (the client closed it) or ctx does. Nothing but MCP's JSON
// messages goes to out; problems go to stderr.
func runMCP(ctx context.Context, args []string, in io.Reader, out, stderr io.Writer) error {
	fs := flag.NewFlagSet("paduraksad mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: paduraksad mcp [-admin URL] [-admin-token-file FILE]")
		fmt.Fprintln(stderr, "serves the MCP tools simulate_request, simulate_diff, check_config, destination_health and recent_requests over stdio, calling a running daemon's admin API")
		fs.PrintDefaults()
	}
	adminURL := fs.String("admin", "http://127.0.0.1:9901", "URL (or host:port) of the running daemon's admin API")
	tokenFile := fs.String("admin-token-file", "", "file holding the admin API's bearer token; empty: send none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("mcp takes no arguments, got %q", fs.Args())
	}
	u := strings.TrimSpace(*adminURL)
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	var token string
	if *tokenFile != "" {
		var err error
		if token, err = admin.ReadTokenFile(*tokenFile); err != nil {
			return fmt.Errorf("-admin-token-file: %w", err)
		}
	}
	s, err := mcp.NewServer(mcp.Config{AdminURL: u, Token: token})
	if err != nil {
		return fmt.Errorf("-admin: %w", err)
	}
	return s.Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{out}})
}

// nopWriteCloser keeps the process's stdout open when the session ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mountMCP serves the MCP tools at /mcp beside the admin API h, behind
// its token, calling h in process.
func mountMCP(h *admin.Handler, token string) (http.Handler, error) {
	tools, err := mcp.NewHTTPHandler(mcp.Config{Admin: h, Token: token})
	if err != nil {
		return nil, err
	}
	protected := h.Protect(tools)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/mcp" {
			protected.ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}), nil
}
