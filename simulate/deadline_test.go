package simulate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/snapshot"
)

// A simulation under a context that ended returns the context's error,
// with the code simulate.deadline when its deadline passed, never an
// outcome.
func TestRunContextEnded(t *testing.T) {
	store := publish(t, diffBase, snapshot.Compiler{})
	probe := Probe{URL: "http://api.example.com/v1/x"}

	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	res, err := RunContext(past, LiveTarget(store), probe)
	assert.Nil(t, res)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, []string{CodeDeadline + " "}, problem.CodePaths(err))

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = RunContext(gone, LiveTarget(store), probe)
	assert.Nil(t, res)
	assert.ErrorIs(t, err, context.Canceled)

	res, err = RunContext(context.Background(), LiveTarget(store), probe)
	require.NoError(t, err)
	assert.Equal(t, Forwarded, res.Outcome.Kind)
}

// A diff stops at its deadline, with the error and no report, instead of
// simulating the probes that remain.
func TestDiffContextStopsAtTheDeadline(t *testing.T) {
	store := publish(t, diffBase, snapshot.Compiler{})
	probes := make([]Probe, DefaultMaxDiffProbes)
	for i := range probes {
		probes[i] = Probe{URL: "http://api.example.com/v1/x"}
	}
	// A thousand probes take far longer than 5 ms: two simulations each.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	rep, err := DiffContext(ctx, LiveTarget(store), Target{Draft: decode(t, diffBase)}, probes)
	assert.Nil(t, rep)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Equal(t, []string{CodeDeadline + " "}, problem.CodePaths(err))
}
