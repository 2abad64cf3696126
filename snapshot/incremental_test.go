package snapshot

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIncrementalPublishMatchesFullCompile applies a random sequence of
// changed documents to one publisher, which reuses what did not change,
// and compares every result with a publisher that compiles the document
// from scratch: the outcome, the problems, the canonical form, the
// warnings, each cluster's live destinations and every host's answer;
// with every host served a default certificate from files, the TLS
// table's choice for every name too.
func TestIncrementalPublishMatchesFullCompile(t *testing.T) {
	t.Run("plain", func(t *testing.T) { incrementalMatchesFull(t, false) })
	t.Run("tls", func(t *testing.T) { incrementalMatchesFull(t, true) })
}

func incrementalMatchesFull(t *testing.T, withTLS bool) {
	backends := []*backend{startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")}
	rng := rand.New(rand.NewPCG(1, 2))
	store, pub := newPublisher(t)
	ctx := testContext(t)
	var fresh atomic.Pointer[Store]
	addrInc := serve(t, store)
	addrFull := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fresh.Load().ServeHTTP(w, r) }))
	c := newClient(t)

	doc := fleet(6, backends[0])
	if withTLS {
		doc.Global.TLS.DefaultCertificate = "main"
		doc.Certificates = []config.Certificate{{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"}}
	}
	var names []string // every name a host had, served or not
	serving := []byte(nil)
	for step := range 80 {
		next, change := mutate(rng, doc, backends, step)
		o, err := pub.Apply(ctx, next)
		require.NoError(t, ctx.Err())

		_, full := newPublisher(t)
		of, errFull := full.Apply(ctx, next)
		require.NoError(t, ctx.Err())
		canon, cerr := config.Canonical(next)
		require.NoError(t, cerr)
		switch {
		case errFull != nil:
			require.Equal(t, Refused, o.Status, "step %d (%s): %v", step, change, err)
			assert.Equal(t, problemKeys(of.Errors), problemKeys(o.Errors), "step %d (%s)", step, change)
			full.Close()
			continue
		case slices.Equal(canon, serving):
			require.Equal(t, Unchanged, o.Status, "step %d (%s): %v", step, change, err)
		default:
			require.Equal(t, Applied, o.Status, "step %d (%s): %v", step, change, err)
		}
		doc, serving = next, canon
		inc, ref := store.Load(), full.Store().Load()
		fresh.Store(full.Store())
		assert.Equal(t, string(ref.Canonical()), string(inc.Canonical()), "step %d (%s)", step, change)
		assert.Equal(t, problemTexts(ref.Warnings()), problemTexts(inc.Warnings()), "step %d (%s)", step, change)
		require.Len(t, inc.Clusters(), len(ref.Clusters()), "step %d (%s)", step, change)
		for k, cl := range ref.Clusters() {
			assert.Equal(t, members(cl.Upstream.Members().All), members(inc.Clusters()[k].Upstream.Members().All),
				"step %d (%s): cluster %s", step, change, cl.Upstream.ID())
		}
		for _, h := range doc.Hosts {
			names = append(names, h.Names...)
		}
		require.Equal(t, withTLS, ref.tls != nil && inc.tls != nil, "step %d (%s)", step, change)
		for _, n := range names {
			if withTLS {
				f, g := ref.tls.Select(n, tlsselect.TCP), inc.tls.Select(n, tlsselect.TCP)
				assert.Equal(t, [3]any{f.Host, f.Match, f.Reason}, [3]any{g.Host, g.Match, g.Reason}, "step %d (%s): TLS for %s", step, change, n)
				assert.Equal(t, f.Config.Certificates[0].Leaf.Raw, g.Config.Certificates[0].Leaf.Raw, "step %d (%s): TLS for %s", step, change, n)
			}
			sf, bf := get(t, c, addrFull, n, "/p")
			si, bi := get(t, c, addrInc, n, "/p")
			assert.Equal(t, [2]any{sf, bf}, [2]any{si, bi}, "step %d (%s): host %s", step, change, n)
		}
		full.Close()
	}
}

// mutate returns a copy of doc with one random change, and what it was.
func mutate(rng *rand.Rand, doc *config.Document, backends []*backend, step int) (*config.Document, string) {
	d := clone(doc)
	h, u := rng.IntN(len(d.Hosts)), rng.IntN(len(d.Upstreams))
	switch rng.IntN(11) {
	case 0:
		d.Hosts[h].Routes[0].Upstream = d.Upstreams[rng.IntN(len(d.Upstreams))].ID
		return d, "route upstream"
	case 1:
		d.Hosts[h].Names = []string{fmt.Sprintf("h%d-%d.test", h, step)}
		return d, "host renamed"
	case 2:
		addr := "http://" + backends[rng.IntN(len(backends))].addr
		for k := range d.Upstreams[u].Destinations {
			d.Upstreams[u].Destinations[k].Address = addr
		}
		return d, "destinations moved"
	case 3:
		ds := d.Upstreams[u].Destinations
		if len(ds) > 1 {
			d.Upstreams[u].Destinations = ds[:len(ds)-1]
		} else {
			d.Upstreams[u].Destinations = append(ds, config.Destination{ID: fmt.Sprintf("d%d", step), Address: ds[0].Address})
		}
		return d, "destination added or removed"
	case 4:
		d.Global.Server = []string{"", "Edge"}[rng.IntN(2)]
		return d, "global server"
	case 5:
		id := fmt.Sprintf("n%d", step)
		d.Upstreams = append(d.Upstreams, config.Upstream{ID: id,
			Destinations: []config.Destination{{ID: "d0", Address: "http://" + backends[rng.IntN(len(backends))].addr}}})
		d.Hosts = append(d.Hosts, config.Host{Names: []string{id + ".test"}, Routes: []config.Route{{ID: "r", Path: "/", Upstream: id}}})
		return d, "host and upstream added"
	case 6:
		if len(d.Hosts) > 2 {
			d.Hosts = d.Hosts[:len(d.Hosts)-1]
		}
		if len(d.Upstreams) > 2 && rng.IntN(2) == 0 {
			d.Upstreams = d.Upstreams[1:] // hosts leading to it refuse the document
		}
		return d, "host or upstream removed"
	case 7:
		d.Hosts[h].Routes[0].Upstream = "missing"
		return d, "unknown upstream (refused)"
	case 8:
		return d, "same document"
	case 9:
		o := rng.IntN(len(d.Hosts))
		d.Hosts[h], d.Hosts[o] = d.Hosts[o], d.Hosts[h]
		return d, "hosts swapped"
	default:
		d.Upstreams[u].LoadBalancing = []string{"", "RoundRobin"}[rng.IntN(2)]
		return d, "load balancing"
	}
}

// members lists destinations by ID, address and removal.
func members(ds []*upstream.Destination) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = fmt.Sprintf("%s %s://%s removed=%v", d.ID(), d.Scheme(), d.Host(), d.Removed())
	}
	return out
}

// problemTexts lists problems as their Error says them: path, message
// and code.
func problemTexts(ps []*ValidationError) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Error()
	}
	return out
}

// problemKeys lists problems by code and path.
func problemKeys(ps []*ValidationError) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Code + " at " + p.Path
	}
	return out
}
