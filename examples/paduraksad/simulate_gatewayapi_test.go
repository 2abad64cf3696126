package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/gwconformance"
	"github.com/paduraksa/paduraksa/simulate"
)

// TestSimulateGatewayAPI runs every probe of the Gateway API conformance
// cases through "paduraksad simulate -gateway-api FILE -json": the route
// that decides, the upstream it forwards to (or the status of the
// edge's own answer and its Location) and the mirror are the case's.
func TestSimulateGatewayAPI(t *testing.T) {
	cases, err := gwconformance.Load("../../gatewayapi/testdata/conformance")
	require.NoError(t, err)
	ports := map[string]int{"svc-a": 9001, "svc-b": 9002, "svc-c": 9003}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gateway.yaml")
			require.NoError(t, os.WriteFile(path, append(c.Objects, gwconformance.Backends(ports)...), 0o644))
			for _, p := range c.Probes {
				args := []string{"-gateway-api", path, "-json"}
				for k, vs := range p.Headers {
					for _, v := range vs {
						args = append(args, "-H", k+": "+v)
					}
				}
				out, _, err := simulateCmd(t, append(args, cmpOr(p.Method, "GET"), "http://"+p.Host+p.Path)...)
				require.NoError(t, err, "%s", &p)
				var res simulate.Result
				require.NoError(t, json.Unmarshal([]byte(out), &res), "%s", &p)
				o := &res.Outcome
				if p.Want.Backend == "" && len(p.Want.Shares) == 0 {
					assert.Equal(t, p.Want.Status, o.Status, "%s: %s", &p, o.Reason)
					assert.NotEqual(t, simulate.Forwarded, o.Kind, "%s", &p)
					assert.Equal(t, p.Want.ResponseHeaders["Location"], o.Location, "%s", &p)
					continue
				}
				require.Equal(t, simulate.Forwarded, o.Kind, "%s: %s", &p, o.Reason)
				assert.Equal(t, p.Want.Route, o.Route, "%s", &p)
				if p.Want.Backend != "" {
					assert.Equal(t, gwconformance.Upstream(p.Want.Backend), o.Upstream.ID, "%s", &p)
				} else {
					require.NotNil(t, o.Split, "%s", &p)
					assert.Contains(t, p.Want.Shares, strings.TrimSuffix(strings.TrimPrefix(o.Split.Upstream, "default."), ".8080"), "%s", &p)
				}
				if p.Want.Mirror != "" {
					require.NotNil(t, o.Mirror, "%s", &p)
					assert.Equal(t, gwconformance.Upstream(p.Want.Mirror), o.Mirror.Upstream, "%s", &p)
				} else {
					assert.Nil(t, o.Mirror, "%s", &p)
				}
			}
		})
	}
}

// TestSimulateGatewayAPIRefused: objects the translation refuses, and a
// document the publisher refuses, are said at the objects' paths.
func TestSimulateGatewayAPIRefused(t *testing.T) {
	dir := t.TempDir()
	objects := func(rule string) string {
		path := filepath.Join(dir, "gateway.yaml")
		require.NoError(t, os.WriteFile(path, shopObjects(rule+"\n", map[string]int{"svc-a": 9001, "svc-b": 9002, "svc-c": 9003}), 0o644))
		return path
	}
	_, _, err := simulateCmd(t, "-gateway-api", objects("    - filters: [{type: CORS, cors: {allowOrigins: [\"https://a.test\"]}}]\n      backendRefs: [{name: svc-a, port: 8080}]"), "GET", "http://shop.test/")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTPRoute default/shop: spec.rules[0].filters[0]: CORS is not translated")

	_, _, err = simulateCmd(t, "-gateway-api", objects("    - timeouts: {request: 1s, backendRequest: 2s}\n      backendRefs: [{name: svc-a, port: 8080}]"), "GET", "http://shop.test/")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTPRoute default/shop: spec.rules[0].timeouts.backendRequest: ")
	assert.Contains(t, err.Error(), "(the document's hosts[0].routes[0].timeouts.perTry)")
}

// TestSimulateGatewayAPISecret: an HTTPS listener's Secret is simulated
// with a self-signed certificate for its hosts' names, and nothing is
// written, neither under the default directory nor anywhere else.
func TestSimulateGatewayAPISecret(t *testing.T) {
	t.Chdir(t.TempDir())
	certFile, keyFile := pemPair(t)
	crt, err := os.ReadFile(certFile)
	require.NoError(t, err)
	key, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	objects := `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: paduraksa
  listeners:
    - {name: http, protocol: HTTP, port: 80}
    - {name: https, protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: cert}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop}
spec:
  parentRefs: [{name: gw}]
  hostnames: [app.test]
  rules: [{backendRefs: [{name: svc-a, port: 8080}]}]
---
apiVersion: v1
kind: Secret
metadata: {name: cert}
type: kubernetes.io/tls
data:
  tls.crt: ` + base64.StdEncoding.EncodeToString(crt) + `
  tls.key: ` + base64.StdEncoding.EncodeToString(key) + "\n"
	require.NoError(t, os.WriteFile("gateway.yaml", append([]byte(objects), gwconformance.Backends(map[string]int{"svc-a": 9001, "svc-b": 9002, "svc-c": 9003})...), 0o644))
	before, err := os.ReadDir(".")
	require.NoError(t, err)
	out, _, err := simulateCmd(t, "-gateway-api", "gateway.yaml", "GET", "https://app.test/x")
	require.NoError(t, err)
	assert.Contains(t, out, "outcome: forwarded to upstream default.svc-a.8080")
	after, err := os.ReadDir(".")
	require.NoError(t, err)
	assert.Equal(t, len(before), len(after), "a simulation writes no Secret")
}
