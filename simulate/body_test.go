package simulate

import (
	"net/http"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const bodyDoc = `
global: {tls: {defaultCertificate: c}}
certificates: [{id: c}]
hosts:
  - names: [app.test]
    tls: {http3: true}
    routes:
      - {id: upload, path: /upload, upstream: u}
      - {id: small, path: /small, upstream: u, maxBodyBytes: 1000}
upstreams: [{id: u, destinations: [{id: a, address: "http://127.0.0.1:9"}]}]
`

// A declared body costs what the server reads of it, not its length: a
// probe declaring 64 MiB allocates a few MiB at most over every protocol,
// whether the gate hands it over (net/http then reads at most 256 KiB of
// it, HTTP/2 and HTTP/3 a flow-control window) or answers 413 on the
// declared length.
func TestDeclaredBodyCostsWhatTheServerReads(t *testing.T) {
	store := publish(t, bodyDoc, compilerFor(t))
	const declared = 64 << 20
	for _, tc := range []struct {
		url     string
		version int
		want    Kind
		status  int
	}{
		{"http://app.test/upload", 1, Forwarded, 0},
		{"https://app.test/upload", 1, Forwarded, 0},
		{"https://app.test/upload", 2, Forwarded, 0},
		{"https://app.test/upload", 3, Forwarded, 0},
		{"http://app.test/small", 1, Answered, 413},
		{"https://app.test/small", 2, Answered, 413},
		{"https://app.test/small", 3, Answered, 413},
	} {
		name := tc.url + " HTTP/" + strconv.Itoa(tc.version)
		probe := Probe{Method: "POST", URL: tc.url, HTTPVersion: tc.version, Header: http.Header{"Content-Length": {strconv.Itoa(declared)}}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		res, err := Run(LiveTarget(store), probe)
		runtime.ReadMemStats(&after)
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, res.Outcome.Kind, "%s: %s", name, res.Outcome.Reason)
		assert.Equal(t, tc.status, res.Outcome.Status, name)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d KiB allocated", name, allocated>>10)
		assert.Less(t, allocated, uint64(8<<20), "%s: a 64 MiB declared body allocated %d bytes", name, allocated)
	}
}
