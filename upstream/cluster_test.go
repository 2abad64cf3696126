package upstream_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/upstream"
)

// TestNewCluster: a cluster without a registry holds its destinations in
// ID order, all available, and verdicts move them out and back as in a
// registry's cluster.
func TestNewCluster(t *testing.T) {
	c, err := upstream.NewCluster("api", []upstream.DestinationConfig{
		{ID: "b", Scheme: "http", Host: "127.0.0.1:2", Metadata: map[string]string{"zone": "z"}},
		{ID: "a", Scheme: "http", Host: "127.0.0.1:1"},
	})
	require.NoError(t, err)
	assert.Equal(t, "api", c.ID())
	m := c.Members()
	require.Len(t, m.All, 2)
	assert.Equal(t, "a", m.All[0].ID(), "ordered by ID")
	assert.Equal(t, m.All, m.Available)
	b := c.Destination("b")
	require.NotNil(t, b)
	assert.Equal(t, "z", b.Zone())
	assert.Equal(t, "127.0.0.1:2", b.Host())
	assert.Equal(t, "api", b.ClusterID())
	assert.Same(t, c, b.Cluster())

	b.SetActiveHealth(upstream.Unhealthy)
	assert.Equal(t, []*upstream.Destination{c.Destination("a")}, c.Members().Available)
	c.Destination("a").SetPassiveHealth(upstream.Unhealthy)
	assert.True(t, c.Members().Panic, "none is healthy: HealthyOrPanic serves from all")
	c.SetAvailability(upstream.HealthyAndUnknown)
	assert.Empty(t, c.Members().Available)
	b.SetActiveHealth(upstream.Healthy)
	assert.Equal(t, []*upstream.Destination{b}, c.Members().Available)

	b.Begin()
	assert.EqualValues(t, 1, b.InFlight())
	b.End()
	assert.Zero(t, b.InFlight())
	assert.False(t, b.Removed())

	empty, err := upstream.NewCluster("", nil)
	require.NoError(t, err)
	assert.Empty(t, empty.Members().All)
}

// TestNewClusterRefusesIDs: every missing and repeated destination ID is
// reported at once, with its path.
func TestNewClusterRefusesIDs(t *testing.T) {
	d := func(id string) upstream.DestinationConfig {
		return upstream.DestinationConfig{ID: id, Scheme: "http", Host: "10.0.0.1:80"}
	}
	c, err := upstream.NewCluster("api", []upstream.DestinationConfig{d("a"), d(""), d("a"), d("b"), d("b")})
	assert.Nil(t, c)
	assert.Equal(t, []string{
		upstream.CodeDestinationIDMissing + " destinations[1].id",
		upstream.CodeDestinationIDDuplicate + " destinations[2].id",
		upstream.CodeDestinationIDDuplicate + " destinations[4].id",
	}, problem.CodePaths(err))
	var ve *upstream.ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Contains(t, err.Error(), `"a" is also destinations[0]`)
}

// TestNewClusterRefusesAddresses: a scheme that is not http or https, a
// host that is no host:port (empty, a URL, a bad name or port, an IPv6
// literal without brackets) and such a health host are refused by the
// rule the document's addresses follow; ClusterConfig.Validate says the
// same.
func TestNewClusterRefusesAddresses(t *testing.T) {
	ds := []upstream.DestinationConfig{
		{ID: "ok", Scheme: "https", Host: "API.example:8443", HealthHost: "[2001:db8::1]:9000"},
		{ID: "ftp", Scheme: "ftp", Host: "10.0.0.1:21"},
		{ID: "upper", Scheme: "HTTP", Host: "10.0.0.1:80"},
		{ID: "empty", Scheme: "http"},
		{ID: "url", Scheme: "http", Host: "http://10.0.0.1:80"},
		{ID: "noport", Scheme: "http", Host: "10.0.0.1"},
		{ID: "v6", Scheme: "http", Host: "2001:db8::1:80"},
		{ID: "name", Scheme: "http", Host: "a..b:80", HealthHost: "a:99999"},
	}
	c, err := upstream.NewCluster("api", ds)
	assert.Nil(t, c)
	want := []string{
		upstream.CodeDestinationSchemeInvalid + " destinations[1].scheme",
		upstream.CodeDestinationSchemeInvalid + " destinations[2].scheme",
		upstream.CodeDestinationHostInvalid + " destinations[3].host",
		upstream.CodeDestinationHostInvalid + " destinations[4].host",
		upstream.CodeDestinationHostInvalid + " destinations[5].host",
		upstream.CodeDestinationHostInvalid + " destinations[6].host",
		upstream.CodeDestinationHostInvalid + " destinations[7].host",
		upstream.CodeDestinationHealthHostInvalid + " destinations[7].healthHost",
	}
	assert.Equal(t, want, problem.CodePaths(err))
	assert.Equal(t, want, problem.CodePaths(upstream.ClusterConfig{ID: "api", Destinations: ds}.Validate()))
	assert.NoError(t, upstream.ClusterConfig{}.Validate(), "the zero ClusterConfig is a cluster without destinations")

	c, err = upstream.NewCluster("api", ds[:1])
	require.NoError(t, err)
	assert.Equal(t, "API.example:8443", c.Destination("ok").Host(), "kept as given")
}
