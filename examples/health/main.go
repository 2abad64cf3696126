// Command health runs active health checks alone: a health.Monitor probes
// a cluster's destinations, and every change of a verdict is printed as
// it happens, with the destinations still available.
//
//	go run ./examples/health -interval 1s
//	demo/flaky active: unknown -> healthy (probe passed: 200)
//	...
//
// Without -targets it probes two demo backends of its own on loopback:
// steady, always healthy, and flaky, which fails its health path every
// other -flap period.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/upstream"
)

func main() {
	targets := flag.String("targets", "", "comma-separated host:port to probe (default: two demo backends)")
	path := flag.String("path", "/health", "path of the probes")
	interval := flag.Duration("interval", time.Second, "time between two probes of a destination")
	flap := flag.Duration("flap", 5*time.Second, "how long the demo's flaky backend stays up, then down")
	flag.Parse()

	var dests []upstream.DestinationConfig
	if *targets == "" {
		dests = []upstream.DestinationConfig{
			{ID: "steady", Scheme: "http", Host: demoBackend("steady", 0)},
			{ID: "flaky", Scheme: "http", Host: demoBackend("flaky", *flap)},
		}
	} else {
		for i, hp := range strings.Split(*targets, ",") {
			dests = append(dests, upstream.DestinationConfig{ID: fmt.Sprint("target-", i+1), Scheme: "http", Host: hp})
		}
	}
	cluster, err := upstream.NewCluster("demo", dests)
	if err != nil {
		log.Fatal(err)
	}

	m := health.New(health.Options{})
	defer m.Close()
	m.Subscribe(func(ch health.Change) {
		var up []string
		for _, d := range cluster.Members().Available {
			up = append(up, d.ID())
		}
		fmt.Printf("%s/%s %s: %v -> %v (%s); available: %s\n",
			ch.ClusterID, ch.DestinationID, ch.Check, ch.Old, ch.New, ch.Reason, strings.Join(up, " "))
	})
	err = m.Update(health.ClusterHealth{Cluster: cluster, Config: health.Config{
		Active: health.ActiveConfig{Enabled: true, Interval: *interval, Timeout: *interval, Path: *path},
		// A destination marked unhealthy is left out, unless all are.
		Availability: health.AvailabilityHealthyOrPanic,
	}})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for _, d := range cluster.Members().All {
		fmt.Printf("probing %s at http://%s%s every %v\n", d.ID(), d.Host(), *path, *interval)
	}
	if err := m.Start(ctx); err != nil {
		log.Fatal(err)
	}
	<-ctx.Done()
}

// demoBackend serves a health path on a loopback port of its own and
// returns its address. With flap set, it answers 200 for flap, then 503
// for flap, and so on; else always 200.
func demoBackend(name string, flap time.Duration) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if flap > 0 && (time.Since(start)/flap)%2 == 1 {
			http.Error(w, name+" is down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "%s is up\n", name)
	}))
	return ln.Addr().String()
}
