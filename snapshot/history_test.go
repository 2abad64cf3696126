package snapshot

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func docBytes(t testing.TB, d *config.Document) []byte {
	t.Helper()
	b, err := json.Marshal(d)
	require.NoError(t, err)
	return b
}

func TestHistoryKeepsTheLatestOutcomes(t *testing.T) {
	a := startBackend(t, "a")
	store := new(Store)
	pub := NewPublisher(PublisherConfig{Store: store, History: 2})
	t.Cleanup(func() { pub.Close() })
	ctx := testContext(t)

	_, ok := pub.Current()
	assert.False(t, ok, "nothing applied yet")
	docs := [][]byte{docBytes(t, fleet(1, a)), docBytes(t, fleet(2, a)), docBytes(t, fleet(2, a)), []byte("hosts: [{names: [x.test], routes: [{upstream: missing}]}]\n")}
	var outs []Outcome
	for _, d := range docs {
		o, err := pub.PublishData(d).Wait(ctx)
		require.NoError(t, err)
		outs = append(outs, o)
	}
	require.Equal(t, []Status{Applied, Applied, Unchanged, Refused}, []Status{outs[0].Status, outs[1].Status, outs[2].Status, outs[3].Status})
	assert.Equal(t, []uint64{1, 2, 2, 3}, []uint64{outs[0].Revision, outs[1].Revision, outs[2].Revision, outs[3].Revision},
		"the unchanged publish is the serving revision and takes no number of its own")

	h := pub.History()
	require.Len(t, h, 2, "the oldest fell out; the unchanged publish is not kept")
	assert.Equal(t, []uint64{3, 2}, []uint64{h[0].Revision, h[1].Revision}, "newest first")
	assert.Equal(t, Refused, h[0].Status)
	assert.Equal(t, outs[3].Errors, h[0].Errors)
	assert.Equal(t, docs[3], h[0].Source)
	assert.Nil(t, h[0].Snapshot)
	assert.Equal(t, Applied, h[1].Status)
	assert.Equal(t, docs[1], h[1].Source)
	require.NotNil(t, h[1].Snapshot)
	assert.Same(t, store.Load(), h[1].Snapshot)
	assert.Equal(t, uint64(2), h[1].Snapshot.Revision())
	assert.False(t, h[1].Time.After(h[0].Time), "times follow the outcomes")

	e, ok := pub.Entry(2)
	require.True(t, ok)
	assert.Equal(t, h[1], e)
	_, ok = pub.Entry(1)
	assert.False(t, ok, "fallen out of the history")
	_, ok = pub.Entry(0)
	assert.False(t, ok)

	cur, ok := pub.Current()
	require.True(t, ok)
	assert.Equal(t, uint64(2), cur.Revision, "the refusal left the applied revision current")
	assert.Equal(t, docs[1], cur.Source)

	st := pub.Stats()
	assert.Equal(t, PublishStats{Applied: 2, Unchanged: 1, Refused: 1, LastApplied: 2,
		LastApplyTook: cur.Took, ApplyTook: st.ApplyTook, LastAppliedAt: cur.Time}, st)
	assert.Equal(t, outs[0].Took+outs[1].Took, st.ApplyTook)

	// A document published as a Document has no source; the current
	// entry keeps following the applied revision past the history's end.
	o, err := pub.Apply(ctx, fleet(3, a))
	require.NoError(t, err)
	cur, _ = pub.Current()
	assert.Equal(t, o.Revision, cur.Revision)
	assert.Nil(t, cur.Source)
	e, ok = pub.Entry(o.Revision)
	assert.True(t, ok)
	assert.Equal(t, cur, e)
}

func TestHistoryIsCopiedOnRead(t *testing.T) {
	_, pub := newPublisher(t)
	_, err := pub.PublishData([]byte("{bad")).Wait(testContext(t))
	require.NoError(t, err)
	h := pub.History()
	require.Len(t, h, 1)
	h[0].Source[0] = 'X'
	h[0].Errors[0].Code = "changed"
	h[0].Errors = nil
	again := pub.History()
	assert.Equal(t, []byte("{bad"), again[0].Source)
	assert.Equal(t, config.CodeDocumentSyntax, again[0].Errors[0].Code)
}

func TestHistoryOff(t *testing.T) {
	a := startBackend(t, "a")
	pub := NewPublisher(PublisherConfig{Store: new(Store), History: -1})
	t.Cleanup(func() { pub.Close() })
	_, err := pub.Apply(testContext(t), fleet(1, a))
	require.NoError(t, err)
	assert.Empty(t, pub.History())
	cur, ok := pub.Current()
	assert.True(t, ok, "the current entry is kept without a history")
	e, ok := pub.Entry(cur.Revision)
	assert.True(t, ok)
	assert.Equal(t, cur, e)
}

func TestPublishDataIfIsACompareAndSwap(t *testing.T) {
	a := startBackend(t, "a")
	store, pub := newPublisher(t)
	ctx := testContext(t)

	o, err := pub.ApplyDataIf(ctx, docBytes(t, fleet(1, a)), 1)
	assert.ErrorIs(t, err, ErrStale, "nothing serves yet: only 0 matches")
	assert.Equal(t, Stale, o.Status)
	assert.Nil(t, store.Load())
	o, err = pub.ApplyDataIf(ctx, docBytes(t, fleet(1, a)), 0)
	require.NoError(t, err)
	require.Equal(t, Applied, o.Status)
	first := o.Revision

	o, err = pub.ApplyDataIf(ctx, docBytes(t, fleet(2, a)), first)
	require.NoError(t, err)
	assert.Equal(t, Applied, o.Status)
	_, err = pub.ApplyDataIf(ctx, docBytes(t, fleet(3, a)), first)
	assert.ErrorIs(t, err, ErrStale)
	assert.Len(t, store.Load().Document().Hosts, 2, "the stale document was not applied")
	assert.Equal(t, uint64(2), pub.Stats().Stale)

	_, err = pub.ApplyDataIf(ctx, []byte("{bad"), store.Load().Revision())
	assert.Equal(t, []*ValidationError{{Code: config.CodeDocumentSyntax, Msg: Problems(err)[0].Msg}}, Problems(err), "a current condition then refuses a bad document")
}

// Conditional publishes racing on one revision: exactly one applies, the
// others are stale or superseded, whatever the interleaving.
func TestPublishDataIfRace(t *testing.T) {
	a := startBackend(t, "a")
	store, pub := newPublisher(t)
	ctx := testContext(t)
	o, err := pub.Apply(ctx, fleet(1, a))
	require.NoError(t, err)
	base := o.Revision

	const n = 8
	outs := make([]Outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			outs[i], _ = pub.PublishDataIf(docBytes(t, fleet(2+i, a)), base).Wait(ctx)
			pub.History() // readers beside the writer, for the race detector
			pub.Current()
			pub.Stats()
		})
	}
	wg.Wait()
	applied := 0
	for _, o := range outs {
		switch o.Status {
		case Applied:
			applied++
			assert.Equal(t, o.Revision, store.Load().Revision())
		case Stale, Superseded:
		default:
			t.Errorf("revision %d: %v", o.Revision, o.Status)
		}
	}
	assert.Equal(t, 1, applied)
}
