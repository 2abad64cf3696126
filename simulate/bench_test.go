package simulate

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// draftOfHosts is a document of n proxy hosts with two routes and a rule
// set each.
func draftOfHosts(n int) []byte {
	var b strings.Builder
	b.WriteString("ruleSets: [{id: waf, rules: [{pathPrefix: /wp-}]}]\nhosts:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - names: [h%d.example.com, \"*.h%d.example.com\"]\n    policies: [waf]\n    routes:\n      - {path: /api, upstream: u%d}\n      - {path: /, upstream: u%d}\n", i, i, i%50, (i+1)%50)
	}
	b.WriteString("upstreams:\n")
	for i := range 50 {
		fmt.Fprintf(&b, "  - {id: u%d, destinations: [{id: d, address: \"http://127.0.0.1:%d\"}]}\n", i, 10000+i)
	}
	return []byte(b.String())
}

// BenchmarkRunDraft2000 is one simulation against a 2000-host draft:
// "draft" compiles the draft as a publish would (decode included) and
// simulates one request; "compiled" simulates against a draft compiled
// once (a Tester, a diff).
func BenchmarkRunDraft2000(b *testing.B) {
	data := draftOfHosts(2000)
	probe := Probe{URL: "https://x.h1999.example.com/api/users", HTTPVersion: 2}
	b.Run("draft", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := Run(Target{DraftData: data}, probe)
			if err != nil || res.Outcome.Kind != TLSRefused {
				b.Fatal(err, res)
			}
		}
	})
	plain := Probe{URL: "http://x.h1999.example.com/api/users"}
	target := Target{DraftData: data}
	res, err := target.resolve()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("compiled", func(b *testing.B) {
		b.ReportAllocs()
		rq, err := plain.check()
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			r, err := runResolved(context.Background(), &target, res, rq)
			if err != nil || r.Outcome.Kind != Forwarded || r.Outcome.Upstream.ID != "u49" {
				b.Fatal(err, r)
			}
		}
	})
}
