package admin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckConfig: a draft gets the problems a refused push gets, in the
// same order at the same paths, and nothing is published either way.
func TestCheckConfig(t *testing.T) {
	a := newAPI(t, Config{})
	good := fixedDoc("app.test", "one")
	ans, _ := a.push(good)
	require.Equal(t, 200, ans.status)

	check := func(doc string, hdr ...string) (answer, CheckResult) {
		t.Helper()
		ans := a.do("POST", "/config/check", doc, hdr...)
		var res CheckResult
		if ans.status == 200 {
			require.NoError(t, json.Unmarshal([]byte(ans.body), &res), ans.body)
		}
		return ans, res
	}
	bad := "hosts:\n  - names: [app.test]\n    routes: [{upstream: missing}]\n    bogus: 1\nupstreams:\n  - id: a\n    destinations: [{id: d, address: 'ftp://x'}]\n"
	ans, res := check(bad, "Content-Type", "application/yaml")
	require.Equal(t, 200, ans.status, ans.body)
	assert.False(t, res.OK)
	assert.Equal(t, []string{
		"document.field.unknown hosts[0].bogus",
		"upstream.destination.address.invalid upstreams[0].destinations[0].address",
		"route.upstream.unknown hosts[0].routes[0].upstream",
	}, codePaths(res.Errors))
	assert.NotNil(t, res.Warnings)
	_, pushed := a.push(bad)
	assert.Equal(t, codePaths(pushed.Errors), codePaths(res.Errors), "the problems a push gets")

	ans, res = check(`{"hosts":[{"names":["b.test"],"kind":"fixed","fixed":{"status":204}}]}`)
	require.Equal(t, 200, ans.status, ans.body)
	assert.True(t, res.OK, ans.body)
	assert.Empty(t, res.Errors)
	assert.NotNil(t, res.Errors)
	assert.Equal(t, good, a.do("GET", "/config", "").body, "nothing published")
	cur, _ := a.pub.Current()
	assert.Equal(t, uint64(1), cur.Revision)

	for _, tc := range []struct {
		body, ctype string
		status      int
		code        string
	}{
		{"", "", 400, CodeBodyEmpty},
		{"  \n", "", 400, CodeBodyEmpty},
		{"{}", "image/png", 415, CodeContentType},
		{strings.Repeat("#", DefaultMaxDocumentBytes+1), "", 413, CodeBodyTooLarge},
	} {
		var hdr []string
		if tc.ctype != "" {
			hdr = []string{"Content-Type", tc.ctype}
		}
		ans, _ := check(tc.body, hdr...)
		assert.Equal(t, tc.status, ans.status, tc.code)
		assert.Equal(t, tc.code, errorCode(t, ans))
	}
	ans = a.do("GET", "/config/check", "")
	assert.Equal(t, 405, ans.status)
	assert.Equal(t, "POST", ans.header.Get("Allow"))
}
