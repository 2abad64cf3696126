package config

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// fastCases are documents in the forms the fast decoders read, by name.
func fastCases(t testing.TB) map[string][]byte {
	t.Helper()
	cases := map[string][]byte{}
	for _, name := range []string{"testdata/valid.json", "testdata/valid.yaml", "testdata/canonical.golden"} {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		cases[name] = data
	}
	js, err := json.MarshalIndent(fleet(3), "", "  ")
	require.NoError(t, err)
	y, err := yaml.JSONToYAML(js)
	require.NoError(t, err)
	cases["fleet.json"], cases["fleet.yaml"] = js, y
	cases["yaml forms"] = []byte(`# a comment
global:
  server: "srv \"x\"" # after a value
  zone: 'it''s'
  trustedProxies: [10.0.0.0/8, "192.0.2.7", '::1']
  defaultAnswer: {status: 404, body: nope}

hosts:
  - names:
    - a.com
    - bücher.example
    routes: [{upstream: u, path: /api, retry: {budget: .5, attempts: 2}}]
    limits:
      maxBodyBytes: 0x10
  -
    names: [b.com]
    kind: redirect
    redirect: {to: https://b.com/, status: 301, dropPath: yes}
upstreams:
- id: u
  http: {version: 2, connectTimeout: 5s}
  health:
    active: {enabled: on, threshold: 3}
    passive:
      failureRate: 1e-1
  metadata: {port: 8080, flag: true, name: x}
  destinations:
  - id: d
    address: http://127.0.0.1:9
  - {id: e, address: "http://[::1]:80"}
accessLists:
- id: a
  realm: |-
    two

      lines # not a comment
  # a comment
  mode: |
   shadow


`)
	return cases
}

// TestDecodeFast proves the fast decoders read the common documents (so
// that the differential fuzz target compares something) and that they
// give the general path's document.
func TestDecodeFast(t *testing.T) {
	for name, data := range fastCases(t) {
		t.Run(name, func(t *testing.T) {
			want, err := decoder.DecodeGeneral(data)
			require.NoError(t, err)
			got, ok := decoder.DecodeFast(data)
			require.True(t, ok, "the fast path gave up")
			assert.Equal(t, want, got)
		})
	}
}

// FuzzDecodeFastEqualsGeneral compares Decode with the general path alone
// (go.yaml.in/yaml/v2 and encoding/json): the same document and the same
// problems, for any input.
func FuzzDecodeFastEqualsGeneral(f *testing.F) {
	for _, data := range fastCases(f) {
		f.Add(data)
	}
	for _, s := range []string{
		"a: 1", "hosts:\n- names: [x]\n  routes:\n  - upstream: u\n    path: /\n",
		"global: {server: 010}", "global: {server: 0x1f, zone: 1_000}", "global: {server: yes, zone: ~}",
		"global: {server: 1.5}", "global: {server: 2001-12-14}", "global:\n  server: a\n  server: b\n",
		"hosts: [{names: [a], routes: [{retry: {budget: 1}}]}]",
		"upstreams: [{metadata: {a: ~}}]", "global:\n  server: a\n   b\n", "global: {server: \"a\\/b\"}",
		`{"global":{"server":"\ud800"}}`, `{"hosts":[{"names":["a"],"limits":{"maxBodyBytes":1e3}}]}`,
		`{"upstreams":[{"metadata":{"a":"b","a":"c"}}]}`, "hosts:\n- names:\n  - a\n  - b\n- names: []\n",
		"global:\n  server: |\n    a\n   b\n", "global:\n  server: |2\n    a\n", "global:\n  server: |+\n  a\n\n",
		"global:\n  server: |\n\n  a\n", "global:\n  server: |\n  a\n    \n", "global:\n  server: >\n  a\n  b\n",
		"hosts:\n- robots: |\n    a\n  names: [x]\n", "global:\n  server: |\n  a",
		"hosts:\n- routes:\n  - order: -1\n", "hosts: [{routes: [{order: -12, path: -x}]}]", "global: {server: -1}",
		"global: {server: -1.5, zone: -0x1f}", "global:\n  server: -1-2\n", "hosts:\n- routes:\n  - order: -9223372036854775809\n",
		"hosts:\n- names:\n  -1\n", "hosts:\n- names:\n  - -1\n",
	} {
		f.Add([]byte(s))
	}
	for _, s := range flowDuplicates {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gotErr := decoder.Decode(data)
		want, wantErr := decoder.DecodeGeneral(data)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nfast    %#v\ngeneral %#v", data, got, want)
		}
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("%q:\nfast    %v\ngeneral %v", data, gotErr, wantErr)
		}
	})
}

