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
	c, err := upstream.NewCluster("api", []upstream.DestinationConfig{
		{ID: "a"}, {}, {ID: "a"}, {ID: "b"}, {ID: "b"},
	})
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
