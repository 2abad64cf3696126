package proxy_test

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// A gate with one host whose /api route strips its prefix and forwards to
// a loopback upstream.
func Example() {
	up, _ := net.Listen("tcp", "127.0.0.1:0")
	defer up.Close()
	go http.Serve(up, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream saw %s, prefix %s, client %s\n", r.URL.Path, r.Header.Get("X-Forwarded-Prefix"), r.Header.Get("X-Forwarded-For"))
	}))

	var reg upstream.Registry
	reg.Plan([]upstream.ClusterConfig{{ID: "api", Destinations: []upstream.DestinationConfig{
		{ID: "one", Scheme: "http", Host: up.Addr().String()},
	}}}).Commit()
	route, err := proxy.NewRoute(proxy.RouteConfig{
		Cluster: &proxy.Cluster{Upstream: reg.Cluster("api"), Transport: proxy.NewTransport(proxy.ClientConfig{})},
		Rewrite: proxy.Rewrite{StripPrefix: "/api"},
	})
	if err != nil {
		panic(err)
	}
	g, err := gate.New(gate.Config{Hosts: []gate.Host{{
		Names:  []string{"app.example"},
		Routes: []gate.Route{{Prefix: "/api", Target: route}},
	}}})
	if err != nil {
		panic(err)
	}
	front, _ := net.Listen("tcp", "127.0.0.1:0")
	defer front.Close()
	go http.Serve(front, g)

	req, _ := http.NewRequest("GET", "http://"+front.Addr().String()+"/api/users", nil)
	req.Host = "app.example"
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	res, err := client.Do(req)
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	fmt.Print(res.Status, " ", res.Header.Get("Server"), ": ", string(body))
	// Output: 200 OK Paduraksa: upstream saw /users, prefix /api, client 127.0.0.1
}

// A hand-built gateway gets health from real traffic by making a
// health.Monitor the cluster's Observer: a destination that refuses a
// connection leaves the rotation at once, and the request that found it
// refusing is sent to another destination, as every request that never
// left is.
func ExampleCluster_passiveHealth() {
	up, _ := net.Listen("tcp", "127.0.0.1:0")
	defer up.Close()
	go http.Serve(up, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "b") }))

	var reg upstream.Registry
	reg.Plan([]upstream.ClusterConfig{{ID: "api", Destinations: []upstream.DestinationConfig{
		{ID: "a", Scheme: "http", Host: "127.0.0.1:0"}, // port 0: every connect fails
		{ID: "b", Scheme: "http", Host: up.Addr().String()},
	}}}).Commit()
	monitor := health.New(health.Options{})
	defer monitor.Close()
	err := monitor.Update(health.ClusterHealth{Cluster: reg.Cluster("api"), Config: health.Config{
		Passive: health.PassiveConfig{Enabled: true},
	}})
	if err != nil {
		panic(err)
	}
	route, err := proxy.NewRoute(proxy.RouteConfig{Cluster: &proxy.Cluster{
		Upstream:  reg.Cluster("api"),
		Transport: proxy.NewTransport(proxy.ClientConfig{}),
		Policy:    balance.FirstAlphabetical{}, // "a" while it is available
		Observer:  monitor,
	}})
	if err != nil {
		panic(err)
	}
	g, err := gate.New(gate.Config{Hosts: []gate.Host{{
		Names:  []string{"app.example"},
		Routes: []gate.Route{{Prefix: "/", Target: route}},
	}}})
	if err != nil {
		panic(err)
	}
	front, _ := net.Listen("tcp", "127.0.0.1:0")
	defer front.Close()
	go http.Serve(front, g)

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	get := func() (int, string) {
		req, _ := http.NewRequest("GET", "http://"+front.Addr().String()+"/", nil)
		req.Host = "app.example"
		res, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	var first []int
	for range health.DefaultMinRequests {
		status, _ := get()
		first = append(first, status)
	}
	fmt.Println("first ten:", first)
	for _, d := range reg.Cluster("api").Members().Available {
		fmt.Println("available:", d.ID())
	}
	status, body := get()
	fmt.Println("then:", status, body)
	// Output:
	// first ten: [200 200 200 200 200 200 200 200 200 200]
	// available: b
	// then: 200 b
}
