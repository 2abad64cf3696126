package strictdecode

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	sigsyaml "sigs.k8s.io/yaml"
)

// Span is a named string type, as a document's durations are.
type Span string

// item and doc are a small document type that uses every kind the
// decoders read, and none of config's: the decoders are generic.
type item struct {
	Name   string            `json:"name,omitempty"`
	Count  int               `json:"count,omitempty"`
	Small  int8              `json:"small,omitempty"`
	Share  float64           `json:"share,omitempty"`
	On     bool              `json:"enabled,omitempty"`
	Labels map[string]string `json:"labels,omitempty"`
}

type doc struct {
	Title  string   `json:"title,omitempty"`
	Span   Span     `json:"span,omitempty"`
	Items  []item   `json:"items,omitempty"`
	Main   *item    `json:"main,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	Hidden string   `json:"-"`
	//lint:ignore U1000 an unexported field, which the decoders skip
	plain string
}

var testDecoder = New[doc](Options{MaxSize: 1 << 16, TypeNames: map[reflect.Type]string{reflect.TypeFor[Span](): "a span"}})

func TestDecodeAnyType(t *testing.T) {
	want := &doc{Title: "t", Span: "2", Tags: []string{"a", "true", "31"},
		Items: []item{{Name: "x", Count: 3, Share: 0.5, On: true, Labels: map[string]string{"k": "v", "num": "1"}}, {}},
		Main:  &item{Name: "m", Small: 8}}
	for name, data := range map[string]string{
		"json": `{"title":"t","span":"2","tags":["a","true","31"],"items":[{"name":"x","count":3,"share":0.5,"enabled":true,"labels":{"k":"v","num":"1"}},{}],"main":{"name":"m","small":8}}`,
		"yaml": "title: t\nspan: 2\ntags: [a, yes, 0x1f]\nitems:\n- name: x\n  count: 3\n  share: .5\n  enabled: on\n  labels: {k: v, num: 1}\n- {}\nmain:\n  name: m\n  small: 8\n",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := testDecoder.Decode([]byte(data))
			require.NoError(t, err)
			assert.Equal(t, want, got)
			_, fast := testDecoder.DecodeFast([]byte(data))
			assert.True(t, fast, "the fast path reads it")
			general, err := testDecoder.DecodeGeneral([]byte(data))
			require.NoError(t, err)
			assert.Equal(t, want, general)
		})
	}
}

func TestDecodeProblems(t *testing.T) {
	for _, tc := range []struct {
		data string
		want []string
		msg  string
	}{
		{`{"title":"a","Title":"b","items":[{"count":"3"},{"small":300}],"span":1}`, []string{
			CodeFieldUnknown + " Title", CodeFieldType + " items[0].count", CodeFieldType + " items[1].small", CodeFieldType + " span"},
			"expected a span, got a number"},
		{"title: a\ntitle: b\n", []string{CodeFieldDuplicate + " "}, `key "title" already set in map`},
		{"items: [{labels: {k: 1, k: 2}}]\n", []string{CodeFieldDuplicate + " "}, "already set in map"},
		{`{"hidden":"x","plain":"y"}`, []string{CodeFieldUnknown + " hidden", CodeFieldUnknown + " plain"}, ""},
		{"a: [", []string{CodeSyntax + " "}, "line"},
		{"title: a\n---\ntitle: b\n", []string{CodeSyntax + " "}, "more than one YAML document"},
		{"# nothing\n", []string{CodeEmpty + " "}, "empty document"},
		{"null", []string{CodeEmpty + " "}, ""},
		{strings.Repeat(" ", 1<<16+1), []string{CodeSize + " "}, ""},
		{"[1]", []string{CodeFieldType + " "}, "expected an object"},
		{"share: .nan\n", []string{CodeSyntax + " "}, "unsupported value"},
		{"? [a]\n: b\n", []string{CodeSyntax + " "}, ""},
	} {
		t.Run(tc.data, func(t *testing.T) {
			_, err := testDecoder.Decode([]byte(tc.data))
			assert.Equal(t, tc.want, problem.CodePaths(err))
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

// TestNewRefusesWhatItCannotRead: the decoders would read these kinds
// otherwise than encoding/json, so New refuses them at once.
func TestNewRefusesWhatItCannotRead(t *testing.T) {
	type embedded struct{ item }
	type iface struct{ V any }
	type unsigned struct{ N uint }
	type intKeys struct{ M map[int]string }
	type self struct{ T time.Time }
	type rawJSON struct{ R json.RawMessage }
	for name, f := range map[string]func(){
		"embedded":      func() { New[embedded](Options{}) },
		"interface":     func() { New[iface](Options{}) },
		"unsigned":      func() { New[unsigned](Options{}) },
		"int keys":      func() { New[intKeys](Options{}) },
		"UnmarshalJSON": func() { New[self](Options{}) },
		"not a struct":  func() { New[[]item](Options{}) },
		"raw JSON":      func() { New[rawJSON](Options{}) },
	} {
		assert.Panics(t, f, name)
	}
	assert.NotPanics(t, func() { New[doc](Options{}) })
}

// TestYAMLBehaviour pins what the general path relies on in
// go.yaml.in/yaml/v2, as its documentation says it: Unmarshal into an
// interface value gives maps of interface keys, lists and YAML 1.1
// scalars; UnmarshalStrict refuses a repeated key, and only that, in a
// *yaml.TypeError whose Errors list each one. An upgrade that changes
// any of it fails here first.
func TestYAMLBehaviour(t *testing.T) {
	var v any
	require.NoError(t, yaml.Unmarshal([]byte("a: [yes, 0x1f, 1.5, ~, x, 2001-12-14]\n1: b\n"), &v))
	assert.Equal(t, map[any]any{"a": []any{true, 31, 1.5, nil, "x", "2001-12-14"}, 1: "b"}, v)

	v = nil
	err := yaml.UnmarshalStrict([]byte("a: 1\nb: {c: 2, c: 3}\na: 4\n"), &v)
	var te *yaml.TypeError
	require.ErrorAs(t, err, &te)
	assert.Len(t, te.Errors, 2)
	for _, e := range te.Errors {
		assert.Contains(t, e, "already set in map")
	}
	v = nil
	require.NoError(t, yaml.Unmarshal([]byte("a: 1\na: 4\n"), &v), "the non-strict read takes the last value")
	assert.Equal(t, map[any]any{"a": 4}, v)

	err = yaml.UnmarshalStrict([]byte("a: [\n"), &v)
	require.Error(t, err)
	assert.False(t, errors.As(err, &te), "a syntax error is no TypeError")
}

// FuzzGeneralYAMLEqualsSigsYAML holds the general YAML path to the
// reference it was written after: every YAML document it decodes without
// a problem, sigs.k8s.io/yaml's UnmarshalStrict decodes to the same value.
func FuzzGeneralYAMLEqualsSigsYAML(f *testing.F) {
	for _, s := range []string{
		"title: t\nspan: 2\ntags: [a, yes, 0x1f, 1.5, 0.1, 1e3, -0, 010, 2001-12-14, .inf, ~]\n",
		"items:\n- {name: 1, count: 0x10, share: 1e-1, enabled: yes, labels: {a: 1.0, b: false, c: 18446744073709551615}}\n",
		"main: {name: 1e40, small: 127}\nspan: 3.4028235e+38\n",
		"title: !!str 12\nspan: !!binary aGk=\n", "tags: &a [x]\nitems: [{name: *a}]\n", "<<: {title: m}\n",
		"items: [{labels: {1: a, true: b, 1.5: c}}]\n", "title: |\n  a\n  b\n", "title: >\n  a\n  b\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if trimmed := strings.TrimLeft(string(data), " \t\r\n\ufeff"); trimmed == "" || trimmed[0] == '{' {
			return // JSON, read by encoding/json on both sides
		}
		got, err := testDecoder.DecodeGeneral(data)
		if err != nil {
			return
		}
		var want doc
		if err := sigsyaml.UnmarshalStrict(data, &want); err != nil {
			t.Fatalf("%q: decoded to %+v, sigs.k8s.io/yaml refuses it: %v", data, got, err)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Fatalf("%q:\ngot       %+v\nsigs.yaml %+v", data, got, &want)
		}
	})
}

// FuzzFastEqualsGeneral compares Decode with the general path alone on the
// test type: the same value and the same problems, for any input.
// (Package config's FuzzDecodeFastEqualsGeneral does the same on the
// document.)
func FuzzFastEqualsGeneral(f *testing.F) {
	for _, s := range []string{
		`{"title":"t","items":[{"name":"x","labels":{"a":"b"}}],"main":{"count":1}}`,
		"title: t\nitems:\n- name: x\n  labels: {a: b}\nmain: {count: 1, share: 1e-1}\n",
		"tags: [a, 'b', \"c\"]\nspan: |\n  x\n", "title: a\ntitle: b\n", "items: [{count: 1.5}]\n", `{"span":2}`,
		"main: {count: -1}\n", "main:\n  count: -1\ntitle: -2x\n", "tags:\n- -1\n- - x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotErr := testDecoder.Decode(data)
		want, wantErr := testDecoder.DecodeGeneral(data)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nfast    %#v\ngeneral %#v", data, got, want)
		}
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%q:\nfast    %v\ngeneral %v", data, gotErr, wantErr)
		}
	})
}
