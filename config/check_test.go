package config

import (
	"os"
	"testing"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRichDocument: testdata/valid.json and valid.yaml are the document
// richDocument builds, which has none of the document's own problems.
// (Package snapshot's tests hold every code of Codes to a case, and
// config.Check to finding each one alone.)
func TestRichDocument(t *testing.T) {
	assert.Empty(t, Check(richDocument()))
	assert.Empty(t, Check(&Document{}))
	assert.Empty(t, Check(nil))
	for _, name := range []string{"testdata/valid.json", "testdata/valid.yaml"} {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		doc, err := Decode(data)
		require.NoError(t, err, name)
		assert.Equal(t, richDocument(), doc, name)
	}
}

// TestCheckReportsOnce: a malformed or taken ID is reported on its own
// entry, not again on the references to it; the parts come in the order
// upstreams, policies, global, hosts.
func TestCheckReportsOnce(t *testing.T) {
	doc := &Document{
		Hosts: []Host{{Names: []string{"a.test"}, AccessList: "bad id", Policies: []string{"rl", "nope"},
			Routes: []Route{{Upstream: "u u"}, {Upstream: "u"}}}},
		Upstreams:   []Upstream{{ID: "u u"}, {ID: "u", Destinations: []Destination{{ID: "d", Address: "ftp://x"}}}, {ID: "u"}},
		AccessLists: []AccessList{{ID: "bad id"}},
		RateLimits:  []RateLimit{{ID: "rl", Requests: 1, Period: "1s", Scope: "route"}, {ID: "rl", Requests: 1, Period: "1", Scope: "route"}},
		Global:      Global{TrustedProxies: []string{"10.0.0.1/8"}},
	}
	assert.Equal(t, []string{
		CodeUpstreamIDInvalid + " upstreams[0].id",
		CodeUpstreamDestinationAddressInvalid + " upstreams[1].destinations[0].address",
		CodeUpstreamIDDuplicate + " upstreams[2].id",
		CodePolicyIDInvalid + " accessLists[0].id",
		CodePolicyIDDuplicate + " rateLimits[1].id",
		CodeDocumentDurationInvalid + " rateLimits[1].period",
		CodeGlobalTrustedProxyInvalid + " global.trustedProxies[0]",
		CodeHostPolicyUnknown + " hosts[0].policies[1]",
	}, problem.CodePaths(problem.List(Check(doc)).Err()))
}

// TestCheckerPartByPart: a compiler that checks only some parts gets only
// their problems, while the IDs of every part still decide duplicates.
func TestCheckerPartByPart(t *testing.T) {
	doc := &Document{
		Hosts:     []Host{{Routes: []Route{{Upstream: "nope"}}}, {Routes: []Route{{Upstream: "gone"}}}},
		Upstreams: []Upstream{{ID: "u", Destinations: []Destination{{ID: "d", Address: "x"}}}, {ID: "u"}},
	}
	var probs []*ValidationError
	c := NewChecker(doc, &probs)
	assert.True(t, c.UpstreamID(0))
	assert.False(t, c.UpstreamID(1))
	c.Host(1)
	assert.Equal(t, []string{CodeUpstreamIDDuplicate + " upstreams[1].id", CodeRouteUpstreamUnknown + " hosts[1].routes[0].upstream"},
		problem.CodePaths(problem.List(probs).Err()))
}
