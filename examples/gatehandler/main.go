// Command gatehandler puts the request gate in front of a handler of one's
// own in a plain net/http server: the gate resolves the client, matches
// the host, runs a rule set and a rate limit, and hands what passes to the
// route's target, which is the program's own http.ServeMux.
//
//	go run ./examples/gatehandler -addr 127.0.0.1:8080
//	curl http://127.0.0.1:8080/            # 200, from the handler
//	curl http://127.0.0.1:8080/wp-login.php # 403, from the rule set
//	curl -H 'Host: other' http://127.0.0.1:8080/ # 404, no such host
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/paduraksa/paduraksa/gate"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on (port 0: any free port)")
	perMinute := flag.Int("rate", 60, "requests a client may make per minute")
	flag.Parse()

	// The embedder's own handler.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from your own handler")
	})
	mux.HandleFunc("GET /time", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, time.Now().UTC().Format(time.RFC3339))
	})

	// The gate's policies: built once, shared by every gate built with
	// the same State.
	state := new(gate.State)
	waf, err := gate.NewRuleSet(gate.RuleSetConfig{ID: "waf", Rules: []gate.Rule{
		{PathPrefix: "/wp-", Action: gate.RuleDeny},
		{PathPrefix: "/.git", Action: gate.RuleDeny},
	}})
	if err != nil {
		log.Fatal(err)
	}
	limit, err := state.RateLimit(gate.RateLimitConfig{ID: "per-client", Requests: *perMinute, Period: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	g, err := gate.New(gate.Config{State: state, Hosts: []gate.Host{{
		Names:    []string{"localhost", "127.0.0.1"},
		Policies: []gate.PolicyUse{{Policy: waf}, {Policy: limit}},
		Routes: []gate.Route{{ID: "app", Prefix: "/", Target: gate.TargetFunc(
			func(w http.ResponseWriter, r *http.Request, rq *gate.Request) { mux.ServeHTTP(w, r) },
		)}},
	}}})
	if err != nil {
		log.Fatal(err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	srv := &http.Server{
		Handler:           g,
		ConnContext:       gate.ConnContext, // the peer, recorded once per connection
		ReadHeaderTimeout: 10 * time.Second,
	}
	log.Fatal(srv.Serve(ln))
}
