package snapshot

import (
	"context"
	"fmt"
	"testing"

	"github.com/paduraksa/paduraksa/config"
)

// BenchmarkPublish measures one publish of a document with one route
// changed (validate, canonical form, compile, reconcile, swap), and of an
// identical document (noop), at several fleet sizes.
func BenchmarkPublish(b *testing.B) {
	be := &backend{name: "x", addr: "127.0.0.1:9"} // never contacted
	for _, n := range []int{100, 500, 2000} {
		base := fleet(n, be)
		alt := clone(base)
		alt.Hosts[n/2].Routes[0].Upstream = "u0"
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) { benchAlternate(b, base, alt) })
		b.Run(fmt.Sprintf("hosts=%d/noop", n), func(b *testing.B) {
			_, pub := newPublisher(b)
			ctx := context.Background()
			if _, err := pub.Apply(ctx, base); err != nil {
				b.Fatal(err)
			}
			same := clone(base)
			b.ReportAllocs()
			for b.Loop() {
				o, err := pub.Apply(ctx, same)
				if err != nil || o.Status != Unchanged {
					b.Fatal(o.Status, err)
				}
			}
		})
	}
}

// BenchmarkPublishTLS measures a publish as the suite's churn makes them:
// every host served with a default certificate from files, one host
// renamed each time, so that the TLS table is built again.
func BenchmarkPublishTLS(b *testing.B) {
	be := &backend{name: "x", addr: "127.0.0.1:9"} // never contacted
	for _, n := range []int{500, 2000} {
		base := fleet(n, be)
		base.Global.TLS.DefaultCertificate = "main"
		base.Certificates = []config.Certificate{{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"}}
		alt := clone(base)
		alt.Hosts[n/2].Names = []string{"renamed.test"}
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) { benchAlternate(b, base, alt) })
	}
}

// benchAlternate applies base, then alt and base in turn, each applied.
func benchAlternate(b *testing.B, base, alt *config.Document) {
	_, pub := newPublisher(b)
	ctx := context.Background()
	docs := [2]*config.Document{base, alt}
	if _, err := pub.Apply(ctx, base); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		o, err := pub.Apply(ctx, docs[i%2])
		if err != nil || o.Status != Applied {
			b.Fatal(o.Status, err)
		}
	}
}
