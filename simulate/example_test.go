package simulate_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
)

const exampleDoc = `
accessLists:
  - id: office
    allow: [10.0.0.0/8]
hosts:
  - names: [app.example]
    routes:
      - id: v2
        path: /v2
        upstream: v2
      - id: admin
        path: /admin
        upstream: v2
        policies: [office]
upstreams:
  - id: v2
    destinations:
      - id: one
        address: http://127.0.0.1:9
`

// Ask the live gateway what a request would get, and why.
func ExampleRun() {
	doc, _ := snapshot.Decode([]byte(exampleDoc))
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	defer pub.Close()
	pub.Apply(context.Background(), doc)

	res, err := simulate.Run(simulate.LiveTarget(store), simulate.Probe{URL: "http://app.example/admin/users"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Outcome.Kind, res.Outcome.Status, "by", res.Outcome.Policy)
	for _, st := range res.Trace {
		fmt.Println(st)
	}
	// Output:
	// answered 403 by office
	// connections: 192.0.2.10 admitted (the per-address cap counts live connections, which a simulation does not see)
	// client: client 192.0.2.10 (the peer itself), scheme http
	// host: "app.example" matched host app.example (exact)
	// headers: Server: Paduraksa; Alt-Svc absent (no HTTP/3); Strict-Transport-Security absent (off)
	// route: route admin (prefix /admin) matches the path view "/admin/users"
	// policy: route policy 0 office (enforce): respond, address not allowed
	// answer: 403 address not allowed
}

// A draft is compiled as a publish would compile it, and never
// published: simulate before you apply.
func ExampleRun_draft() {
	doc, _ := snapshot.Decode([]byte(exampleDoc))
	res, _ := simulate.Run(simulate.DraftTarget(doc), simulate.Probe{
		Method: http.MethodPost,
		URL:    "http://app.example/v2/orders",
	})
	u := res.Outcome.Upstream
	fmt.Println(res.Outcome.Kind, "to", u.ID, "route", res.Outcome.Route)
	for _, d := range u.Destinations {
		fmt.Println(d.ID, d.Address, d.Health)
	}

	// A draft a publish would refuse is refused with every problem.
	bad := &snapshot.Document{Hosts: []snapshot.Host{{Names: []string{"x.example"}, Routes: []snapshot.Route{{Upstream: "nope"}}}}}
	_, err := simulate.Run(simulate.DraftTarget(bad), simulate.Probe{URL: "http://x.example/"})
	var refused *simulate.DraftRefused
	if errors.As(err, &refused) {
		for _, p := range refused.Errors {
			fmt.Println(p.Code, "at", p.Path)
		}
	}
	// Output:
	// forwarded to v2 route v2
	// one http://127.0.0.1:9 unknown
	// route.upstream.unknown at hosts[0].routes[0].upstream
}

// printT stands in for *testing.T in this example: it prints what a
// failing case reports.
type printT struct{}

func (printT) Helper()                           {}
func (printT) Errorf(format string, args ...any) { fmt.Printf("FAIL "+format+"\n", args...) }
func (printT) Fatalf(format string, args ...any) { fmt.Printf("FATAL "+format+"\n", args...) }

// Test your own config with go test: one call per case. In a test, pass
// the *testing.T; a failing case reports what the request got instead,
// with the trace (here the second case, whose upstream is wrong on
// purpose).
func ExampleTester() {
	doc, _ := snapshot.Decode([]byte(exampleDoc))
	gw := simulate.NewTester(printT{}, simulate.DraftTarget(doc))

	// /admin from outside 10.0.0.0/8 gets 403; from inside it goes to v2.
	gw.Expect(simulate.Probe{URL: "http://app.example/admin", Peer: simulate.MustPeer("192.0.2.10")}, simulate.Want{Status: 403, Policy: "office"})
	gw.Expect(simulate.Probe{URL: "http://app.example/admin", Peer: simulate.MustPeer("10.1.2.3")}, simulate.Want{Upstream: "v1"})
	// app.example/v2 goes to upstream v2.
	gw.Expect(simulate.Probe{URL: "http://app.example/v2/users"}, simulate.Want{Upstream: "v2", Route: "v2"})
	// Output:
	// FAIL GET http://app.example/admin from 10.1.2.3: upstream "v2", want "v1"
	// outcome: forwarded to upstream v2 (hand-over: handed over to the route's target)
	//   header Server: Paduraksa
	//   header Alt-Svc absent: no HTTP/3
	//   header Strict-Transport-Security absent: off
	//   header X-Request-Id absent: the host passes the upstream's (requestId pass)
	// trace:
	//   1. connections: 10.1.2.3 admitted (the per-address cap counts live connections, which a simulation does not see)
	//   2. client: client 10.1.2.3 (the peer itself), scheme http
	//   3. host: "app.example" matched host app.example (exact)
	//   4. headers: Server: Paduraksa; Alt-Svc absent (no HTTP/3); Strict-Transport-Security absent (off)
	//   5. route: route admin (prefix /admin) matches the path view "/admin"
	//   6. policy: route policy 0 office (enforce): continue, allowed
	//   7. hand-over: handed over to the target of route admin
	//   8. upstream: upstream v2: 0/1 destinations available; one http://127.0.0.1:9 unknown (a draft's destinations have no health until it is published)
}
