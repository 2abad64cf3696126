package config

import (
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCanonicalFormOverEqualsCanonicalForm: a form written over the
// memory of another, larger or smaller, has the bytes and ranges of one
// written anew, and a clone does not change when the scratch is written
// over again.
func TestCanonicalFormOverEqualsCanonicalForm(t *testing.T) {
	var docs []*Document
	for _, name := range []string{"testdata/valid.json", "testdata/valid.yaml"} {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		doc, err := Decode(data)
		require.NoError(t, err, name)
		docs = append(docs, doc)
	}
	var full Document
	fillValue(reflect.ValueOf(&full).Elem())
	docs = append(docs, &full, new(Document), fleet(50), fleet(3))
	var scratch Form
	var kept []Form
	var want []string
	for round := range 2 {
		for i, doc := range docs {
			fresh, err := CanonicalForm(doc)
			require.NoError(t, err)
			f, err := CanonicalFormOver(scratch, doc)
			require.NoError(t, err)
			assert.Equal(t, string(fresh.bytes), string(f.bytes), "round %d, document %d", round, i)
			assert.True(t, fresh.global == f.global && fresh.policies == f.policies &&
				slices.Equal(fresh.hosts, f.hosts) && slices.Equal(fresh.upstreams, f.upstreams), "round %d, document %d: the ranges", round, i)
			scratch = f
			if round == 0 {
				kept, want = append(kept, f.Clone()), append(want, string(fresh.bytes))
			}
		}
	}
	for i, f := range kept {
		assert.Equal(t, want[i], string(f.Bytes()), "clone %d", i)
	}
}

// TestCanonicalWritesEachFieldAlone sets one field of a document at a
// time, every other one left empty, and checks that the canonical form
// writes it: a shortcut that skips a block it takes for empty (a route
// without match, rewrite or retry settings) must look at every field of
// the block.
func TestCanonicalWritesEachFieldAlone(t *testing.T) {
	n := 0
	eachLeaf(reflect.TypeFor[Document](), nil, func(path []step) {
		n++
		var with, without Document
		build(reflect.ValueOf(&with).Elem(), path, true)
		build(reflect.ValueOf(&without).Elem(), path, false)
		a, err := Canonical(&with)
		require.NoError(t, err)
		b, err := Canonical(&without)
		require.NoError(t, err)
		assert.NotEqual(t, string(b), string(a), "field %s is not written", pathName(path))
	})
	assert.Greater(t, n, 200)
}

// step is one move from a value to a part of it: a field, the element
// of a one-element slice, the value behind a pointer.
type step struct {
	field int // -1 for a slice element or a pointer's value
	name  string
}

// eachLeaf calls fn with the path to every string, number, boolean, map
// and pointer to a boolean under t.
func eachLeaf(t reflect.Type, path []step, fn func([]step)) {
	switch t.Kind() {
	case reflect.Struct:
		for i := range t.NumField() {
			eachLeaf(t.Field(i).Type, append(path[:len(path):len(path)], step{i, t.Field(i).Name}), fn)
		}
	case reflect.Slice:
		eachLeaf(t.Elem(), append(path[:len(path):len(path)], step{-1, "[0]"}), fn)
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Bool {
			fn(path)
			return
		}
		eachLeaf(t.Elem(), append(path[:len(path):len(path)], step{-1, "*"}), fn)
	default:
		fn(path)
	}
}

// build makes the containers along path in v and, with fill, sets the
// leaf at its end as fillValue does.
func build(v reflect.Value, path []step, fill bool) {
	if len(path) == 0 {
		if fill {
			fillValue(v)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		build(v.Field(path[0].field), path[1:], fill)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		build(v.Index(0), path[1:], fill)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		build(v.Elem(), path[1:], fill)
	}
}

func pathName(path []step) string {
	s := ""
	for _, p := range path {
		if p.field >= 0 {
			s += "."
		}
		s += p.name
	}
	return s
}
