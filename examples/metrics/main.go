// Command metrics registers the gateway's metrics in a Prometheus
// registry of one's own, beside the program's own metrics:
// admin.NewMetrics is a prometheus.Collector over the gateway's lock-free
// counters (requests by host, route and status, publishes, connections).
//
//	go run ./examples/metrics -addr 127.0.0.1:8080 -metrics 127.0.0.1:9090
//	curl http://127.0.0.1:8080/
//	curl -s http://127.0.0.1:9090/metrics | grep -E '^(myapp|paduraksa_requests)'
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/snapshot"
)

const document = `
hosts:
  - names: [localhost, 127.0.0.1]
    kind: fixed
    fixed: {status: 200, body: "hello, counted\n"}
`

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address of the gateway (port 0: any free port)")
	metricsAddr := flag.String("metrics", "127.0.0.1:9090", "address of /metrics (port 0: any free port)")
	flag.Parse()

	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	defer pub.Close()
	if o, err := pub.PublishData([]byte(document)).Wait(context.Background()); err != nil || o.Status != snapshot.Applied {
		log.Fatal("document: ", o.Status, o.Errors, err)
	}
	srv, err := edge.Start(edge.Config{Handler: store, HTTP: *addr})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	// One's own registry: the program's metrics, the Go runtime's, and
	// the gateway's collector.
	reg := prometheus.NewRegistry()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "myapp_build_info", Help: "The program's version.", ConstLabels: prometheus.Labels{"version": "dev"},
	})
	info.Set(1)
	reg.MustRegister(info, collectors.NewGoCollector())
	reg.MustRegister(admin.NewMetrics(admin.MetricsConfig{Store: store, Publisher: pub, Edge: srv}))

	ln, err := net.Listen("tcp", *metricsAddr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s\n", srv.Addr(edge.ListenerHTTP))
	fmt.Printf("metrics on http://%s/metrics\n", ln.Addr())
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	log.Fatal(http.Serve(ln, mux))
}
