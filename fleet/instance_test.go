package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/fleet/etcdtest"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
)

// TestEtcdOutcomeOfASavedVersion: the outcome of a saved version is the
// one this instance gave it from its watch; the serving version and the
// last refusal follow the outcomes.
func TestEtcdOutcomeOfASavedVersion(t *testing.T) {
	e := etcdtest.Start(t)
	first := put(t, e.Client(), fixed("one"))
	in := newInstance(t, e.Endpoint)
	v, rev, ok := in.src.ServingVersion()
	require.True(t, ok)
	assert.Equal(t, strconv.FormatInt(first, 10), v)
	assert.NotZero(t, rev)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	saved, err := in.src.Save(ctx, source.Push{Data: []byte(fixed("two")), IfVersion: v})
	require.NoError(t, err)
	o, err := in.src.Outcome(ctx, saved)
	require.NoError(t, err)
	assert.Equal(t, snapshot.Applied, o.Status)
	v2, rev2, _ := in.src.ServingVersion()
	assert.Equal(t, saved, v2)
	assert.Equal(t, o.Revision, rev2)
	assert.Equal(t, "two", in.body(t))

	bad := put(t, e.Client(), "hosts:\n  - names: [app.test]\n    bogus: 1\n")
	o, err = in.src.Outcome(ctx, strconv.FormatInt(bad, 10))
	require.NoError(t, err)
	assert.Equal(t, snapshot.Refused, o.Status)
	st := in.src.Status()
	require.NotNil(t, st.LastRefusal)
	assert.Equal(t, strconv.FormatInt(bad, 10), st.LastRefusal.Version)
	require.NotEmpty(t, st.LastRefusal.Problems)
	assert.NotEmpty(t, st.LastRefusal.Problems[0].Code)
	assert.Equal(t, saved, st.Serving.Version, "a refusal leaves the serving version")

	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	_, err = in.src.Outcome(short, strconv.FormatInt(bad+100, 10))
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a version not yet seen is waited for")
	_, err = in.src.Outcome(ctx, "seven")
	assert.ErrorIs(t, err, source.ErrStale)
	o, err = in.src.Outcome(ctx, strconv.FormatInt(first, 10))
	require.NoError(t, err)
	assert.Equal(t, snapshot.Applied, o.Status, "kept")
}

// instances lists the fleet's instances through src.
func instances(t *testing.T, src *fleet.Etcd) []fleet.InstanceState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := src.Instances(ctx)
	require.NoError(t, err)
	return list
}

// runInstance runs an instance of in named name until the returned stop.
func runInstance(t *testing.T, in *instance, name string) (stop func()) {
	t.Helper()
	fi, err := fleet.NewInstance(fleet.InstanceConfig{Etcd: in.src, Name: name, LeaseTTL: 2 * time.Second,
		Engines: func() []fleet.Engine { return []fleet.Engine{{Name: "redis", Reachable: true}} }})
	require.NoError(t, err)
	assert.Equal(t, fleet.DefaultPrefix+"instances/"+name, fi.Key())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fi.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Error("the instance's Run did not return")
		}
	}
	t.Cleanup(stop)
	return stop
}

