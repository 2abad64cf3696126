package snapshot

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/paduraksa/paduraksa/gate"
)

// FuzzDecodeValidate feeds arbitrary bytes through Decode, Validate and
// Canonical: nothing panics, every error is a problem with a known code,
// a decoded document written by encoding/json decodes to a document with
// the same canonical form (Decode reads back every field json writes), and
// the canonical form of a valid document decodes to a valid document with
// the same canonical form.
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
		`{"global":{"server":"a\\b\u0001\u2028","defaultAnswer":{"body":"\t<\u00e9>\n"}}}`,
	} {
		f.Add([]byte(s))
	}
	known := knownCodes(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Decode(data)
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
		c1, err := Canonical(doc)
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
		back, err := Decode(js)
		if err != nil {
			t.Fatalf("%s, as encoding/json writes it, does not decode: %v", js, err)
		}
		if cb, err := Canonical(back); err != nil || !bytes.Equal(cb, c1) {
			t.Fatalf("%s decodes to another document:\n%s\n%s", js, c1, cb)
		}
		doc2, err := Decode(c1)
		if err != nil {
			t.Fatalf("canonical form %s does not decode: %v", c1, err)
		}
		if len(probs) > 0 {
			return
		}
		if p2 := Validate(doc2); len(p2) > 0 {
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

// FuzzParseAddress checks ParseAddress against refAddress, which reads
// the URL with net/url, and checks that the canonical form of an address
// parses back to the same address.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{
		"http://example.com", "https://Example.COM:8443/", "http://[2001:db8::1]:81", "http://[::ffff:10.0.0.1]",
		"http://10.0.0.1:8080", "http://bücher.example", "ftp://x", "http://a.com/x", "http://a@b", "http://@b",
		"http://a.com:", "http://[::1]:", "http://[::1]x", "http://a.com:0", "http://a.com:080", "http://a.com:65536", "http://a.com:+80", "http://a.com.",
		"http://a%41.com", "http://[fe80::1%25eth0]", "http://[1.2.3.4]", "http://*.a.com", "http://a.com?", "http://a.com#",
		"http://a.com/?", "http:a.com", "http:///a.com", "http://a.com:80:80", "http://a.com\\x", "HTTP://A.COM/",
		"http://\u00a0a.com", "http://0\xc30", "http:", "http:/", "http://", "http://xn--bcher-kva.example", "http://1.2.3", "http://123",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		scheme, hostport, err := ParseAddress(s)
		wantScheme, wantHostport, ok := refAddress(s)
		if (err == nil) != ok || scheme != wantScheme || hostport != wantHostport {
			t.Fatalf("ParseAddress(%q) = %q, %q, %v; the reference: %q, %q, %v", s, scheme, hostport, err, wantScheme, wantHostport, ok)
		}
		if !ok {
			return
		}
		a, reason := parseAddr(s)
		if reason != "" {
			t.Fatalf("ParseAddress accepts %q, parseAddr does not: %s", s, reason)
		}
		again := string(a.appendURL(nil))
		if again != scheme+"://"+hostport {
			t.Fatalf("canonical form of %q is %q, want %q", s, again, scheme+"://"+hostport)
		}
		scheme2, hostport2, err := ParseAddress(again)
		if err != nil || scheme2 != scheme || hostport2 != hostport {
			t.Fatalf("%q -> %q: %q %q %v; want %q %q", s, again, scheme2, hostport2, err, scheme, hostport)
		}
	})
}

// refAddress reads a destination address as ParseAddress documents it:
// http:// or https:// in any case, a host and an optional port (1-65535,
// decimal, no leading zero; 80 or 443 by default), no user info, no path
// but "/", no query, no fragment. The host is an IPv6 literal in brackets
// (IPv4-mapped ones stand for IPv4) or a host name as gate reads one, in
// its canonical form, which must be stable; not a wildcard, not ending in
// a dot, without white space around it, as written (no percent-escapes).
func refAddress(s string) (scheme, hostport string, ok bool) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Opaque != "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || strings.Contains(s, "#") || u.Path != "" && u.Path != "/" || u.RawPath != "" {
		return "", "", false
	}
	_, authority, _ := strings.Cut(s, "://")
	if i := strings.IndexAny(authority, "/?#"); i >= 0 {
		authority = authority[:i]
	}
	if u.Host == "" || strings.Contains(authority, "%") || strings.HasSuffix(authority, ":") {
		return "", "", false
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	} else if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' || port[0] == '+' {
		return "", "", false
	}
	if strings.HasPrefix(authority, "[") {
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is6() || ip.Zone() != "" {
			return "", "", false
		}
		if ip.Is4In6() {
			return u.Scheme, ip.Unmap().String() + ":" + port, true
		}
		return u.Scheme, "[" + ip.String() + "]:" + port, true
	}
	canon, wildcard, err := gate.CanonicalHostName(host)
	if err != nil || wildcard || host == "" || strings.HasSuffix(host, ".") || !utf8.ValidString(host) ||
		strings.TrimFunc(host, unicode.IsSpace) != host {
		return "", "", false
	}
	if again, _, err := gate.CanonicalHostName(canon); err != nil || again != canon {
		return "", "", false
	}
	return u.Scheme, canon + ":" + port, true
}
