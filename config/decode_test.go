package config

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/problem/problemtest"
)

// The tests' readings of problems (problemtest): "code path" for each,
// failing on an error that is no problem.
var (
	problemList    = problemtest.List
	strictProblems = problemtest.Problems
)

func TestDecodeUnknownFields(t *testing.T) {
	tests := []struct {
		name, data string
		want       []string
	}{
		{"nested in arrays", `{"hosts":[{"names":["a.com"]},{"routes":[{"path":"/"},{"upstream":"u","bogus":{"x":[1,{"y":2}]}}]}]}`,
			[]string{CodeDocumentFieldUnknown + " hosts[1].routes[1].bogus"}},
		{"top level", `{"host":[]}`, []string{CodeDocumentFieldUnknown + " host"}},
		{"case mismatch", `{"Hosts":[{"Names":["a.com"],"routes":[{"Upstream":"u"}]}]}`,
			[]string{CodeDocumentFieldUnknown + " Hosts"}},
		{"case mismatch nested", `{"upstreams":[{"id":"u","http":{"tls":{"serverName":"a","ServerName":"b"}}}]}`,
			[]string{CodeDocumentFieldUnknown + " upstreams[0].http.tls.ServerName"}},
		{"odd key", `{"global":{"a b":1}}`, []string{CodeDocumentFieldUnknown + ` global["a b"]`}},
		{"several", `{"global":{"x":1},"hosts":[{"y":2,"names":[3]}],"upstreams":[{"health":{"passive":{"failureRate":"high"}}}]}`,
			[]string{
				CodeDocumentFieldUnknown + " global.x",
				CodeDocumentFieldUnknown + " hosts[0].y",
				CodeDocumentFieldType + " hosts[0].names[0]",
				CodeDocumentFieldType + " upstreams[0].health.passive.failureRate",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Decode([]byte(tt.data))
			require.Error(t, err)
			assert.NotNil(t, doc, "the values that decoded are kept, for their problems to be found too")
			assert.Equal(t, tt.want, problemList(t, err))
		})
	}
}

func TestDecodeCaseMismatchSuggestsName(t *testing.T) {
	_, err := Decode([]byte(`{"Hosts":[]}`))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `did you mean "hosts"`)
}

func TestDecodeTypes(t *testing.T) {
	tests := []struct{ data, path string }{
		{`{"hosts":{}}`, "hosts"},
		{`{"hosts":[{"names":"a.com"}]}`, "hosts[0].names"},
		{`{"hosts":[{"names":["a.com"],"redirect":{"status":"301"}}]}`, "hosts[0].redirect.status"},
		{`{"hosts":[{"redirect":{"status":301.5}}]}`, "hosts[0].redirect.status"},
		{`{"hosts":[{"redirect":{"status":1e3}}]}`, "hosts[0].redirect.status"},
		{`{"hosts":[{"redirect":{"status":99999999999999999999}}]}`, "hosts[0].redirect.status"},
		{`{"upstreams":[{"http":{"version":2}}]}`, "upstreams[0].http.version"},
		{`{"upstreams":[{"health":{"active":{"enabled":"true"}}}]}`, "upstreams[0].health.active.enabled"},
		{`{"upstreams":[{"health":{"passive":{"failureRate":1e999}}}]}`, "upstreams[0].health.passive.failureRate"},
		{`{"upstreams":[{"affinity":{"cookie":{"httpOnly":1}}}]}`, "upstreams[0].affinity.cookie.httpOnly"},
		{`{"upstreams":[{"metadata":{"a":"b","c":1}}]}`, "upstreams[0].metadata.c"},
		{`{"upstreams":[{"metadata":[]}]}`, "upstreams[0].metadata"},
		{`{"global":"x"}`, "global"},
		{`[]`, ""},
		{`"a"`, ""},
		{`- a`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.data, func(t *testing.T) {
			_, err := Decode([]byte(tt.data))
			assert.Equal(t, []string{CodeDocumentFieldType + " " + tt.path}, problemList(t, err))
		})
	}
}

func TestDecodeNullIsAbsent(t *testing.T) {
	doc, err := Decode([]byte(`{"global":null,"hosts":[{"names":null,"redirect":null,"routes":[{"id":null}]}]}`))
	require.NoError(t, err)
	assert.Equal(t, &Document{Hosts: []Host{{Routes: []Route{{}}}}}, doc)
}

func TestDecodeDuplicates(t *testing.T) {
	_, err := Decode([]byte(`{"upstreams":[{"id":"a","id":"b","metadata":{"k":"1","k":"2"}}]}`))
	assert.Equal(t, []string{
		CodeDocumentFieldDuplicate + " upstreams[0].id",
		CodeDocumentFieldDuplicate + " upstreams[0].metadata.k",
	}, problemList(t, err))

	_, err = Decode([]byte("global:\n  server: a\n  server: b\n"))
	require.Error(t, err)
	probs := strictProblems(t, err)
	require.Len(t, probs, 1)
	assert.Equal(t, CodeDocumentFieldDuplicate, probs[0].Code)
	assert.Contains(t, probs[0].Msg, "line 3")
}

