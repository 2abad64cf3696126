package config

import (
	"encoding/json"
	"fmt"
	"testing"

	"sigs.k8s.io/yaml"
)

// fleetData returns the fleet of n hosts as a JSON or YAML document, as
// package snapshot's BenchmarkApplyData publishes it.
func fleetData(b *testing.B, n int, format string) []byte {
	b.Helper()
	js, err := json.MarshalIndent(fleet(n), "", "  ")
	if err != nil {
		b.Fatal(err)
	}
	if format == "yaml" {
		if js, err = yaml.JSONToYAML(js); err != nil {
			b.Fatal(err)
		}
	}
	return js
}

// BenchmarkDecode measures Decode alone, the part of an apply before the
// publish, on the fast path (what Decode does with these documents) and
// on the general path alone (what it would cost without the fast one).
func BenchmarkDecode(b *testing.B) {
	for _, format := range []string{"json", "yaml"} {
		for _, n := range []int{100, 500, 2000} {
			data := fleetData(b, n, format)
			for _, path := range []struct {
				name   string
				decode func([]byte) (*Document, error)
			}{{"fast", decoder.Decode}, {"general", decoder.DecodeGeneral}} {
				b.Run(fmt.Sprintf("%s/hosts=%d/%s", format, n, path.name), func(b *testing.B) {
					if _, ok := decoder.DecodeFast(data); !ok {
						b.Fatal("the fast path gives up on the benchmark's document")
					}
					b.SetBytes(int64(len(data)))
					b.ReportAllocs()
					for b.Loop() {
						if _, err := path.decode(data); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