// TestInstanceStateUnderLease: each instance's state is listed, sorted,
// with what it serves and its engines, rewritten on each outcome; a
// stopped instance leaves at once (its lease revoked), one whose client
// died when its lease ends.
func TestInstanceStateUnderLease(t *testing.T) {
	e := etcdtest.Start(t)
	put(t, e.Client(), fixed("one"))
	crashClient := etcdtest.ClientOf(t, e.Endpoint)
	crashSrc, err := fleet.NewEtcd(fleet.EtcdConfig{Client: crashClient})
	require.NoError(t, err)
	a, b := newInstance(t, e.Endpoint), newInstance(t, e.Endpoint)
	stopB := runInstance(t, b, "b")
	runInstance(t, a, "a")
	runInstance(t, &instance{src: crashSrc}, "crashing")
	waitFor(t, "three instances listed", func() bool { return len(instances(t, a.src)) == 3 })
	list := instances(t, b.src)
	assert.Equal(t, []string{"a", "b", "crashing"}, []string{list[0].Instance, list[1].Instance, list[2].Instance})
	v, _, _ := a.src.ServingVersion()
	assert.Equal(t, v, list[0].Version)
	assert.False(t, list[0].Started.IsZero())
	require.Len(t, list[0].Engines, 2)
	assert.Equal(t, fleet.Engine{Name: "redis", Reachable: true}, list[0].Engines[1])
	assert.Equal(t, "etcd", list[0].Engines[0].Name)
	assert.Empty(t, list[2].Version, "an instance that published nothing serves no version")

	bad := strconv.FormatInt(put(t, e.Client(), "hosts: 7\n"), 10)
	waitFor(t, "the refusal in a's and b's state", func() bool {
		l := instances(t, a.src)
		return len(l) == 3 && l[0].LastRefusal != nil && l[0].LastRefusal.Version == bad && l[1].LastRefusal != nil && l[1].LastRefusal.Version == bad
	})
	raw, err := json.Marshal(instances(t, a.src)[0])
	require.NoError(t, err)
	assert.Contains(t, string(raw), `"lastRefusal":{"version":"`+bad+`"`)

	stopB()
	waitFor(t, "the stopped instance to leave at once", func() bool { return len(instances(t, a.src)) == 2 })
	crashClient.Close()
	start := time.Now()
	waitFor(t, "the dead instance to leave when its lease ends", func() bool { return len(instances(t, a.src)) == 1 })
	assert.Less(t, time.Since(start), 6*time.Second)
	assert.Equal(t, "a", instances(t, a.src)[0].Instance)
}

// TestInstancesWhileEtcdIsAway: the list answers ErrUnreachable at once
// while the source finds etcd unreachable.
func TestInstancesWhileEtcdIsAway(t *testing.T) {
	e := etcdtest.Start(t)
	put(t, e.Client(), fixed("one"))
	a := newInstance(t, e.Endpoint)
	e.Stop()
	waitFor(t, "etcd found unreachable", func() bool { return !a.src.Status().Reachable })
	_, err := a.src.Instances(context.Background())
	assert.ErrorIs(t, err, fleet.ErrUnreachable)
}

func TestNewInstanceProblems(t *testing.T) {
	_, err := fleet.NewInstance(fleet.InstanceConfig{Name: "a/b", LeaseTTL: time.Millisecond})
	var codes []string
	for _, p := range problem.All(err) {
		codes = append(codes, p.Code+"@"+p.Path)
	}
	assert.Equal(t, []string{fleet.CodeEtcdMissing + "@etcd", fleet.CodeNameInvalid + "@name", fleet.CodeLeaseTTLInvalid + "@leaseTTL"}, codes)
	assert.True(t, errors.As(err, new(*problem.Error)))
}

// TestInstancesAreBounded: one read lists at most MaxInstances, the
// first by name, however many keys the prefix holds.
func TestInstancesAreBounded(t *testing.T) {
	e := etcdtest.Start(t)
	put(t, e.Client(), fixed("one"))
	a := newInstance(t, e.Endpoint)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i <= fleet.MaxInstances; i += 100 {
		var ops []clientv3.Op
		for j := i; j < i+100 && j <= fleet.MaxInstances; j++ {
			name := fmt.Sprintf("i%05d", j)
			ops = append(ops, clientv3.OpPut(fleet.DefaultPrefix+"instances/"+name, `{"instance":"`+name+`"}`))
		}
		_, err := e.Client().Txn(ctx).Then(ops...).Commit()
		require.NoError(t, err)
	}
	list := instances(t, a.src)
	require.Len(t, list, fleet.MaxInstances)
	assert.Equal(t, "i00000", list[0].Instance)
	assert.Equal(t, fmt.Sprintf("i%05d", fleet.MaxInstances-1), list[len(list)-1].Instance)
}
