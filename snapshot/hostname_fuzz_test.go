package snapshot

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/hostname"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// FuzzHostNamesAgree holds the document, the gate and the TLS selector to
// the library's one rule for host names (internal/hostname): a document
// takes exactly the names the rule takes, writes each in the rule's
// spelling in its canonical form, and the snapshot it compiles to serves
// the name, under that spelling and as a client writes it (any case, a
// trailing dot, a port), to HTTP requests over a real socket and to TLS
// handshakes; a wildcard serves a name one label under it. (The gate's
// FuzzCanonicalHostName holds its Host lookup to the rule the other way:
// every name a client can reach the gate by is one a document can name.)
func FuzzHostNamesAgree(f *testing.F) {
	for _, s := range []string{
		"a.test", "A.Test.", "*.a.test", "bücher.example", "my_service", "My_Service.test", "192.0.2.1", "[::FFFF:192.0.2.1]",
		"2001:DB8::1", "[2001:db8::1]", "a..test", "-a.test", "a_b.xn--bcher-kva.example", "bü_cher.test", "a!b.test", " a.test ",
		"*.", "*.*.a", "1.2.3", "01.2.3.4", "xn--zz", "a\u3002test", "ａ＿ｂ.test",
	} {
		f.Add(s)
	}
	store := new(Store)
	pub := NewPublisher(PublisherConfig{Store: store, History: -1,
		Compiler: Compiler{Certificates: map[string]tlsselect.Source{"c": tlsselect.Static(selfSigned(f))}}})
	f.Cleanup(func() { pub.Close() })
	addr := serve(f, store)
	client := newClient(f)
	f.Fuzz(func(t *testing.T, name string) {
		doc := &config.Document{
			Certificates: []config.Certificate{{ID: "c"}},
			Hosts: []config.Host{{Names: []string{name}, Certificate: "c", Kind: "fixed",
				Fixed: &config.FixedAnswer{Status: 200, Body: "hit"}}},
		}
		canon, wild, ruleErr := hostname.Canonical(name)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		o, err := pub.Apply(ctx, doc)
		if ctx.Err() != nil {
			t.Fatalf("%q: no outcome: %v", name, ctx.Err())
		}
		if (ruleErr == nil) != (err == nil) {
			t.Fatalf("%q: the rule says %q, %v; the document: %v, %v", name, canon, ruleErr, o.Status, err)
		}
		if ruleErr != nil {
			return
		}
		form, err := config.Canonical(doc)
		if err != nil {
			t.Fatal(err)
		}
		quoted, _ := json.Marshal(canon)
		if !strings.Contains(string(form), `"names":[`+string(quoted)+`]`) {
			t.Fatalf("%q: the canonical form does not spell it %s: %s", name, quoted, form)
		}

		hosts := []string{canon, strings.ToUpper(canon) + ".", canon + ":8080"}
		switch {
		case wild:
			hosts = []string{"x" + canon[1:], "X" + strings.ToUpper(canon[1:]) + "."}
		case strings.Contains(canon, ":"):
			hosts = []string{"[" + canon + "]", "[" + strings.ToUpper(canon) + "]:443"}
		}
		for _, h := range hosts {
			req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = h
			res, err := client.Do(req)
			if err != nil {
				t.Fatalf("%q: Host %q: %v", name, h, err)
			}
			res.Body.Close()
			if res.StatusCode != 200 {
				t.Fatalf("%q: Host %q is not served: %d", name, h, res.StatusCode)
			}
		}
		if hostname.IsIP(canon) {
			return // no SNI names an IP address
		}
		sni := strings.TrimSuffix(strings.Split(hosts[len(hosts)-1], ":")[0], ".")
		if sel := store.Load().TLS().Select(hosts[0], tlsselect.TCP); sel.Host != 0 {
			t.Fatalf("%q: SNI %q selects host %d, %v", name, hosts[0], sel.Host, sel.Reason)
		}
		if sel := store.Load().TLS().Select(strings.ToUpper(sni)+".", tlsselect.TCP); sel.Host != 0 {
			t.Fatalf("%q: SNI %q selects host %d, %v", name, strings.ToUpper(sni)+".", sel.Host, sel.Reason)
		}
	})
}

// selfSigned returns a certificate for the fuzz target's hosts; it covers
// none of the fuzzed names, which the TLS table only warns about.
func selfSigned(t testing.TB) tls.Certificate {
	c, err := tlsselect.SelfSigned(time.Hour, "localhost")
	if err != nil {
		t.Fatal(err)
	}
	return c
}
