package simulate

import (
	"net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

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
// probe declaring 64 MiB allocates a window's worth over HTTP/1.1 and a
// flow-control window's over HTTP/2 and HTTP/3, whether the gate hands
// it over (net/http then closes the connection unread) or answers 413 on
// the declared length; and the answer is read as soon as it is written,
// not after net/http's half-second linger before it closes a connection
// whose body it left unread.
func TestDeclaredBodyCostsWhatTheServerReads(t *testing.T) {
	store := publish(t, bodyDoc, compilerFor(t))
	const declared = 64 << 20
	for _, tc := range []struct {
		url     string
		version int
		want    Kind
		status  int
		most    uint64 // bytes allocated
	}{
		{"http://app.test/upload", 1, Forwarded, 0, 1 << 20},
		{"https://app.test/upload", 1, Forwarded, 0, 1 << 20},
		{"https://app.test/upload", 2, Forwarded, 0, 4 << 20},
		{"https://app.test/upload", 3, Forwarded, 0, 4 << 20},
		{"http://app.test/small", 1, Answered, 413, 1 << 20},
		{"https://app.test/small", 1, Answered, 413, 1 << 20},
		{"https://app.test/small", 2, Answered, 413, 4 << 20},
		{"https://app.test/small", 3, Answered, 413, 4 << 20},
	} {
		name := tc.url + " HTTP/" + strconv.Itoa(tc.version)
		probe := Probe{Method: "POST", URL: tc.url, HTTPVersion: tc.version, Header: http.Header{"Content-Length": {strconv.Itoa(declared)}}}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		res, err := Run(LiveTarget(store), probe)
		took := time.Since(start)
		runtime.ReadMemStats(&after)
		require.NoError(t, err, name)
		assert.Equal(t, tc.want, res.Outcome.Kind, "%s: %s", name, res.Outcome.Reason)
		assert.Equal(t, tc.status, res.Outcome.Status, name)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %d KiB allocated", name, allocated>>10)
		assert.Less(t, allocated, tc.most, "%s: a 64 MiB declared body allocated %d bytes", name, allocated)
		assert.Less(t, took, 400*time.Millisecond, "%s: the answer waited for the close", name)
	}
}
