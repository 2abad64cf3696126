package snapshot

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/paduraksa/paduraksa/gate"
)

// FuzzDecodeValidate feeds arbitrary bytes through Decode, Validate and
// Canonical: nothing panics, every problem has a known code, and the
// canonical form of a valid document decodes to a valid document with the
// same canonical form.
func FuzzDecodeValidate(f *testing.F) {
	for _, name := range []string{"testdata/valid.json", "testdata/valid.yaml", "testdata/canonical.golden"} {
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
	} {
		f.Add([]byte(s))
	}
	known := map[string]bool{}
	for _, c := range allCodes {
		known[c] = true
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Decode(data)
		if err != nil {
			probs := Problems(err)
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
		probs := Validate(doc, ValidateOptions{})
		for _, p := range probs {
			if !known[p.Code] || p.Path == "" || p.Msg == "" {
				t.Fatalf("bad problem %#v", p)
			}
		}
		c1, err := Canonical(doc)
		if err != nil {
			t.Fatalf("Canonical: %v", err)
		}
		if !json.Valid(c1) {
			t.Fatalf("canonical form is not JSON: %q", c1)
		}
		doc2, err := Decode(c1)
		if err != nil {
			t.Fatalf("canonical form %s does not decode: %v", c1, err)
		}
		if len(probs) > 0 {
			return
		}
		if p2 := Validate(doc2, ValidateOptions{}); len(p2) > 0 {
			t.Fatalf("canonical form %s is not valid: %v", c1, p2[0])
		}
		c2, err := Canonical(doc2)
		if err != nil {
			t.Fatalf("Canonical of the canonical form: %v", err)
		}
		if !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form is not stable:\n%s\n%s", c1, c2)
		}
	})
}

// FuzzCanonicalHostName checks the fast path of canonHostName against
// gate.CanonicalHostName.
func FuzzCanonicalHostName(f *testing.F) {
	for _, s := range []string{
		"example.com", "*.example.com", "EXAMPLE.com.", "xn--bcher-kva.example", "bücher.example", "a--b.com",
		"ab--c.com", "-a.com", "a-.com", "1.2.3.4", "01.2.3.4", "1.2.3", "::1", "[::1]", "a..b", "a_b.com",
		"123", "1e1", "*.1.2.3.4", "a.b.c.d.e.f.g", " a.com", "*.", "*", "",
		"0.0.0.0", "255.255.255.255", "256.1.1.1", "1.2.3.04", "1.2.3.4.5", "1.2.3.", ".1.2.3", "1..2.3",
		"0\xc30", "a.com\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		got, gotWild, gotErr := canonHostName(name)
		want, wantWild, wantErr := gate.CanonicalHostName(name)
		if gotErr != nil {
			// Refused here, accepted by gate: only if gate's result is not
			// stable.
			if wantErr == nil {
				if again, _, err := gate.CanonicalHostName(want); err == nil && again == want {
					t.Fatalf("canonHostName(%q) refuses: %v; gate: %q", name, gotErr, want)
				}
			}
			return
		}
		if wantErr != nil || got != want || gotWild != wantWild {
			t.Fatalf("canonHostName(%q) = %q, %v; gate: %q, %v, %v", name, got, gotWild, want, wantWild, wantErr)
		}
		if again, wild, err := canonHostName(got); err != nil || again != got || wild != gotWild {
			t.Fatalf("canonHostName(%q) = %q, but of that: %q, %v", name, got, again, err)
		}
	})
}

// FuzzParseAddress checks that a parsed address parses back to itself.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "https://Example.COM:8443/", "http://[2001:db8::1]:81", "http://[::ffff:10.0.0.1]",
		"http://10.0.0.1:8080", "http://bücher.example", "ftp://x", "http://a.com/x", "http://a@b",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scheme, hostport, err := ParseAddress(s)
		if err != nil {
			return
		}
		a, reason := parseAddr(s)
		if reason != "" {
			t.Fatalf("ParseAddress accepts %q, parseAddr does not: %s", s, reason)
		}
		again := string(a.appendURL(nil))
		scheme2, hostport2, err := ParseAddress(again)
		if err != nil || scheme2 != scheme || hostport2 != hostport {
			t.Fatalf("%q -> %q: %q %q %v; want %q %q", s, again, scheme2, hostport2, err, scheme, hostport)
		}
	})
}
