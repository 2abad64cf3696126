package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/simulate"
)

func simulateCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runSimulate(args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// With no -config the embedded default is simulated: /hello goes to the
// demo upstream, and the trace says why.
func TestSimulateEmbedded(t *testing.T) {
	out, _, err := simulateCmd(t, "GET", "http://localhost/hello")
	require.NoError(t, err)
	assert.Contains(t, out, "outcome: forwarded to upstream demo")
	assert.Contains(t, out, `host: "localhost" matched host localhost (exact)`)
	assert.Contains(t, out, `route: route demo (prefix /) matches the path view "/hello": no other route matches`)
	assert.Contains(t, out, "demo-1 http://"+demoUpstream)

	out, _, err = simulateCmd(t, "-json", "-sni", "localhost", "-http-version", "2", "-H", "User-Agent: curl/8", "GET", "https://localhost/hello")
	require.NoError(t, err)
	var res simulate.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, simulate.Forwarded, res.Outcome.Kind)
	assert.Equal(t, "HTTP/2.0", res.Outcome.Protocol)
	assert.Equal(t, "demo", res.Outcome.Upstream.ID)
	assert.Equal(t, `h3=":8443"; ma=86400`, res.Outcome.Header.Get("Alt-Svc"), "the demo's HTTPS port")

	out, _, err = simulateCmd(t, "-json", "-https", "127.0.0.1:9443", "GET", "https://localhost/hello")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, `h3=":9443"; ma=86400`, res.Outcome.Header.Get("Alt-Svc"), "-https names the port, as the daemon's")

	out, _, err = simulateCmd(t, "GET", "http://old.localhost/x")
	require.NoError(t, err)
	assert.Contains(t, out, "outcome: redirected 308 to http://localhost/x")
}

func TestSimulateConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gw.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`
accessLists: [{id: office, allow: [10.0.0.0/8]}]
hosts:
  - names: [api.example.com]
    routes:
      - {path: /v2, upstream: v2}
      - {path: /admin, upstream: v2, policies: [office]}
upstreams: [{id: v2, destinations: [{id: a, address: "http://127.0.0.1:9"}]}]
`), 0o600))
	out, _, err := simulateCmd(t, "-config", path, "GET", "http://api.example.com/v2/users")
	require.NoError(t, err)
	assert.Contains(t, out, "outcome: forwarded to upstream v2")

	out, _, err = simulateCmd(t, "-config", path, "-from", "192.0.2.1", "GET", "http://api.example.com/admin")
	require.NoError(t, err)
	assert.Contains(t, out, "outcome: answered 403 (policy office: address not allowed)")
	out, _, err = simulateCmd(t, "-config", path, "-from", "10.1.1.1:5000", "GET", "http://api.example.com/admin")
	require.NoError(t, err)
	assert.Contains(t, out, "outcome: forwarded to upstream v2")

	out, _, err = simulateCmd(t, "-config", path, "-proxy-protocol-from", "10.0.0.0/8", "-from", "10.0.0.1", "-proxy-source", "192.0.2.9:1234", "GET", "http://api.example.com/admin")
	require.NoError(t, err)
	assert.Contains(t, out, "client 192.0.2.9 (the PROXY header's source)")
	assert.Contains(t, out, "outcome: answered 403")

	require.NoError(t, os.WriteFile(path, []byte(`hosts: [{names: [a.example], routes: [{upstream: nope}]}]`), 0o600))
	_, _, err = simulateCmd(t, "-config", path, "GET", "http://a.example/")
	var refused *simulate.DraftRefused
	require.ErrorAs(t, err, &refused)
	assert.Equal(t, "route.upstream.unknown", refused.Errors[0].Code)
}

func TestSimulateBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"GET"},
		{"-from", "nowhere", "GET", "http://localhost/"},
		{"-H", "no colon", "GET", "http://localhost/"},
		{"-proxy-source", "1.2.3.4", "GET", "http://localhost/"},
		{"-https", "8443", "GET", "http://localhost/"},
		{"-config", filepath.Join(t.TempDir(), "missing.yaml"), "GET", "http://localhost/"},
	} {
		_, _, err := simulateCmd(t, args...)
		assert.Error(t, err, "%q", args)
	}
	_, _, err := simulateCmd(t, "GET", "ftp://localhost/")
	var pe *simulate.ProbeError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, simulate.CodeProbeURLInvalid, pe.Code)
	_, _, err = simulateCmd(t, "-h")
	assert.True(t, errors.Is(err, flag.ErrHelp))
}
