package snapshot

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/paduraksa/paduraksa/config"
	"sigs.k8s.io/yaml"
)

// fleetData returns the fleet of n hosts as a JSON or YAML document, and
// the same with one route changed.
func fleetData(b *testing.B, n int, format string) [2][]byte {
	b.Helper()
	be := &backend{name: "x", addr: "127.0.0.1:9"} // never contacted
	base := fleet(n, be)
	alt := clone(base)
	alt.Hosts[n/2].Routes[0].Upstream = "u0"
	var out [2][]byte
	for i, d := range []*config.Document{base, alt} {
		js, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			b.Fatal(err)
		}
		if format == "yaml" {
			if js, err = yaml.JSONToYAML(js); err != nil {
				b.Fatal(err)
			}
		}
		out[i] = js
	}
	return out
}

// BenchmarkApplyData measures an apply end to end: document bytes in (one
// route changed each time), the new snapshot serving.
func BenchmarkApplyData(b *testing.B) {
	for _, format := range []string{"json", "yaml"} {
		for _, n := range []int{100, 500, 2000} {
			data := fleetData(b, n, format)
			b.Run(fmt.Sprintf("%s/hosts=%d", format, n), func(b *testing.B) {
				store, pub := newPublisher(b)
				ctx := context.Background()
				if o, err := pub.PublishData(data[0]).Wait(ctx); err != nil || o.Status != Applied {
					b.Fatal(o.Status, err, o.Errors)
				}
				b.SetBytes(int64(len(data[0])))
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					o, err := pub.PublishData(data[i%2]).Wait(ctx)
					if err != nil || o.Status != Applied || store.Load().Revision() != o.Revision {
						b.Fatal(o.Status, err, o.Errors)
					}
				}
			})
		}
	}
}
