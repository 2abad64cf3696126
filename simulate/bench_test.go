package simulate

import (
	"context"
	"fmt"
	"net/http"
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

// BenchmarkDiffDeclaredBodies is a diff of 32 probes that each declare a
// 16 MiB body, against the live config and a draft of it: what the
// simulator's HTTP API was asked to do at most per request before a
// declared body cost only what the server reads of it.
func BenchmarkDiffDeclaredBodies(b *testing.B) {
	c := compilerFor(b)
	store := publish(b, bodyDoc, c)
	for _, v := range []struct {
		name, url string
		version   int
	}{
		{"http1", "http://app.test/upload", 1},
		{"http1-tls", "https://app.test/upload", 1},
		{"http2", "https://app.test/upload", 2},
		{"http3", "https://app.test/upload", 3},
	} {
		probes := make([]Probe, 32)
		for i := range probes {
			probes[i] = Probe{Method: "POST", URL: v.url, HTTPVersion: v.version, Header: http.Header{"Content-Length": {"16777216"}}}
		}
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rep, err := Diff(LiveTarget(store), Target{DraftData: []byte(bodyDoc), Compiler: &c, Live: store}, probes)
				if err != nil || rep.Compared != len(probes) || len(rep.Changes) != 0 {
					b.Fatal(err, rep)
				}
			}
		})
	}
}

// BenchmarkRunProtocols is one simulation of a forwarded request against
// a live store over each transport: the whole listener stack, the
// handshake where there is one, net/http or quic-go and the gate.
func BenchmarkRunProtocols(b *testing.B) {
	store := publish(b, gatewayDoc, compilerFor(b))
	for _, v := range []struct {
		name    string
		probe   Probe
		outcome Kind
	}{
		{"http1", Probe{URL: "http://app.test/api"}, Forwarded},
		{"http1-tls", Probe{URL: "https://app.test/api"}, Forwarded},
		{"http2", Probe{URL: "https://app.test/api", HTTPVersion: 2}, Forwarded},
		{"http3", Probe{URL: "https://h3.test/", HTTPVersion: 3}, Forwarded},
		{"tls-refused", Probe{URL: "https://nobody.test/"}, TLSRefused},
	} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := Run(LiveTarget(store), v.probe)
				if err != nil || res.Outcome.Kind != v.outcome {
					b.Fatal(err, res)
				}
			}
		})
	}
}
