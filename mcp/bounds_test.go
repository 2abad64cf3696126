package mcp_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/mcp"
)

// A request body beyond MaxRequestBytes is refused without being read
// whole: the work one MCP request can buy is bounded.
func TestRequestBodyIsBounded(t *testing.T) {
	s := startStack(t)
	head := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`
	body := io.MultiReader(strings.NewReader(head), io.LimitReader(zeros{}, mcp.MaxRequestBytes), strings.NewReader(`"}}`))
	req, err := http.NewRequest("POST", s.mcpURL+"/mcp", body)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	res, err := s.client.Do(req)
	if err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%s", b)
	} else {
		// The server may close the connection while the rest is sent.
		assert.Contains(t, err.Error(), "connection", err.Error())
	}
}

// zeros reads as an endless run of '0'.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}
