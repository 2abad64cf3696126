package simulate

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunUpstreamConnection: the trace of a forward names the client
// certificate the upstream's connections present and the PROXY header
// they start with: the client as the gate resolved it (through a trusted
// forwarder, port 0; the peer itself, its port) and the address it
// reached. An upstream that presents nothing has no such step.
func TestRunUpstreamConnection(t *testing.T) {
	const doc = `
global: {trustedProxies: [10.0.0.0/8]}
certificates: [{id: c}]
hosts:
  - names: [app.test]
    certificate: c
    routes:
      - {path: /api, upstream: api}
      - {path: /, upstream: web}
upstreams:
  - id: api
    destinations: [{id: a, address: "https://10.1.0.1"}]
    http: {proxyProtocol: v2, tls: {clientCertificate: c}}
  - id: web
    destinations: [{id: w, address: "http://10.1.0.2"}]
`
	target := LiveTarget(publish(t, doc, compilerFor(t)))
	for _, tc := range []struct {
		name  string
		probe Probe
		want  UpstreamConnection
	}{
		{"through a trusted forwarder", Probe{URL: "http://app.test/api", Peer: MustPeer("10.0.0.1"), Header: http.Header{"X-Forwarded-For": {"203.0.113.7"}}},
			UpstreamConnection{ClientCertificate: "c", ProxyProtocol: "v2", ProxySource: "203.0.113.7:0", ProxyDestination: "192.0.2.1:80"}},
		{"the peer itself", Probe{URL: "https://app.test/api", Peer: MustPeer("198.51.100.9:4242")},
			UpstreamConnection{ClientCertificate: "c", ProxyProtocol: "v2", ProxySource: "198.51.100.9:4242", ProxyDestination: "192.0.2.1:443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Run(target, tc.probe)
			require.NoError(t, err)
			require.Equal(t, Forwarded, res.Outcome.Kind, "%+v", res.Outcome)
			require.NotNil(t, res.Outcome.Upstream.Connection)
			assert.Equal(t, tc.want, *res.Outcome.Upstream.Connection)
			last := res.Trace[len(res.Trace)-1]
			assert.Equal(t, "upstreamConnection", last.Kind)
			assert.Equal(t, "a new connection presents client certificate c on TLS connections; starts with a PROXY v2 header from "+
				tc.want.ProxySource+" to "+tc.want.ProxyDestination, last.Summary)
		})
	}
	res, err := Run(target, Probe{URL: "http://app.test/"})
	require.NoError(t, err)
	assert.Nil(t, res.Outcome.Upstream.Connection)
	assert.Equal(t, "upstream", res.Trace[len(res.Trace)-1].Kind)
}
