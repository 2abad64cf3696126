package simulate

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/redact"
	"github.com/paduraksa/paduraksa/snapshot"
)

// credentialsDoc sets credentials on answers (a response header rule, a
// cookie, an affinity cookie) and matches one in a route.
const credentialsDoc = `
hosts:
  - names: [app.test]
    headers:
      response:
        - {name: X-Auth-Token, value: resp-s3cret}
        - {name: Set-Cookie, operation: add, value: sid=s3cret-cookie}
        - {name: X-Keyboard, value: qwerty}
    routes:
      - id: keyed
        path: /keyed
        upstream: api
        match: {headers: [{name: X-Api-Key, value: cfg-s3cret}]}
      - {id: sticky, path: /, upstream: api}
      - {id: fixed, path: /fixed, fixed: {status: 200, body: ok}}
upstreams:
  - id: api
    affinity: {enabled: true}
    destinations: [{id: a, address: "http://192.0.2.10:80"}]
`

// credentialProbe carries a credential in every header the rule names.
func credentialProbe(path string) Probe {
	return Probe{URL: "http://app.test" + path, Header: http.Header{
		"Authorization":       {"Bearer s3cret-bearer"},
		"Proxy-Authorization": {"Basic s3cret-basic"},
		"Cookie":              {"sid=s3cret-sid"},
		"X-Api-Key":           {"wrong-s3cret"},
		"X-Client-Secret":     {"s3cret-client"},
	}}
}

// TestTraceShowsNoCredential: the results and traces of requests that
// carry credentials, to routes whose answers set them and whose match
// names one, show "(redacted)" in place of every one; the names that are
// not credentials keep their values, and the probe is left as it was.
func TestTraceShowsNoCredential(t *testing.T) {
	store := publish(t, credentialsDoc, snapshot.Compiler{})
	for _, path := range []string{"/keyed", "/fixed", "/"} {
		p := credentialProbe(path)
		res, err := Run(LiveTarget(store), p)
		require.NoError(t, err, path)
		b, err := json.Marshal(res)
		require.NoError(t, err)
		assert.NotContains(t, string(b), "s3cret", path)
		assert.Equal(t, "Bearer s3cret-bearer", p.Header.Get("Authorization"), "the probe is not touched")
		if path == "/fixed" {
			assert.Equal(t, []string{redact.Shown}, res.Outcome.Header["X-Auth-Token"], string(b))
			assert.Equal(t, []string{redact.Shown}, res.Outcome.Header["Set-Cookie"], string(b))
			assert.Equal(t, "qwerty", res.Outcome.Header.Get("X-Keyboard"), string(b))
		}
		if path == "/keyed" {
			assert.Contains(t, string(b), "X-Api-Key does not match exact (redacted)")
		}
	}

	draft := DraftTarget(decode(t, credentialsDoc))
	draft.Draft.Hosts[0].Routes[1].Upstream = "gone"
	draft.Draft.Upstreams = append(draft.Draft.Upstreams, draft.Draft.Upstreams[0])
	draft.Draft.Upstreams[1].ID = "gone"
	probes := []Probe{credentialProbe("/"), credentialProbe("/keyed"), credentialProbe("/fixed")}
	rep, err := Diff(LiveTarget(store), draft, probes)
	require.NoError(t, err)
	require.NotEmpty(t, rep.Changes)
	b, err := json.Marshal(rep)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "s3cret")
	assert.Equal(t, redact.Shown, rep.Changes[0].Probe.Header.Get("Authorization"))
	assert.Equal(t, "Bearer s3cret-bearer", probes[0].Header.Get("Authorization"), "the probes are not touched")
}
