package config_test

import (
	"fmt"

	"github.com/paduraksa/paduraksa/config"
)

// Decode reads YAML or JSON into the document's Go types and refuses,
// each at its path, what no document may hold; Check then does the
// document's own checks (IDs, references). Every problem comes at once.
func Example() {
	doc, err := config.Decode([]byte(`
hosts:
  - names: [app.example]
    routes:
      - path: /api
        upstream: api
        timout: 5s
upstreams:
  - id: api
    destinations:
      - {id: a1, address: "http://127.0.0.1:8081"}
`))
	for _, p := range config.Problems(err) {
		fmt.Println(p.Code, "at", p.Path)
	}
	fmt.Println(len(doc.Hosts), "host,", len(doc.Upstreams), "upstream")

	doc.Hosts[0].Routes[0].Upstream = "web"
	for _, p := range config.Check(doc) {
		fmt.Println(p.Code, "at", p.Path)
	}
	// Output:
	// document.field.unknown at hosts[0].routes[0].timout
	// 1 host, 1 upstream
	// route.upstream.unknown at hosts[0].routes[0].upstream
}

// Two spellings of one config have one canonical form: the publisher
// compares it to tell a change from a reload of the same config.
func ExampleCanonical() {
	yaml, err := config.Decode([]byte("hosts:\n  - names: [App.Example.]\n    routes: [{path: /api/, upstream: api}]\nupstreams:\n  - id: api\n    destinations: [{id: a, address: 'HTTP://127.0.0.1'}]\n"))
	if err != nil {
		panic(err)
	}
	json, err := config.Decode([]byte(`{"upstreams": [{"id": "api", "destinations": [{"id": "a", "address": "http://127.0.0.1:80"}]}],
		"hosts": [{"names": ["app.example"], "kind": "proxy", "routes": [{"path": "/api", "upstream": "api"}]}]}`))
	if err != nil {
		panic(err)
	}
	a, _ := config.Canonical(yaml)
	b, _ := config.Canonical(json)
	fmt.Println(string(a))
	fmt.Println(string(a) == string(b))
	// Output:
	// {"hosts":[{"names":["app.example"],"routes":[{"path":"/api","upstream":"api"}]}],"upstreams":[{"id":"api","destinations":[{"id":"a","address":"http://127.0.0.1:80"}]}]}
	// true
}
