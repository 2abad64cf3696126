package config

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// documentLeaves returns the JSON path of every leaf field of the document
// type ("hosts[].routes[].retry.budget") and its index path, for the tests
// that must cover every field.
func documentLeaves() (names []string, paths [][]int) {
	var walk func(typ reflect.Type, path []int, name string)
	walk = func(typ reflect.Type, path []int, name string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			p := append(append([]int(nil), path...), i)
			n := name + "." + strings.Split(f.Tag.Get("json"), ",")[0]
			ft := f.Type
			switch {
			case ft.Kind() == reflect.Struct:
				walk(ft, p, n)
			case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), p, n)
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), p, n+"[]")
			default:
				paths = append(paths, p)
				names = append(names, n[1:])
			}
		}
	}
	walk(reflect.TypeFor[Document](), nil, "")
	return names, paths
}

// TestCanonicalCoversEveryField guards the hand-written canonical writer:
// for every leaf field of the document, a document that differs from
// another only in that field must have other canonical bytes. Otherwise a
// publish that changes the field would be taken as unchanged and dropped.
func TestCanonicalCoversEveryField(t *testing.T) {
	names, paths := documentLeaves()

	for k, p := range paths {
		t.Run(names[k], func(t *testing.T) {
			base, changed := &Document{}, &Document{}
			setLeaf(t, reflect.ValueOf(base).Elem(), p, false)
			setLeaf(t, reflect.ValueOf(changed).Elem(), p, true)
			a, err := Canonical(base)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Canonical(changed)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(a, b) {
				t.Errorf("canonical form ignores %s:\n%s", names[k], a)
			}
		})
	}
}

// setLeaf walks path from v, creating the containers on the way (one
// element per slice, a value per pointer), and sets the leaf to an unusual
// value when set is true.
func setLeaf(t *testing.T, v reflect.Value, path []int, set bool) {
	for _, i := range path {
		switch v.Kind() {
		case reflect.Pointer:
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		case reflect.Slice:
			if v.Len() == 0 {
				v.Set(reflect.MakeSlice(v.Type(), 1, 1))
			}
			v = v.Index(0)
		}
		v = v.Field(i)
	}
	if !set {
		return
	}
	switch v.Kind() {
	case reflect.String:
		if v.Type() == reflect.TypeFor[Duration]() {
			v.SetString("7m7s")
		} else {
			v.SetString("x-unusual-value")
		}
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7777)
	case reflect.Float64, reflect.Float32:
		v.SetFloat(0.4242)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		switch s.Index(0).Kind() {
		case reflect.String:
			s.Index(0).SetString("x-unusual-value")
		default:
			t.Fatalf("no unusual value for %v", v.Type())
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("x-key"), reflect.ValueOf("x-unusual-value"))
		v.Set(m)
	case reflect.Pointer:
		// An optional scalar whose default is not its zero value (such as
		// httpOnly, default true): set it to the zero value explicitly.
		v.Set(reflect.New(v.Type().Elem()))
	default:
		t.Fatalf("no unusual value for %v", v.Type())
	}
}
