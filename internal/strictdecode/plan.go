package strictdecode

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// The fast decoders (json.go, yaml.go) read a document straight into its
// Go value, directed by a plan of its type.
// They take only what they are sure of: a document without a single
// problem, written in the plain forms that configs use. At the first thing
// they are not sure of (an unknown, duplicate or mistyped field, a syntax
// error, a YAML form they do not read) they give up, and Decode reads the
// document again on the general path, which finds and describes every
// problem. So a fast decode never has an error to report, and a document
// decodes to the same value on both paths (FuzzDecodeFastEqualsGeneral).

// typePlan says how to fill a value of one type.
type typePlan struct {
	typ  reflect.Type
	kind reflect.Kind
	// size is the bytes of a value, at least 1: what an element of a list
	// takes of the lists' budget.
	size int
	// elem is the plan of the pointed-to type, the slice element or the
	// map value.
	elem *typePlan
	// fields are a struct's fields by JSON name.
	fields []fieldPlan
	// unsupported is a struct of more fields than the fast decoders keep
	// track of: a value of it gives up.
	unsupported bool
}

type fieldPlan struct {
	name  string
	index int
	plan  *typePlan
}

var (
	unmarshalerJSON = reflect.TypeFor[json.Unmarshaler]()
	unmarshalerText = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// makePlan makes the plan of t, which New has checked; a plan is never
// modified once made.
func makePlan(t reflect.Type, memo map[reflect.Type]*typePlan) *typePlan {
	if p := memo[t]; p != nil {
		return p
	}
	p := &typePlan{typ: t, kind: t.Kind(), size: max(int(t.Size()), 1)}
	memo[t] = p
	switch p.kind {
	case reflect.String, reflect.Bool, reflect.Float32, reflect.Float64,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
	case reflect.Pointer, reflect.Slice:
		p.elem = makePlan(t.Elem(), memo)
	case reflect.Map:
		p.elem = makePlan(t.Elem(), memo)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			p.fields = append(p.fields, fieldPlan{name: jsonName(f), index: i, plan: makePlan(f.Type, memo)})
		}
		// The seen set of a struct's fields is a bit mask.
		p.unsupported = len(p.fields) > 64
	}
	return p
}

// field returns the plan of the field whose JSON name is exactly key and
// true; when there is none, the first whose name matches regardless of
// case (nil if none), and false.
func (p *typePlan) field(key string) (*fieldPlan, bool) {
	var fold *fieldPlan
	for i := range p.fields {
		f := &p.fields[i]
		if f.name == key {
			return f, true
		}
		if fold == nil && strings.EqualFold(f.name, key) {
			fold = f
		}
	}
	return fold, false
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// member is where the value of an object member goes: a field of a
// struct, or a new element of a map, which set adds once it is filled.
type member struct {
	plan  *typePlan
	value reflect.Value
	m     reflect.Value // the map, or not valid
	key   reflect.Value
}

// member finds the member key of struct or map v, of plan p; seen holds
// the struct's fields given so far. It reports false for an unknown key
// (or one that matches only regardless of case) and for a key given twice.
func (p *typePlan) member(v reflect.Value, key []byte, seen *uint64) (member, bool) {
	if p.kind == reflect.Map {
		k := reflect.ValueOf(string(key))
		if v.MapIndex(k).IsValid() {
			return member{}, false
		}
		return member{plan: p.elem, value: reflect.New(p.elem.typ).Elem(), m: v, key: k}, true
	}
	for i := range p.fields {
		if f := &p.fields[i]; f.name == string(key) {
			if *seen&(1<<i) != 0 {
				return member{}, false
			}
			*seen |= 1 << i
			return member{plan: f.plan, value: v.Field(f.index)}, true
		}
	}
	return member{}, false
}

// set adds a map element once it is filled. A null map value is left to
// the general path: null reports false.
func (m member) set(null bool) bool {
	if !m.m.IsValid() {
		return true
	}
	if null {
		return false
	}
	m.m.SetMapIndex(m.key, m.value)
	return true
}

// deref allocates the pointers on the way to a value of p that is not
// null, and returns the plan and value at the end.
func deref(p *typePlan, v reflect.Value) (*typePlan, reflect.Value) {
	for p.kind == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(p.typ.Elem()))
		}
		p, v = p.elem, v.Elem()
	}
	return p, v
}

// growElem appends a zero element to slice v, of plan p, and returns it, or reports
// false when the element would take the lists past their budget (see
// valueBudget). The elements of a document's lists are large structs,
// each growth a copy of them all and the old array garbage; most lists
// have one element. So a list starts with room for one, then grows to the
// length count says is left (a hint: counting skims the text without
// reading it, and the budget bounds it), or doubles if that is more: a
// list of a document is allocated at its length, and a list of one is
// never counted.
func growElem(p *typePlan, v reflect.Value, count func() int, budget *int) (reflect.Value, bool) {
	size := p.elem.size
	if *budget -= size; *budget < 0 {
		return reflect.Value{}, false
	}
	n := v.Len()
	if n == v.Cap() {
		extra := 1
		if n > 0 {
			extra = min(max(count(), n), *budget/size+1)
		}
		v.Grow(extra)
	}
	v.SetLen(n + 1)
	return v.Index(n), true
}

// The lists of a document decode to at most budgetPerByte times its size
// in elements, plus budgetBase: a list element is a struct of up to some
// hundred bytes written in as few as three ("{},"), so without a bound a
// 16 MiB document of empty objects (or of zeros, in a list of objects)
// would ask for gigabytes before a single check ran. Documents written
// to be served take a fraction of it (a host of one route is some
// hundred bytes of text for about as many of structs).
const (
	budgetPerByte = 64
	budgetBase    = 1 << 20
)

// valueBudget is the bytes that the lists of a document of n bytes may
// take decoded.
func valueBudget(n int) int { return budgetPerByte*n + budgetBase }

// setInt sets an integer of plan p from decimal digits with an optional
// minus sign, as strconv.ParseInt(s, 10, bits) reads them; it reports
// false for anything else, or a value out of range.
func setInt(p *typePlan, v reflect.Value, s []byte) bool {
	if p.kind < reflect.Int || p.kind > reflect.Int64 {
		return false
	}
	neg := len(s) > 0 && s[0] == '-'
	digits := s
	if neg {
		digits = s[1:]
	}
	var n int64
	if len(digits) == 0 || len(digits) > 18 {
		var err error
		if n, err = strconv.ParseInt(string(s), 10, 64); err != nil {
			return false
		}
	} else {
		for _, c := range digits {
			if c < '0' || c > '9' {
				return false
			}
			n = n*10 + int64(c-'0')
		}
		if neg {
			n = -n
		}
	}
	if v.OverflowInt(n) {
		return false
	}
	v.SetInt(n)
	return true
}

// setFloat sets a floating-point number of plan p from s, as
// strconv.ParseFloat(s, bits) reads it.
func setFloat(p *typePlan, v reflect.Value, s string) bool {
	if p.kind != reflect.Float32 && p.kind != reflect.Float64 {
		return false
	}
	f, err := strconv.ParseFloat(s, p.typ.Bits())
	if err != nil {
		return false
	}
	v.SetFloat(f)
	return true
}
