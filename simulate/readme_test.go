package simulate_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/simulate"
)

// TestGateway is the README's test recipe as written, on
// testdata/gateway.yaml, a document whose certificate files are not on
// this machine: TestReadmeRecipeIsThisCode keeps the two the same.
func TestGateway(t *testing.T) {
	data, err := os.ReadFile("testdata/gateway.yaml") // the production document, certFile paths and all
	if err != nil {
		t.Fatal(err)
	}
	gw := simulate.NewTester(t, simulate.Target{DraftData: data, TestCertificates: true})
	// plain HTTP to app.example.com is sent to HTTPS
	gw.Expect(simulate.Probe{URL: "http://app.example.com/login"}, simulate.Want{Status: 308, Location: "https://app.example.com/login"})
	// /admin from outside 10.0.0.0/8 gets 403
	gw.Expect(simulate.Probe{URL: "https://app.example.com/admin", Peer: simulate.MustPeer("192.0.2.10")}, simulate.Want{Status: 403})
	// api.example.com/v2 goes to upstream v2, over HTTP/2
	gw.Expect(simulate.Probe{URL: "https://api.example.com/v2/users", HTTPVersion: 2}, simulate.Want{Upstream: "v2"})
}

// TestReadmeRecipeIsThisCode: every line of the README's test recipe is
// a line of TestGateway, so the test above runs what the README shows.
func TestReadmeRecipeIsThisCode(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)## Testing your own config\n.*?```go\n(.*?)```").FindSubmatch(readme)
	require.NotNil(t, m, "the README has no test recipe")
	src, err := os.ReadFile("readme_test.go")
	require.NoError(t, err)
	n := 0
	for line := range strings.Lines(string(m[1])) {
		if stmt := strings.TrimSpace(line); stmt != "" {
			assert.Contains(t, "\n"+string(src), "\n"+strings.TrimSuffix(line, "\n"), "the README's %q is not what the test runs", stmt)
			n++
		}
	}
	assert.Greater(t, n, 5)
	assert.Contains(t, string(m[1]), "https://", "the recipe tests HTTPS")
}
