package snapshot_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/snapshot"
)

// A gateway inside your own server: decode a document, publish it, serve
// the store. Every request reads one snapshot.
func Example() {
	// A loopback upstream that names itself.
	up, _ := net.Listen("tcp", "127.0.0.1:0")
	go http.Serve(up, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s %s", r.Host, r.URL.Path)
	}))
	defer up.Close()

	doc, err := config.Decode([]byte(`
hosts:
  - names: [app.example]
    routes:
      - path: /api
        upstream: api
upstreams:
  - id: api
    destinations:
      - id: one
        address: http://` + up.Addr().String() + `
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	outcome, err := pub.Apply(context.Background(), doc)
	fmt.Println(outcome.Status, err)

	gw, _ := net.Listen("tcp", "127.0.0.1:0")
	go http.Serve(gw, store)
	defer gw.Close()

	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "http://"+gw.Addr().String()+"/api/users", nil)
	req.Host = "app.example"
	res, err := client.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.StatusCode, string(body))
	// Output:
	// applied <nil>
	// 200 upstream saw app.example /api/users
}

// A refused document reports every problem with a stable code and a path,
// and the previous snapshot keeps serving.
func ExamplePublisher_Apply_refused() {
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	doc := &config.Document{
		Hosts: []config.Host{
			{Names: []string{"a.example"}, Routes: []config.Route{{Upstream: "missing"}}},
			{Names: []string{"A.example"}, Kind: "fixed", Fixed: &config.FixedAnswer{Status: 200}},
		},
	}
	outcome, _ := pub.Apply(context.Background(), doc)
	fmt.Println(outcome.Status)
	for _, e := range outcome.Errors {
		fmt.Println(e.Code, "at", e.Path)
	}
	fmt.Println(store.Load() == nil)
	// Output:
	// refused
	// route.upstream.unknown at hosts[0].routes[0].upstream
	// gate.host.name.duplicate at hosts[1].names[0]
	// true
}
