package admin_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/telemetry"
)

// POST /config/check answers a draft's problems without publishing it,
// and GET /requests the recent requests of a sample.
func Example_checkAndRecentRequests() {
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{})
	defer pub.Close()
	sample := simulate.NewSample(simulate.SampleConfig{Every: 1})
	sample.ObserveRequest(&telemetry.Record{Method: "GET", Host: "shop.example", Path: "/cart", Proto: "HTTP/1.1", Status: 502, Upstream: "shop"})
	h, err := admin.New(admin.Config{Publisher: pub, Recent: sample.Recent})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	res, err := srv.Client().Post(srv.URL+"/config/check", "application/yaml",
		strings.NewReader("hosts:\n  - names: [shop.example]\n    routes: [{path: /, upstream: shop}]\n"))
	if err != nil {
		panic(err)
	}
	var check admin.CheckResult
	json.NewDecoder(res.Body).Decode(&check)
	res.Body.Close()
	fmt.Println(res.StatusCode, "ok:", check.OK)
	for _, p := range check.Errors {
		fmt.Println(p.Code, p.Path)
	}

	res, err = srv.Client().Get(srv.URL + "/requests?status=5xx")
	if err != nil {
		panic(err)
	}
	var recent admin.RecentRequests
	json.NewDecoder(res.Body).Decode(&recent)
	res.Body.Close()
	for _, r := range recent.Requests {
		fmt.Println(r.Status, r.Method, r.Host, r.Path, r.Upstream)
	}
	_, cur := pub.Current()
	fmt.Println("published:", cur)
	// Output:
	// 200 ok: false
	// route.upstream.unknown hosts[0].routes[0].upstream
	// 502 GET shop.example /cart shop
	// published: false
}
