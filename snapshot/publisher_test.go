package snapshot

import (
	"sync"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newPublisher(t testing.TB) (*Store, *Publisher) {
	store := new(Store)
	pub := NewPublisher(PublisherConfig{Store: store})
	t.Cleanup(func() { pub.Close() })
	return store, pub
}

func TestPublishAppliesAndServes(t *testing.T) {
	a := startBackend(t, "a")
	store, pub := newPublisher(t)
	o, err := pub.Apply(testContext(t), fleet(3, a))
	require.NoError(t, err)
	assert.Equal(t, Applied, o.Status)
	assert.Equal(t, o.Revision, store.Load().Revision())

	addr := serve(t, store)
	c := newClient(t)
	status, body := get(t, c, addr, "h1.test", "/x")
	assert.Equal(t, 200, status)
	assert.Equal(t, "a /x", body)

	status, _ = get(t, c, addr, "nope.test", "/")
	assert.Equal(t, 404, status, "an unknown host gets the default answer")
}

func TestRefusedDocumentKeepsOldSnapshotServing(t *testing.T) {
	a := startBackend(t, "a")
	store, pub := newPublisher(t)
	_, err := pub.Apply(testContext(t), fleet(2, a))
	require.NoError(t, err)
	before := store.Load()

	bad := clone(fleet(2, a))
	bad.Hosts[1].Routes[0].Upstream = "missing"
	bad.Hosts[0].Names = []string{"h1.test"} // also a duplicate
	o, err := pub.Apply(testContext(t), bad)
	require.Error(t, err)
	assert.Equal(t, Refused, o.Status)
	assert.Equal(t, []string{
		config.CodeRouteUpstreamUnknown + " hosts[1].routes[0].upstream",
		gate.CodeHostNameDuplicate + " hosts[1].names[0]",
	}, codePaths(o.Errors), "every problem is reported")
	assert.Equal(t, o.Errors, Problems(err), "the error holds the same problems")
	assert.Same(t, before, store.Load())

	status, body := get(t, newClient(t), serve(t, store), "h1.test", "/still")
	assert.Equal(t, 200, status)
	assert.Equal(t, "a /still", body)
}

func TestPublishUnchangedIsCheap(t *testing.T) {
	a := startBackend(t, "a")
	store, pub := newPublisher(t)
	_, err := pub.Apply(testContext(t), fleet(2, a))
	require.NoError(t, err)
	before := store.Load()
	o, err := pub.Apply(testContext(t), clone(fleet(2, a)))
	require.NoError(t, err)
	assert.Equal(t, Unchanged, o.Status)
	assert.Same(t, before, store.Load())
}

func TestPublishCoalescesToLatest(t *testing.T) {
	a := startBackend(t, "a")
	store, pub := newPublisher(t)
	var mu sync.Mutex
	var seen []Outcome
	pub.cfg.OnOutcome = func(o Outcome) { mu.Lock(); seen = append(seen, o); mu.Unlock() }

	// Hold the writer inside the first publish so the next ones queue.
	entered, release := make(chan struct{}), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	defer releaseOnce() // also when the test fails before it lets go
	first := true
	pub.cfg.OnApplied = func(*Snapshot) {
		if first {
			first = false
			close(entered)
			<-release
		}
	}
	r1 := pub.Publish(fleet(1, a))
	receive(t, entered, 10*time.Second)
	var revs []*Revision
	for n := 2; n <= 6; n++ {
		revs = append(revs, pub.Publish(fleet(n, a)))
	}
	releaseOnce()
	ctx := testContext(t)
	o1, err := r1.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, Applied, o1.Status)
	for i, r := range revs[:len(revs)-1] {
		o, err := r.Wait(ctx)
		require.NoError(t, err)
		assert.Equal(t, Superseded, o.Status)
		assert.Equal(t, revs[i+1].ID(), o.SupersededBy, "superseded by the revision that replaced it")
	}
	last, err := revs[len(revs)-1].Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, Applied, last.Status)
	assert.Len(t, store.Load().Document().Hosts, 6)
	pub.Flush()
	mu.Lock()
	assert.Len(t, seen, 6, "every revision gets an outcome")
	mu.Unlock()
}

func TestPublishDataRefusesUndecodable(t *testing.T) {
	_, pub := newPublisher(t)
	o, err := pub.PublishData([]byte("{not json")).Wait(testContext(t))
	require.NoError(t, err)
	assert.Equal(t, Refused, o.Status)
	assert.Equal(t, []string{config.CodeDocumentSyntax + " "}, codePaths(o.Errors))
}

func TestStoreWithoutSnapshotAnswers503(t *testing.T) {
	status, _ := get(t, newClient(t), serve(t, new(Store)), "h.test", "/")
	assert.Equal(t, 503, status)
}

// TestUnchangedTakesNoRevision: a publish of the serving document names
// the serving revision and gives its number back to the next publish,
// unless an outcome named that number (a revision it superseded), which
// then stays its own.
func TestUnchangedTakesNoRevision(t *testing.T) {
	a := startBackend(t, "a")
	store := new(Store)
	hold, release := make(chan struct{}), make(chan struct{})
	pub := NewPublisher(PublisherConfig{Store: store, OnApplied: func(s *Snapshot) {
		if s.Revision() == 1 {
			close(hold)
			<-release // bounded by the test's receive below
		}
	}})
	t.Cleanup(func() { pub.Close() })
	ctx := testContext(t)
	doc := fleet(1, a)

	r1 := pub.Publish(doc)
	receive(t, hold, 10*time.Second) // the single writer waits in OnApplied
	r2 := pub.Publish(fleet(2, a))
	r3 := pub.Publish(clone(doc)) // supersedes r2, which names it
	close(release)
	o1, err := r1.Wait(ctx)
	require.NoError(t, err)
	o2, err := r2.Wait(ctx)
	require.NoError(t, err)
	o3, err := r3.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, Applied, o1.Status)
	assert.Equal(t, Outcome{Revision: 2, Status: Superseded, SupersededBy: 3}, o2)
	assert.Equal(t, Unchanged, o3.Status)
	assert.Equal(t, uint64(1), o3.Revision, "the unchanged publish is the serving revision")
	r4 := pub.Publish(clone(doc))
	assert.Equal(t, uint64(4), r4.ID(), "3 is named by revision 2's outcome: it is not given again")

	o4, err := r4.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, Outcome{Revision: 1, Status: Unchanged, Took: o4.Took}, o4)
	r5 := pub.Publish(fleet(3, a))
	assert.Equal(t, uint64(4), r5.ID(), "an unchanged publish no outcome names gives its number back")
	o5, err := r5.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, Applied, o5.Status)
	assert.Equal(t, uint64(4), store.Load().Revision())
	assert.Equal(t, []uint64{4, 2, 1}, revisions(pub.History()))
}

func revisions(h []Entry) []uint64 {
	out := make([]uint64, len(h))
	for i, e := range h {
		out[i] = e.Revision
	}
	return out
}
