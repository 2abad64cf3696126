package config

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// populated returns a T with every field set: one element in each list,
// one key in each map, every pointer set.
func populated[T any]() *T {
	var v T
	walkLeaves(reflect.ValueOf(&v).Elem(), func(v reflect.Value) { fillLeaf(v, 1) })
	return &v
}

// walkLeaves calls f with every leaf under v (a string, number, bool or
// map), making the list elements and pointees it walks into.
func walkLeaves(v reflect.Value, f func(reflect.Value)) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			walkLeaves(v.Field(i), f)
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		}
		for i := range v.Len() {
			walkLeaves(v.Index(i), f)
		}
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		walkLeaves(v.Elem(), f)
	default:
		f(v)
	}
}

// fillLeaf sets a leaf to a value of n.
func fillLeaf(v reflect.Value, n int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprint("s", n))
	case reflect.Bool:
		v.SetBool(n%2 == 1)
	case reflect.Int:
		v.SetInt(int64(n))
	case reflect.Float64:
		v.SetFloat(float64(n) / 4)
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf(fmt.Sprint("v", n)))
	default:
		panic("a leaf of kind " + v.Kind().String())
	}
}

// TestSameComparesEveryField changes each field of a host and of an
// upstream in turn: neither is the same any more, so a field added to
// Host or Upstream and left out of the comparison fails here.
func TestSameComparesEveryField(t *testing.T) {
	t.Run("upstream", func(t *testing.T) { testComparesEveryField(t, sameUpstream) })
	t.Run("host", func(t *testing.T) { testComparesEveryField(t, sameHost) })
	assert.False(t, sameUpstream(populated[Upstream](), &Upstream{ID: "s1"}))
	assert.False(t, sameHost(populated[Host](), &Host{Kind: "s1"}))
}

func testComparesEveryField[T any](t *testing.T, same func(a, b *T) bool) {
	base := populated[T]()
	require.True(t, same(base, populated[T]()))
	leaves := 0
	walkLeaves(reflect.ValueOf(base).Elem(), func(reflect.Value) { leaves++ })
	require.Greater(t, leaves, 10)
	for k := range leaves {
		v := populated[T]()
		i := 0
		walkLeaves(reflect.ValueOf(v).Elem(), func(v reflect.Value) {
			if i == k {
				fillLeaf(v, 2)
			}
			i++
		})
		assert.False(t, same(base, v), "leaf %d changed", k)
	}
}

// TestCopySharesNothing: changing every field of a copy leaves the
// original as it was.
func TestCopySharesNothing(t *testing.T) {
	t.Run("upstream", func(t *testing.T) { testCopySharesNothing(t, copyUpstream, sameUpstream) })
	t.Run("host", func(t *testing.T) { testCopySharesNothing(t, copyHost, sameHost) })
}

func testCopySharesNothing[T any](t *testing.T, copyOf func(*T) *T, same func(a, b *T) bool) {
	v := populated[T]()
	c := copyOf(v)
	require.True(t, same(v, c))
	walkLeaves(reflect.ValueOf(c).Elem(), func(v reflect.Value) { fillLeaf(v, 2) })
	assert.Equal(t, populated[T](), v)
}

