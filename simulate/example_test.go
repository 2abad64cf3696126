package simulate_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/telemetry"
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
	doc, _ := config.Decode([]byte(exampleDoc))
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
	// route: route admin (prefix /admin) matches the path view "/admin/users": no other route matches
	// policy: route policy 0 office (enforce): respond, address not allowed
	// answer: 403 address not allowed
}

// A draft is compiled as a publish would compile it, and never
// published: simulate before you apply.
func ExampleRun_draft() {
	doc, _ := config.Decode([]byte(exampleDoc))
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
	bad := &config.Document{Hosts: []config.Host{{Names: []string{"x.example"}, Routes: []config.Route{{Upstream: "nope"}}}}}
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
	doc, _ := config.Decode([]byte(exampleDoc))
	gw := simulate.NewTester(printT{}, simulate.DraftTarget(doc))

	// /admin from outside 10.0.0.0/8 gets 403; from inside it goes to v2.
	gw.Expect(simulate.Probe{URL: "http://app.example/admin", Peer: simulate.MustPeer("192.0.2.10")}, simulate.Want{Status: 403, Policy: "office"})
	gw.Expect(simulate.Probe{URL: "http://app.example/admin", Peer: simulate.MustPeer("10.1.2.3")}, simulate.Want{Upstream: "v1"})
	// app.example/v2 goes to upstream v2.
	gw.Expect(simulate.Probe{URL: "http://app.example/v2/users"}, simulate.Want{Upstream: "v2", Route: "v2"})
	// Output:
	// FAIL GET http://app.example/admin from 10.1.2.3: upstream "v2", want "v1"
	// outcome: forwarded to upstream v2 (hand-over: handed over to the route's target)
	//   route match: no other route matches
	//   header Server: Paduraksa
	//   header Alt-Svc absent: no HTTP/3
	//   header Strict-Transport-Security absent: off
	//   header X-Request-Id absent: the host passes the upstream's (requestId pass)
	// trace:
	//   1. connections: 10.1.2.3 admitted (the per-address cap counts live connections, which a simulation does not see)
	//   2. client: client 10.1.2.3 (the peer itself), scheme http
	//   3. host: "app.example" matched host app.example (exact)
	//   4. headers: Server: Paduraksa; Alt-Svc absent (no HTTP/3); Strict-Transport-Security absent (off)
	//   5. route: route admin (prefix /admin) matches the path view "/admin": no other route matches
	//   6. policy: route policy 0 office (enforce): continue, allowed
	//   7. hand-over: handed over to the target of route admin
	//   8. upstream: upstream v2: 0/1 destinations available; one http://127.0.0.1:9 unknown (a draft's destinations have no health until it is published)
}

// What would a draft change for recent traffic? The sample is what the
// gateway observed (here two requests recorded by hand); the diff lists
// each request whose decision changes, with both traces.
func ExampleDiff() {
	doc, _ := config.Decode([]byte(exampleDoc))
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	defer pub.Close()
	pub.Apply(context.Background(), doc)

	sample := simulate.NewSample(simulate.SampleConfig{Every: 1})
	for _, path := range []string{"/v2/orders", "/admin/users"} {
		sample.ObserveRequest(&telemetry.Record{Method: "GET", Host: "app.example", Path: path, Proto: "HTTP/1.1",
			Peer: netip.MustParseAddrPort("10.1.2.3:5000"), Client: netip.MustParseAddr("10.1.2.3")})
	}

	// The draft narrows the office list to 10.9.0.0/16.
	draft, _ := config.Decode([]byte(strings.Replace(exampleDoc, "10.0.0.0/8", "10.9.0.0/16", 1)))
	rep, _ := simulate.Diff(simulate.LiveTarget(store), simulate.Target{Draft: draft, Live: store}, sample.Probes())
	fmt.Println(rep.Summary())
	for _, c := range rep.Changes {
		fmt.Println(c.Probe.URL, c.Fields, c.Before.Outcome.Kind, "->", c.After.Outcome.Kind, c.After.Outcome.Status)
	}
	// Output:
	// what-if: 2 requests compared, 1 change (1 kind, 1 status, 1 upstream, 1 verdict)
	// http://app.example/admin/users [kind verdict upstream status] forwarded -> answered 403
}

// The simulator's HTTP API, as an admin listener mounts it.
func ExampleNewHandler() {
	doc, _ := config.Decode([]byte(exampleDoc))
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	defer pub.Close()
	pub.Apply(context.Background(), doc)

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	srv := &http.Server{Handler: simulate.NewHandler(simulate.HandlerConfig{Store: store})}
	go srv.Serve(ln)
	defer srv.Close()

	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	res, err := client.Post("http://"+ln.Addr().String()+"/simulate", "application/json",
		strings.NewReader(`{"probe": {"url": "http://app.example/admin", "peer": "192.0.2.7"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	var out simulate.Result
	json.NewDecoder(res.Body).Decode(&out)
	fmt.Println(res.StatusCode, out.Outcome.Kind, out.Outcome.Status, out.Outcome.Policy)
	// Output:
	// 200 answered 403 office
}

// A production document names certificate files a CI runner does not
// have. TestCertificates serves its certificates by self-signed ones for
// the names of its hosts, so its HTTPS is tested as it is: here a host
// that takes TLS 1.3 only.
func ExampleTarget_testCertificates() {
	doc := []byte(`
global: {tls: {defaultCertificate: main}}
certificates:
  - {id: main, certFile: /etc/paduraksa/example.pem, keyFile: /etc/paduraksa/example.key}
hosts:
  - names: [app.example]
    tls: {minVersion: "1.3"}
    routes: [{upstream: app}]
upstreams:
  - {id: app, destinations: [{id: a1, address: "http://10.0.0.1:8080"}]}
`)
	target := simulate.Target{DraftData: doc, TestCertificates: true}
	for _, version := range []uint16{tls.VersionTLS13, tls.VersionTLS12} {
		res, err := simulate.Run(target, simulate.Probe{URL: "https://app.example/", TLS: &simulate.TLS{Version: version}})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(tls.VersionName(version)+":", res.Outcome.Kind)
	}
	_, err := simulate.Run(simulate.Target{DraftData: doc}, simulate.Probe{URL: "https://app.example/"})
	fmt.Println(err)
	// Output:
	// TLS 1.3: forwarded
	// TLS 1.2: tlsRefused
	// simulate: the draft would be refused:
	// 	certificates[0].certFile: /etc/paduraksa/example.pem does not exist (tlsselect.certificate.file.missing)
	// 	certificates[0].keyFile: /etc/paduraksa/example.key does not exist (tlsselect.certificate.file.missing)
}
