// Command balance load-balances over backends of one's own, without a
// gateway: a cluster of their addresses (upstream.NewCluster), a policy
// by name, and Pick, Begin and End around each call the program makes
// with its own http.Client. Each request to -addr is sent to the backend
// the policy picks, and answered with what that backend said.
//
//	go run ./examples/balance -addr 127.0.0.1:8080
//	curl http://127.0.0.1:8080/   # blue: hello from blue
//	curl http://127.0.0.1:8080/   # green: hello from green
//
// Without -backends it starts three demo backends of its own on loopback.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/upstream"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on (port 0: any free port)")
	policy := flag.String("policy", balance.PolicyRoundRobin, "balancing policy: "+strings.Join(balance.PolicyNames(), ", "))
	backends := flag.String("backends", "", "comma-separated host:port of the backends (default: three demo backends)")
	flag.Parse()

	var dests []upstream.DestinationConfig
	if *backends == "" {
		for _, name := range []string{"blue", "green", "red"} {
			dests = append(dests, upstream.DestinationConfig{ID: name, Scheme: "http", Host: demoBackend(name)})
		}
	} else {
		for i, hp := range strings.Split(*backends, ",") {
			dests = append(dests, upstream.DestinationConfig{ID: fmt.Sprint("backend-", i+1), Scheme: "http", Host: hp})
		}
	}
	cluster, err := upstream.NewCluster("mine", dests)
	if err != nil {
		log.Fatal(err)
	}
	var policies balance.Policies
	pick, err := policies.New(balance.Config{Policy: *policy})
	if err != nil {
		log.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s (%s over %d backends)\n", ln.Addr(), *policy, len(dests))
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := pick.Pick(balance.Input{Request: r}, cluster.Members().Available)
		if d == nil {
			http.Error(w, "no backend available", http.StatusServiceUnavailable)
			return
		}
		d.Begin() // the in-flight count, which PowerOfTwoChoices and LeastRequests read
		defer d.End()
		res, err := client.Get(d.Scheme() + "://" + d.Host() + r.URL.Path)
		if err != nil {
			http.Error(w, d.ID()+": "+err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.WriteHeader(res.StatusCode)
		fmt.Fprintf(w, "%s: ", d.ID())
		io.Copy(w, res.Body)
	})))
}

// demoBackend serves "hello from NAME" on a loopback port of its own and
// returns its address.
func demoBackend(name string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", name)
	}))
	return ln.Addr().String()
}
