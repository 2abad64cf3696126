package balance

import (
	"fmt"
	"testing"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/require"
)

// cluster builds a cluster "c" of the given destinations, as a user of
// balance alone does: without a registry.
func cluster(t testing.TB, dests ...upstream.DestinationConfig) *upstream.Cluster {
	t.Helper()
	c, err := upstream.NewCluster("c", dests)
	require.NoError(t, err)
	return c
}

func dest(id, host, zone string) upstream.DestinationConfig {
	d := upstream.DestinationConfig{ID: id, Scheme: "http", Host: host}
	if zone != "" {
		d.Metadata = map[string]string{"zone": zone}
	}
	return d
}

// nDests builds a cluster of n destinations d000, d001, ...
func nDests(t testing.TB, n int) *upstream.Cluster {
	t.Helper()
	ds := make([]upstream.DestinationConfig, n)
	for i := range ds {
		ds[i] = dest(fmt.Sprintf("d%03d", i), fmt.Sprintf("127.0.0.1:%d", 10000+i), "")
	}
	return cluster(t, ds...)
}

func count(picks map[*upstream.Destination]int, id string) int {
	for d, n := range picks {
		if d.ID() == id {
			return n
		}
	}
	return 0
}
