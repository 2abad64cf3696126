package snapshot

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/paduraksa/paduraksa/config"
)

// FuzzDecodeValidate feeds arbitrary bytes through Decode, Validate and
// Canonical: nothing panics, every error is a problem with a known code,
// a decoded document written by encoding/json decodes to a document with
// the same canonical form (Decode reads back every field json writes), and
// the canonical form of a valid document decodes to a valid document with
// the same canonical form.
func FuzzDecodeValidate(f *testing.F) {
	for _, name := range []string{"../config/testdata/valid.json", "../config/testdata/valid.yaml", "../config/testdata/canonical.golden"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tc := range codeCases() {
		if tc.data != "" && len(tc.data) < 1<<10 {
			f.Add([]byte(tc.data))
		}
	}
	for _, s := range []string{
		`{}`,
		`{"hosts":[{"names":["A.com","*.a.com"],"routes":[{"path":"/api/","upstream":"u"}]}],"upstreams":[{"id":"u","destinations":[{"id":"d","address":"HTTP://[::1]:80/"}]}]}`,
		"hosts:\n- names: [bücher.example]\n  kind: redirect\n  redirect: {to: 'https://b.com/', status: 301}\n",
		"upstreams:\n- id: u\n  http: {connectTimeout: 10000ms, tls: {trust: pinned, pins: [" + testPin + "]}}\n",
		`{"global":{"trustedProxies":["::ffff:10.0.0.0/104"],"defaultAnswer":{}}}`,
		`{"global":{"server":"a\\b\u0001\u2028","defaultAnswer":{"body":"\t<\u00e9>\n"}}}`,
	} {
		f.Add([]byte(s))
	}
	known := knownCodes(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := config.Decode(data)
		if err != nil {
			probs := strictProblems(t, err)
			if len(probs) == 0 {
				t.Fatalf("Decode error without problems: %v", err)
			}
			for _, p := range probs {
				if !known[p.Code] {
					t.Fatalf("unknown code in %v", p)
				}
			}
			return
		}
		probs := Validate(doc)
		for _, p := range probs {
			if !known[p.Code] || p.Path == "" || p.Msg == "" {
				t.Fatalf("bad problem %#v", p)
			}
		}
		c1, err := config.Canonical(doc)
		if err != nil {
			t.Fatalf("Canonical: %v", err)
		}
		if !json.Valid(c1) {
			t.Fatalf("canonical form is not JSON: %q", c1)
		}
		js, err := json.Marshal(doc)
		if err != nil {
			t.Fatalf("json.Marshal: %v", err)
		}
		back, err := config.Decode(js)
		if err != nil {
			t.Fatalf("%s, as encoding/json writes it, does not decode: %v", js, err)
		}
		if cb, err := config.Canonical(back); err != nil || !bytes.Equal(cb, c1) {
			t.Fatalf("%s decodes to another document:\n%s\n%s", js, c1, cb)
		}
		doc2, err := config.Decode(c1)
		if err != nil {
			t.Fatalf("canonical form %s does not decode: %v", c1, err)
		}
		if len(probs) > 0 {
			return
		}
		if p2 := Validate(doc2); len(p2) > 0 {
			t.Fatalf("canonical form %s is not valid: %v", c1, p2[0])
		}
		c2, err := config.Canonical(doc2)
		if err != nil {
			t.Fatalf("Canonical of the canonical form: %v", err)
		}
		if !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form is not stable:\n%s\n%s", c1, c2)
		}
	})
}
