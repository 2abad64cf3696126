package config

import "fmt"

// fleet builds a document of n hosts h<i>.test, each with one route to its
// own upstream u<i> of two destinations (the benchmarks' document, as
// package snapshot's tests build it).
func fleet(n int) *Document {
	doc := &Document{}
	for i := range n {
		doc.Hosts = append(doc.Hosts, Host{
			Names:  []string{fmt.Sprintf("h%d.test", i)},
			Routes: []Route{{ID: "r", Path: "/", Upstream: fmt.Sprintf("u%d", i)}},
		})
		u := Upstream{ID: fmt.Sprintf("u%d", i)}
		for j := range 2 {
			u.Destinations = append(u.Destinations, Destination{ID: fmt.Sprintf("d%d", j), Address: "http://127.0.0.1:9"})
		}
		doc.Upstreams = append(doc.Upstreams, u)
	}
	return doc
}
