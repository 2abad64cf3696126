package admin_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/snapshot"
)

// An embedder with a registry of its own registers the gateway's
// collector in it beside its own metrics.
func ExampleMetrics_registry() {
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	defer pub.Close()
	pub.PublishData([]byte(`
hosts:
  - names: [app.example]
    kind: fixed
    fixed: {status: 200, body: "ok\n"}
`))
	pub.Flush()

	reg := prometheus.NewRegistry()
	reg.MustRegister(admin.NewMetrics(admin.MetricsConfig{Store: store}))

	front := httptest.NewServer(store)
	defer front.Close()
	req, _ := http.NewRequest("GET", front.URL+"/", nil)
	req.Host = "app.example"
	res, _ := front.Client().Do(req)
	res.Body.Close()

	w := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, _ := parser.TextToMetricFamilies(strings.NewReader(w.Body.String()))
	for _, m := range fams["paduraksa_requests_total"].Metric {
		l := m.Label // sorted by name: code, host, route
		fmt.Println(l[1].GetValue(), l[2].GetValue(), l[0].GetValue(), m.Counter.GetValue())
	}
	// Output:
	// app.example (none) 200 1
}
