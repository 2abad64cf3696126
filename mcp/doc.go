// Package mcp serves a Paduraksa gateway's admin API as MCP tools
// (the Model Context Protocol, with github.com/modelcontextprotocol/go-sdk),
// so that an assistant can ask the gateway what a request would get and
// why, what a change would break, and which destinations are out:
//
//	simulate_request    one request against the live config, a kept
//	                    revision or a draft (POST /simulate): the outcome
//	                    and the trace of every step
//	simulate_diff       the what-if of a draft over given requests or the
//	                    recent ones (POST /simulate/diff)
//	check_config        every problem a publish of a draft would give,
//	                    publishing nothing (POST /config/check)
//	destination_health  every destination's health, or one upstream's
//	                    (GET /health)
//	recent_requests     the recent requests, filtered (GET /requests)
//
// None of them changes the gateway. Each takes and gives JSON whose
// schemas the SDK derives from the Go types ([SimulateInput],
// [simulate.Result], [DiffOutput], [admin.CheckResult], [admin.Health],
// [admin.RecentRequests]); outputs are structured content, and carry no
// credential: the simulator and the admin API redact them
// ("(redacted)") by the library's one rule.
//
// # Two transports, one code path
//
// Every tool calls the admin API, with its bearer token, through an
// http.Client: over the network when [Config.AdminURL] is set (a server
// in a process of its own, "paduraksad mcp" over stdio), or in process
// when [Config.Admin] is the admin handler itself (the admin listener's
// /mcp endpoint, [NewHTTPHandler]): the same requests, the same
// answers, the same validation. Inputs are validated by the simulator
// and the admin API: a refused call is a tool error whose text is a
// [ToolError] in JSON, the status and every problem with its stable code
// and its path in the tool's input:
//
//	{"status":400,"errors":[{"code":"simulate.probe.url.invalid","path":"probe.url","message":"..."}]}
//
// (Arguments of the wrong JSON type are refused by the SDK against the
// input schema first, with its own message.)
//
// # Setup
//
// Over stdio, an MCP client starts the daemon's subcommand, which talks
// to the running daemon's admin API:
//
//	{"mcpServers": {"paduraksa": {"command": "paduraksad",
//	  "args": ["mcp", "-admin", "http://127.0.0.1:9901", "-admin-token-file", "/etc/paduraksa/admin-token"]}}}
//
// Over streamable HTTP, the daemon's admin listener serves the tools at
// /mcp behind the admin token (401 without it); an embedder mounts
// [NewHTTPHandler] behind [admin.Handler.Protect] the same way. The HTTP
// handler is stateless and answers in JSON: nothing lives between
// requests, so it adds no goroutine to the admin listener.
//
// # Concurrency
//
// The server and the handler are safe for concurrent use; every call is
// bounded by [Config.Timeout], and the admin API bounds its own work (the
// simulator's concurrent calls, a push's document size).
package mcp
