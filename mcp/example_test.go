package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/mcp"
	"github.com/paduraksa/paduraksa/snapshot"
)

// The check_config tool of an admin handler, called in process by the
// SDK's client over its in-memory transport.
func Example() {
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{})
	defer pub.Close()
	h, err := admin.New(admin.Config{Publisher: pub})
	if err != nil {
		panic(err)
	}
	srv, err := mcp.NewServer(mcp.Config{Admin: h})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	st, ct := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		panic(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "v0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolCheckConfig, Arguments: map[string]any{
		"document": "hosts:\n  - names: [app.example]\n    routes: [{path: /, upstream: missing}]\n",
	}})
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var check admin.CheckResult
	json.Unmarshal(b, &check)
	fmt.Println("ok:", check.OK)
	for _, p := range check.Errors {
		fmt.Println(p.Code, p.Path)
	}
	// Output:
	// ok: false
	// route.upstream.unknown hosts[0].routes[0].upstream
}