func TestDecodeYAMLEqualsJSON(t *testing.T) {
	j, err := os.ReadFile("testdata/valid.json")
	require.NoError(t, err)
	y, err := os.ReadFile("testdata/valid.yaml")
	require.NoError(t, err)
	dj, err := Decode(j)
	require.NoError(t, err)
	dy, err := Decode(y)
	require.NoError(t, err)
	assert.Equal(t, dj, dy)

	// A JSON document not starting with "{" goes through YAML, which
	// reads JSON too; with a byte-order mark and leading space it is JSON.
	dj2, err := Decode(append([]byte("\xef\xbb\xbf \n"), j...))
	require.NoError(t, err)
	assert.Equal(t, dj, dj2)
}

func TestDecodeYAML(t *testing.T) {
	doc, err := Decode([]byte(`
hosts:
  - names: [a.com]
    routes: [{upstream: u}]
upstreams:
  - id: u
    http: {version: 2, connectTimeout: 5s}
    health: {active: {enabled: yes, threshold: 3}}
    metadata: {port: 8080}
`))
	require.NoError(t, err)
	assert.Equal(t, "2", doc.Upstreams[0].HTTP.Version)
	assert.Equal(t, Duration("5s"), doc.Upstreams[0].HTTP.ConnectTimeout)
	assert.True(t, doc.Upstreams[0].Health.Active.Enabled)
	assert.Equal(t, 3, doc.Upstreams[0].Health.Active.Threshold)
	assert.Equal(t, map[string]string{"port": "8080"}, doc.Upstreams[0].Metadata)

	_, err = Decode([]byte("hosts:\n  - names: [a.com]\n    Routes: []\n"))
	assert.Equal(t, []string{CodeDocumentFieldUnknown + " hosts[0].Routes"}, problemList(t, err))
	_, err = Decode([]byte("hosts:\n  - redirect: {status: permanent}\n"))
	assert.Equal(t, []string{CodeDocumentFieldType + " hosts[0].redirect.status"}, problemList(t, err))
}

func TestDecodeSyntax(t *testing.T) {
	tests := []struct{ name, data, msg string }{
		{"json", "{\n  \"hosts\": [\n    {\"names\": [\"a\",]}\n  ]\n}", "line 3, column 20"},
		{"json truncated", `{"hosts": [`, "unexpected end"},
		{"json trailing object", `{} {}`, "trailing data"},
		{"json trailing text", "{\"hosts\":[]}\nhosts: []\n", "trailing data"},
		{"yaml", "hosts:\n  - names: [a.com\n", "line"},
		{"yaml tab", "hosts:\n\t- names: []\n", "line"},
		{"yaml second document", "hosts: []\n---\nupstreams: []\n", "more than one YAML document"},
		{"yaml content after end", "hosts: []\n...\nupstreams: []\n", "more than one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Decode([]byte(tt.data))
			assert.Nil(t, doc)
			probs := strictProblems(t, err)
			require.Len(t, probs, 1, "%v", err)
			assert.Equal(t, CodeDocumentSyntax, probs[0].Code)
			assert.Contains(t, probs[0].Msg, tt.msg)
		})
	}
}

func TestDecodeYAMLMarkers(t *testing.T) {
	noHosts := &Document{Hosts: []Host{}}
	for _, tc := range []struct {
		data string
		want *Document
	}{
		{"---\nhosts: []\n", noHosts},
		{"%YAML 1.1\n---\nhosts: []\n", noHosts},
		{"# comment\n--- # start\nhosts: []\n...\n# end\n", noHosts},
		{"hosts: []\n---\n# nothing more\n", noHosts},
		{"global:\n  defaultAnswer:\n    body: |\n      a\n      ---\n      b\n",
			&Document{Global: Global{DefaultAnswer: &FixedAnswer{Body: "a\n---\nb\n"}}}},
	} {
		doc, err := Decode([]byte(tc.data))
		require.NoError(t, err, tc.data)
		assert.Equal(t, tc.want, doc, tc.data)
	}
}

func TestDecodeEmpty(t *testing.T) {
	for _, data := range []string{"", " ", "\n# only a comment\n", "null", "~", "---\n"} {
		_, err := Decode([]byte(data))
		assert.Equal(t, []string{CodeDocumentEmpty + " "}, problemList(t, err), "%q", data)
	}
	doc, err := Decode([]byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, &Document{}, doc)
}

func TestDecodeSize(t *testing.T) {
	// Exactly at the limit is read.
	data := []byte(strings.Repeat(" ", MaxDocumentSize-2) + "{}")
	doc, err := Decode(data)
	require.NoError(t, err)
	assert.Equal(t, &Document{}, doc)
	_, err = Decode(append(data, ' '))
	assert.Equal(t, []string{CodeDocumentSize + " "}, problemList(t, err))
}
