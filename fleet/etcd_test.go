package fleet_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/paduraksa/paduraksa/fleet"
	"github.com/paduraksa/paduraksa/fleet/etcdtest"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
)

const key = fleet.DefaultPrefix + "config"

// fixed is a document whose one host answers body.
func fixed(body string) string {
	return "hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200, body: " + body + "}\n"
}

// logBuffer is a log sink a test reads while the source writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// instance is one gateway served from etcd: its source, publisher and a
// real listener serving the store.
type instance struct {
	src  *fleet.Etcd
	pub  *snapshot.Publisher
	url  string
	logs *logBuffer

	mu        sync.Mutex
	reachable []bool // OnReachable's calls
}

// newInstance loads the document of endpoint's etcd, publishes it, serves
// it on 127.0.0.1 and runs the source until the test ends.
func newInstance(t testing.TB, endpoint string) *instance {
	t.Helper()
	in := &instance{logs: &logBuffer{}}
	src, err := fleet.NewEtcd(fleet.EtcdConfig{
		Client:      etcdtest.ClientOf(t, endpoint),
		ProbePeriod: 100 * time.Millisecond, ProbeTimeout: 300 * time.Millisecond, RetryPeriod: 100 * time.Millisecond,
		OnReachable: func(ok bool, _ error) { in.mu.Lock(); in.reachable = append(in.reachable, ok); in.mu.Unlock() },
		Logger:      slog.New(slog.NewTextHandler(in.logs, nil)),
	})
	require.NoError(t, err)
	in.src = src
	store := new(snapshot.Store)
	in.pub = snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	t.Cleanup(func() { in.pub.Close() })
	ctx := context.Background()
	doc, err := src.Load(ctx)
	require.NoError(t, err)
	o, err := source.To(in.pub)(ctx, doc)
	require.NoError(t, err)
	require.Equal(t, snapshot.Applied, o.Status, "%v", o.Errors)
	src.Record(doc, o)
	srv := httptest.NewServer(store)
	t.Cleanup(srv.Close)
	in.url = srv.URL

	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- src.Run(rctx, source.To(in.pub)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
	return in
}

// body returns what the instance answers for app.test.
func (in *instance) body(t *testing.T) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, in.url+"/", nil)
	require.NoError(t, err)
	req.Host = "app.test"
	c := &http.Client{Timeout: 5 * time.Second}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(b)
}

// waitFor polls cond until it holds, for at most 10 s: what a Run did is
// seen through what the instance serves, logs or reports.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (in *instance) waitServes(t *testing.T, want string) {
	t.Helper()
	waitFor(t, "the instance to serve "+want, func() bool { return in.body(t) == want })
}

func put(t testing.TB, c *clientv3.Client, value string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.Put(ctx, key, value)
	require.NoError(t, err)
	return resp.Header.Revision
}

// TestEtcdServesTheDocumentAndItsChanges: the document put in etcd is
// served at start, with the key's mod revision as its version, and each
// later put is served in turn.
func TestEtcdServesTheDocumentAndItsChanges(t *testing.T) {
	e := etcdtest.Start(t)
	c := e.Client()
	rev := put(t, c, fixed("one"))
	in := newInstance(t, e.Endpoint)
	assert.Equal(t, "one", in.body(t))
	assert.Equal(t, itoa(rev), in.src.Status().Version)

	rev = put(t, c, fixed("two"))
	in.waitServes(t, "two")
	waitFor(t, "the applied change logged", func() bool {
		return strings.Contains(in.logs.String(), `msg="config from etcd" etcdKey=/paduraksa/config version=`+itoa(rev)+" why=change revision=2 status=applied")
	})
	rev = put(t, c, `{"hosts": [{"names": ["app.test"], "kind": "fixed", "fixed": {"status": 200, "body": "json"}}]}`)
	in.waitServes(t, "json")
	assert.Equal(t, itoa(rev), in.src.Status().Version)
}

// TestEtcdRefusedDocumentKeepsTheOld: a document the publisher refuses
// is logged with its problems and the previous one keeps serving; the
// next good one is served.
func TestEtcdRefusedDocumentKeepsTheOld(t *testing.T) {
	e := etcdtest.Start(t)
	c := e.Client()
	put(t, c, fixed("one"))
	in := newInstance(t, e.Endpoint)
	put(t, c, "hosts:\n  - names: [app.test]\n    routes: [{path: /, upstream: missing}]\n    bogus: 1\n")
	waitFor(t, "the refusal logged", func() bool {
		return strings.Contains(in.logs.String(), `msg="config from etcd refused; the previous config keeps serving"`)
	})
	assert.Contains(t, in.logs.String(), "status=refused problems=2")
	assert.Contains(t, in.logs.String(), "(route.upstream.unknown)")
	assert.Equal(t, "one", in.body(t))
	cur, _ := in.pub.Current()
	assert.Equal(t, uint64(1), cur.Revision)

	put(t, c, fixed("three"))
	in.waitServes(t, "three")
}

