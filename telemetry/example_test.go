package telemetry_test

import (
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"time"

	"github.com/paduraksa/paduraksa/telemetry"
)

// The access log writes one record per request off the request's
// goroutine, in whatever format its slog handler writes: JSON here, with
// the time left out to keep the output stable.
func ExampleAccessLog() {
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	log := telemetry.NewAccessLog(telemetry.AccessLogConfig{
		Logger: slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime})),
	})
	log.ObserveRequest(&telemetry.Record{
		Start: time.Now(), Duration: 1500 * time.Microsecond,
		Peer:   netip.MustParseAddrPort("192.0.2.7:51000"),
		Method: "GET", Host: "app.example", Path: "/api/users", Proto: "HTTP/1.1",
		Status: 200, BytesOut: 42, RouteID: "api", Upstream: "api", Destination: "api-1",
	})
	log.Close() // writes what is queued
	fmt.Printf("%+v\n", log.Stats())
	// Output:
	// {"level":"INFO","msg":"request","client":"192.0.2.7","method":"GET","host":"app.example","path":"/api/users","proto":"HTTP/1.1","status":200,"bytesIn":0,"bytesOut":42,"duration":0.0015,"route":"api","upstream":"api","destination":"api-1"}
	// {Written:1 Dropped:0 SampledOut:0}
}

// Counters, status codes and histograms are atomics on long-lived
// values: their zero value is ready, an update allocates nothing, and a
// scrape reads them.
func ExampleHistogram() {
	var latency telemetry.Histogram
	var codes telemetry.Codes
	for _, d := range []time.Duration{80 * time.Microsecond, 2 * time.Millisecond, 3 * time.Second} {
		latency.Observe(d)
	}
	codes.Inc(200)
	codes.Inc(200)
	codes.Inc(418)

	v := latency.Load()
	for _, i := range []int{0, 4, 14} { // three of the cumulative buckets
		fmt.Printf("le=%v: %d\n", telemetry.Bounds[i], v.Buckets[i])
	}
	fmt.Println("count", v.Count(), "sum", v.Sum)
	fmt.Println("200:", codes.Load(200), "418:", codes.Load(418))
	// Output:
	// le=0.0001: 1
	// le=0.0025: 2
	// le=5: 3
	// count 3 sum 3.00208s
	// 200: 2 418: 1
}
