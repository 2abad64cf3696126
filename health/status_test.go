package health

import (
	"context"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLastChangeAndChecks(t *testing.T) {
	_, c := newCluster(t, dest("a", refusedAddr(t)), dest("b", refusedAddr(t)))
	m := New(Options{})
	ch := watch(t, m)
	assert.False(t, m.Checks(c), "not named by an Update yet")
	_, ok := m.LastChange(c.Destination("a"))
	assert.False(t, ok)

	require.NoError(t, m.Update(ClusterHealth{Cluster: c, Transport: transport(t), Config: Config{
		Active: ActiveConfig{Enabled: true, Interval: 10 * time.Millisecond, Timeout: 10 * time.Second},
	}}))
	assert.True(t, m.Checks(c))
	require.NoError(t, m.Start(context.Background()))
	defer m.Close()
	ev := await(t, ch, 10*time.Second, is("a", CheckActive, upstream.Unhealthy))
	last, ok := m.LastChange(c.Destination("a"))
	require.True(t, ok, "recorded before subscribers hear of it")
	ev.Destination, last.Destination = nil, nil
	assert.Equal(t, ev, last)
	assert.Equal(t, "a", last.DestinationID)
	assert.Contains(t, last.Reason, "refused")
	assert.False(t, last.Time.IsZero())

	// A cluster left out of an Update is not checked any more; what
	// happened to its destinations stays readable.
	require.NoError(t, m.Update())
	assert.False(t, m.Checks(c))
	_, ok = m.LastChange(c.Destination("a"))
	assert.True(t, ok)
}