// flowDuplicates are documents with a key given twice in a YAML flow
// mapping: at the top (which the decoders read as JSON, since it starts
// with '{'), in a struct, in a map, nested in lists, quoted.
var flowDuplicates = []string{
	"{a: 1, a: 2}",
	"global: {server: a, server: b}",
	"global: {\"server\": a, 'server': b}",
	"upstreams: [{id: u, metadata: {a: 1, a: 2}}]",
	"upstreams: [{id: u, health: {active: {path: /a, path: /b}}}]",
	"hosts: [{names: [x], routes: [{upstream: u, path: /a, upstream: v}]}]",
	"hosts:\n- names: [x]\n  routes:\n  - {upstream: u, upstream: u}\n",
	"upstreams:\n- id: u\n  metadata: {k: 1, j: 2, k: 3}\n",
}

// TestDecodeFlowMappingDuplicates: both decoders refuse a key given twice
// in a flow mapping, with the same code, path and message, and decode
// the rest the same.
func TestDecodeFlowMappingDuplicates(t *testing.T) {
	for _, s := range flowDuplicates {
		t.Run(s, func(t *testing.T) {
			fast, fastErr := decoder.Decode([]byte(s))
			general, generalErr := decoder.DecodeGeneral([]byte(s))
			require.Error(t, generalErr)
			require.Error(t, fastErr, "the fast decoder took the duplicate")
			want := CodeDocumentFieldDuplicate
			if s[0] == '{' {
				want = CodeDocumentSyntax // JSON: keys are quoted
			}
			gp, fp := strictProblems(t, generalErr), strictProblems(t, fastErr)
			require.Len(t, gp, 1)
			assert.Equal(t, want, gp[0].Code)
			assert.Equal(t, gp, fp, "the same code, path and message")
			assert.Equal(t, general, fast, "the same document")
		})
	}
}

// A document's lists decode to at most 64 times its bytes: sixteen
// upstreams and then millions of elements of three bytes or two (valid
// JSON, in the fast path's form or not) once took gigabytes and a minute
// before the first check (19 GB for the 8 MB of zeros). Each is refused
// with document.size at the list, after allocating about the budget; a
// document of a million wrong values is reported with its first 1000
// problems.
func TestDecodeListsBoundedByTheDocumentsBytes(t *testing.T) {
	doc := func(elem string, n int) []byte {
		var b strings.Builder
		b.WriteString(`{"upstreams":[`)
		for i := range 16 {
			fmt.Fprintf(&b, `{"id":"u%d"},`, i)
		}
		b.WriteString(strings.Repeat(elem+",", n))
		b.WriteString(`{"id":"last"}]}`)
		return []byte(b.String())
	}
	for _, tc := range []struct {
		name string
		data []byte
		code string
		path string
	}{
		{"empty objects", doc("{}", 2<<20), CodeDocumentSize, "upstreams"},
		{"zeros", doc("0", 4<<20), CodeDocumentTooManyProblems, ""},
		{"empty objects in YAML", []byte("upstreams:\n" + strings.Repeat("  - {}\n", 1<<20)), CodeDocumentSize, "upstreams"},
	} {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		d, err := Decode(tc.data)
		runtime.ReadMemStats(&after)
		require.Error(t, err, tc.name)
		assert.Nil(t, d, tc.name)
		probs := Problems(err)
		last := probs[len(probs)-1]
		assert.Equal(t, tc.code, last.Code, "%s: %v", tc.name, last)
		assert.Equal(t, tc.path, last.Path, tc.name)
		assert.LessOrEqual(t, len(probs), 1001, tc.name)
		// The lists' budget (64 times the bytes), the copies of a growing
		// list, and YAML's general path: far from the gigabytes per
		// megabyte of before.
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(160*len(tc.data)+64<<20),
			"%s: bytes allocated for a %d-byte document", tc.name, len(tc.data))
	}
}