// TestCanonicalFormSinceMatchesCanonicalForm: a form made since another
// document's has the bytes of one made from scratch, whatever changed,
// a document changed in place after its form was made included.
func TestCanonicalFormSinceMatchesCanonicalForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	doc := &Document{}
	for i := range 6 {
		doc.Upstreams = append(doc.Upstreams, Upstream{ID: fmt.Sprint("u", i),
			Destinations: []Destination{{ID: "d", Address: "http://127.0.0.1:80"}}})
	}
	for i := range 6 {
		doc.Hosts = append(doc.Hosts, Host{Names: []string{fmt.Sprint("h", i, ".test")}, Routes: []Route{{Upstream: "u0"}}})
	}
	var base, scratch Form
	for step := range 300 {
		u := &doc.Upstreams[rng.IntN(len(doc.Upstreams))]
		h := &doc.Hosts[rng.IntN(len(doc.Hosts))]
		switch rng.IntN(10) {
		case 6: // in place
			h.Names[0] = fmt.Sprint("H", rng.IntN(3), ".test")
		case 7:
			h.Routes = []Route{{Upstream: fmt.Sprint("u", rng.IntN(2)), Mirror: &Mirror{Upstream: "u1"}}}
		case 8:
			if r := &h.Routes[0]; r.Mirror != nil { // in place
				p := float64(rng.IntN(3)) * 50
				r.Mirror.Percent = &p
			}
		case 9:
			doc.Hosts = append(doc.Hosts[1:], doc.Hosts[0])
		case 0: // in place: the form's copy still holds the old value
			u.Destinations[0].Address = fmt.Sprint("http://127.0.0.1:", 80+rng.IntN(3))
		case 1:
			u.Metadata = map[string]string{"zone": fmt.Sprint("z", rng.IntN(2))}
		case 2:
			u.Health.Passive.FailureRate = float64(rng.IntN(3)) / 10
		case 3:
			doc.Upstreams = append(doc.Upstreams[1:], doc.Upstreams[0])
		case 4:
			off := rng.IntN(2) == 0
			u.Affinity.Cookie.HTTPOnly = &off
		case 5:
			u.HTTP.TLS.Pins = append(u.HTTP.TLS.Pins[:0:0], fmt.Sprint("pin", rng.IntN(2)))
		}
		want, err := CanonicalForm(doc)
		require.NoError(t, err)
		got, err := CanonicalFormSince(scratch, base, doc)
		require.NoError(t, err)
		require.Equal(t, string(want.Bytes()), string(got.Bytes()), "step %d", step)
		for i := range doc.Upstreams {
			require.Equal(t, string(want.Upstream(i)), string(got.Upstream(i)), "step %d", step)
		}
		for i := range doc.Hosts {
			require.Equal(t, string(want.Host(i)), string(got.Host(i)), "step %d", step)
		}
		require.True(t, json.Valid(got.Bytes()))
		base, scratch = got.Clone(), got
	}
}

// TestCheckerSinceFindsWhatCheckFinds: a Checker that takes an earlier
// one's upstream ID index finds the problems of a new Checker, when the
// IDs are the same and when they changed, in place included.
func TestCheckerSinceFindsWhatCheckFinds(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ids := []string{"a", "b", "c", "", "bad id"}
	doc := &Document{}
	for i := range 4 {
		doc.Upstreams = append(doc.Upstreams, Upstream{ID: ids[i%3], Destinations: []Destination{{ID: "d", Address: "http://127.0.0.1:80"}}})
		doc.Hosts = append(doc.Hosts, Host{Names: []string{fmt.Sprint("h", i, ".test")}, Routes: []Route{{Upstream: ids[i%3]}}})
	}
	var prev *Checker
	for step := range 200 {
		switch rng.IntN(3) {
		case 0: // in place: prev's index is of the IDs as they were
			doc.Upstreams[rng.IntN(len(doc.Upstreams))].ID = ids[rng.IntN(len(ids))]
		case 1:
			doc.Hosts[rng.IntN(len(doc.Hosts))].Routes[0].Upstream = ids[rng.IntN(len(ids))]
		}
		var probs []*ValidationError
		c := NewCheckerSince(prev, doc, &probs)
		c.all()
		require.Equal(t, Check(doc), probs, "step %d", step)
		prev = c
	}
}

// TestSameHostAgreesWithBytes: forms that keep one copy of a host have
// its bytes, and forms that do not are compared by them.
func TestSameHostAgreesWithBytes(t *testing.T) {
	doc := &Document{Hosts: []Host{{Names: []string{"a.test"}}, {Names: []string{"b.test"}}}}
	first, err := CanonicalFormSince(Form{}, Form{}, doc)
	require.NoError(t, err)
	first = first.Clone()
	doc.Hosts[1].Names = []string{"c.test"}
	next, err := CanonicalFormSince(Form{}, first, doc)
	require.NoError(t, err)
	plain, err := CanonicalForm(doc)
	require.NoError(t, err)
	for i := range 2 {
		want := string(first.Host(i)) == string(next.Host(i))
		assert.Equal(t, want, first.SameHost(next, i), "host %d", i)
		assert.Equal(t, want, plain.SameHost(first, i), "host %d, a form without copies", i)
	}
	assert.True(t, next.SameHost(plain, 1))
}
