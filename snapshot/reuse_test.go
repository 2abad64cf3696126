package snapshot

import (
	"io"
	"net/http"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIncrementalCompileReusesOnlyUnchanged: a publish reuses what an
// unchanged host or upstream compiled to, and recompiles everything a
// change reaches: the element itself, hosts whose routes lead to a changed
// upstream, every host when a policy block changes, everything when the
// global block changes.
func TestIncrementalCompileReusesOnlyUnchanged(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	store, pub := newPublisher(t)
	ctx := testContext(t)
	doc := fleet(4, a)
	doc.AccessLists = []config.AccessList{{ID: "office", Allow: []string{"127.0.0.0/8"}}}
	doc.Hosts[3].AccessList = "office"
	_, err := pub.Apply(ctx, doc)
	require.NoError(t, err)
	s1 := store.Load()
	host := func(s *Snapshot, i int) any { return s.gate.Host(s.hostIndex[i]) }

	// Upstream u1 changes: its cluster and host 1 are rebuilt, the rest
	// is reused.
	next := clone(doc)
	next.Upstreams[1].Destinations[0].Address = "http://" + b.addr
	next.Upstreams[1].Destinations = next.Upstreams[1].Destinations[:1]
	_, err = pub.Apply(ctx, next)
	require.NoError(t, err)
	s2 := store.Load()
	assert.Same(t, s1.Cluster("u0"), s2.Cluster("u0"))
	assert.NotSame(t, s1.Cluster("u1"), s2.Cluster("u1"))
	assert.Same(t, host(s1, 0), host(s2, 0))
	assert.NotSame(t, host(s1, 1), host(s2, 1))
	addr := serve(t, store)
	c := newClient(t)
	_, body := get(t, c, addr, "h1.test", "/x")
	assert.Equal(t, "b /x", body, "the changed upstream is served")
	_, body = get(t, c, addr, "h0.test", "/x")
	assert.Equal(t, "a /x", body)

	// A host's route changes: only that host is rebuilt.
	next2 := clone(next)
	next2.Hosts[2].Routes[0].Upstream = "u1"
	_, err = pub.Apply(ctx, next2)
	require.NoError(t, err)
	s3 := store.Load()
	assert.Same(t, host(s2, 0), host(s3, 0))
	assert.NotSame(t, host(s2, 2), host(s3, 2))
	_, body = get(t, c, addr, "h2.test", "/y")
	assert.Equal(t, "b /y", body)

	// An access list's content changes: hosts name it by ID, so none is
	// reused, and the new list is enforced.
	next3 := clone(next2)
	next3.AccessLists = []config.AccessList{{ID: "office", Allow: []string{"192.0.2.0/24"}}}
	_, err = pub.Apply(ctx, next3)
	require.NoError(t, err)
	s4 := store.Load()
	for i := range 4 {
		assert.NotSame(t, host(s3, i), host(s4, i), "host %d", i)
	}
	status, _ := get(t, c, addr, "h3.test", "/")
	assert.Equal(t, 403, status, "the changed list applies")

	// The global block reaches everything.
	next4 := clone(next3)
	next4.Global.Server = "Edge"
	_, err = pub.Apply(ctx, next4)
	require.NoError(t, err)
	s5 := store.Load()
	assert.NotSame(t, s4.Cluster("u0"), s5.Cluster("u0"))
	assert.NotSame(t, host(s4, 0), host(s5, 0))
	// A changed upstream is still checked field by field.
	bad := clone(next4)
	bad.Upstreams[0].Destinations[0].Address = "ftp://nowhere"
	o, err := pub.Apply(ctx, bad)
	require.Error(t, err)
	assert.Equal(t, []string{config.CodeUpstreamDestinationAddressInvalid + " upstreams[0].destinations[0].address"}, codePaths(o.Errors))

	res, err := c.Get("http://" + addr + "/")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, "Edge", res.Header.Get("Server"))
}

// TestIncrementalCompileFollowsBackendsAndMirrors: a host whose route
// splits over backends, or mirrors, is rebuilt when a backend's or the
// mirror's upstream changes, so no side keeps the old cluster.
func TestIncrementalCompileFollowsBackendsAndMirrors(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	store, pub := newPublisher(t)
	ctx := testContext(t)
	zero := 0
	doc := &config.Document{
		Hosts: []config.Host{
			{Names: []string{"split.test"}, Routes: []config.Route{{Backends: []config.Backend{{Upstream: "one"}, {Upstream: "two", Weight: &zero}},
				Split: config.Split{Force: []config.Force{{Header: "X-Side", Value: "two", Upstream: "two"}}}}}},
			{Names: []string{"mirror.test"}, Routes: []config.Route{{Upstream: "one", Mirror: &config.Mirror{Upstream: "three"}}}},
		},
		Upstreams: []config.Upstream{
			{ID: "one", Destinations: []config.Destination{{ID: "d", Address: "http://" + a.addr}}},
			{ID: "two", Destinations: []config.Destination{{ID: "d", Address: "http://" + a.addr}}},
			{ID: "three", Destinations: []config.Destination{{ID: "d", Address: "http://" + a.addr}}},
		},
	}
	_, err := pub.Apply(ctx, doc)
	require.NoError(t, err)
	s1 := store.Load()
	host := func(s *Snapshot, i int) any { return s.gate.Host(s.hostIndex[i]) }

	next := clone(doc)
	next.Upstreams[1].Destinations[0].Address = "http://" + b.addr
	_, err = pub.Apply(ctx, next)
	require.NoError(t, err)
	s2 := store.Load()
	assert.NotSame(t, host(s1, 0), host(s2, 0), "the split's second backend changed")
	assert.Same(t, host(s1, 1), host(s2, 1))
	addr := serve(t, store)
	c := newClient(t)
	req, err := http.NewRequest("GET", "http://"+addr+"/x", nil)
	require.NoError(t, err)
	req.Host, req.Header = "split.test", http.Header{"X-Side": {"two"}}
	res, err := c.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, "b /x", string(body), "the changed backend is served")

	next2 := clone(next)
	next2.Upstreams[2].Destinations[0].Address = "http://" + b.addr
	_, err = pub.Apply(ctx, next2)
	require.NoError(t, err)
	s3 := store.Load()
	assert.NotSame(t, host(s2, 1), host(s3, 1), "the mirror's upstream changed")
	assert.Same(t, host(s2, 0), host(s3, 0))
}