// TestEtcdSaveIfMatchRace: two instances saving on the same version race
// in etcd; one wins, the other gets ErrStale, and both serve the winner's
// document. A version that names no revision never matches; a save
// without one always does.
func TestEtcdSaveIfMatchRace(t *testing.T) {
	e := etcdtest.Start(t)
	put(t, e.Client(), fixed("one"))
	a, b := newInstance(t, e.Endpoint), newInstance(t, e.Endpoint)
	v := a.src.Status().Version
	require.Equal(t, v, b.src.Status().Version)

	type result struct {
		version string
		err     error
	}
	results := make([]result, 2)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, in := range []*instance{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ver, err := in.src.Save(context.Background(), source.Push{Data: []byte(fixed("from-" + "ab"[i:i+1])), IfVersion: v})
			results[i] = result{ver, err}
		}()
	}
	close(start)
	wg.Wait()
	winner, loser := 0, 1
	if results[0].err != nil {
		winner, loser = 1, 0
	}
	require.NoError(t, results[winner].err, "one save wins")
	require.ErrorIs(t, results[loser].err, source.ErrStale, "the other is stale")
	assert.Empty(t, results[loser].version)
	want := "from-" + "ab"[winner:winner+1]
	a.waitServes(t, want)
	b.waitServes(t, want)
	assert.Equal(t, results[winner].version, a.src.Status().Version)
	assert.Equal(t, results[winner].version, b.src.Status().Version)

	_, err := a.src.Save(context.Background(), source.Push{Data: []byte(fixed("x")), IfVersion: "seven"})
	assert.ErrorIs(t, err, source.ErrStale)
	_, err = a.src.Save(context.Background(), source.Push{Data: []byte(fixed("x")), IfVersion: v})
	assert.ErrorIs(t, err, source.ErrStale, "the version the race was based on is gone")
	ver, err := b.src.Save(context.Background(), source.Push{Data: []byte(fixed("free"))})
	require.NoError(t, err)
	a.waitServes(t, "free")
	assert.Equal(t, ver, a.src.Status().Version)
}

// TestEtcdOutage: with etcd stopped, the instance keeps serving and
// reports it; a document put meanwhile (through the member started on
// its data directory where the instance does not reach it) is served
// once etcd is back.
func TestEtcdOutage(t *testing.T) {
	e := etcdtest.Start(t)
	put(t, e.Client(), fixed("one"))
	in := newInstance(t, e.Endpoint)
	require.True(t, in.src.Status().Reachable)

	e.Stop()
	waitFor(t, "the outage reported", func() bool { return !in.src.Status().Reachable })
	st := in.src.Status()
	assert.Error(t, st.Err)
	assert.False(t, st.Since.IsZero())
	assert.Equal(t, "one", in.body(t), "the last applied document keeps serving")
	assert.Contains(t, in.logs.String(), `msg="etcd unreachable; the last applied config keeps serving"`)

	aside := e.StartAside()
	rev := put(t, etcdtest.ClientOf(t, aside), fixed("meanwhile"))
	e.Stop()
	assert.Equal(t, "one", in.body(t))
	e.Start()
	in.waitServes(t, "meanwhile")
	waitFor(t, "etcd reported reachable", func() bool { return in.src.Status().Reachable })
	assert.Equal(t, itoa(rev), in.src.Status().Version)
	assert.NoError(t, in.src.Status().Err)
	in.mu.Lock()
	assert.Equal(t, []bool{false, true}, in.reachable, "one call per change")
	in.mu.Unlock()
	assert.Equal(t, 1, strings.Count(in.logs.String(), "etcd unreachable"), "logged once")
}

// TestNewEtcdProblems: every problem of a config at once, with its code
// and path.
func TestNewEtcdProblems(t *testing.T) {
	_, err := fleet.NewEtcd(fleet.EtcdConfig{Prefix: "paduraksa", MaxBytes: -1, RetryPeriod: -time.Second})
	require.Error(t, err)
	var pe *source.ValidationError
	require.True(t, errors.As(err, &pe))
	for _, s := range []string{"fleet.etcd.client.missing", "client", "fleet.etcd.prefix.invalid", "prefix",
		"fleet.etcd.maxBytes.invalid", "maxBytes", "fleet.etcd.period.invalid", "retryPeriod"} {
		assert.Contains(t, err.Error(), s)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestEtcdReloadAndDelete: a reload publishes what the key holds,
// unchanged or not; a deleted key is logged and the document keeps
// serving, until a new one is put.
func TestEtcdReloadAndDelete(t *testing.T) {
	e := etcdtest.Start(t)
	c := e.Client()
	rev := put(t, c, fixed("one"))
	in := newInstance(t, e.Endpoint)
	in.src.Reload()
	waitFor(t, "the reload logged", func() bool {
		return strings.Contains(in.logs.String(), "version="+itoa(rev)+" why=reload revision=1 status=unchanged")
	})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Delete(ctx, key)
	require.NoError(t, err)
	waitFor(t, "the deletion logged", func() bool {
		return strings.Contains(in.logs.String(), `msg="config key deleted in etcd; the previous config keeps serving"`)
	})
	assert.Equal(t, "one", in.body(t))
	assert.Len(t, in.pub.History(), 1, "the deletion published nothing")
	put(t, c, fixed("two"))
	in.waitServes(t, "two")
}
