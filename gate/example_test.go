package gate_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/paduraksa/paduraksa/gate"
)

func Example() {
	hello := gate.TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *gate.Request) {
		fmt.Fprintf(w, "hello %s via %s on %s\n", rq.Client, rq.Route.ID, rq.Path)
	})
	g, err := gate.New(gate.Config{Hosts: []gate.Host{{
		Names:  []string{"example.com"},
		Routes: []gate.Route{{ID: "app", Prefix: "/", Target: hello}},
	}}})
	if err != nil {
		panic(err)
	}
	for _, target := range []string{"/x", "/API;v=2/%7Eann", "/a/../secret"} {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		r.Host = "Example.COM:8080"
		r.RemoteAddr = "192.0.2.7:51000"
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		fmt.Print(w.Code, " ", w.Body.String())
	}
	// Output:
	// 200 hello 192.0.2.7 via app on /x
	// 200 hello 192.0.2.7 via app on /API/~ann
	// 400 400 Bad Request
}

func ExampleRateLimit() {
	state := new(gate.State)
	limit, err := state.RateLimit(gate.RateLimitConfig{ID: "api", Requests: 2, Period: time.Minute, Scope: gate.RateLimitShared})
	if err != nil {
		panic(err)
	}
	ok := gate.TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *gate.Request) {})
	g, err := gate.New(gate.Config{State: state, Hosts: []gate.Host{{
		Names:    []string{"api.example"},
		Policies: []gate.PolicyUse{{Policy: limit}},
		Routes:   []gate.Route{{Prefix: "/", Target: ok}},
	}}})
	if err != nil {
		panic(err)
	}
	for range 3 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host, r.RemoteAddr = "api.example", "198.51.100.1:4000"
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		fmt.Printf("%d retry-after=%q\n", w.Code, w.Header().Get("Retry-After"))
	}
	// Output:
	// 200 retry-after=""
	// 200 retry-after=""
	// 429 retry-after="30"
}

func ExampleGate_Simulate() {
	office, _ := gate.NewAccessList(gate.AccessListConfig{ID: "office-only", Allow: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
	rules, _ := gate.NewRuleSet(gate.RuleSetConfig{ID: "waf", Rules: []gate.Rule{{PathPrefix: "/wp-"}}})
	g, _ := gate.New(gate.Config{Hosts: []gate.Host{{
		Names:    []string{"example.com"},
		Policies: []gate.PolicyUse{{Policy: office}, {Policy: rules}},
		Routes:   []gate.Route{{Prefix: "/", Target: gate.TargetFunc(func(http.ResponseWriter, *http.Request, *gate.Request) {})}},
	}}})
	tr := &gate.Tracer{OnStep: func(s gate.Step) {
		switch s.Kind {
		case gate.StepPolicy:
			fmt.Println(s.Kind, s.Scope, s.Index, s.Name, s.Verdict, s.Reason)
		case gate.StepAnswer:
			fmt.Println(s.Kind, s.Status, s.Reason)
		}
	}}
	r := httptest.NewRequest(http.MethodGet, "/wp-login.php", nil)
	r.Host = "example.com"
	g.Simulate(httptest.NewRecorder(), r, tr)
	// Output:
	// policy host 0 office-only continue allowed
	// policy host 1 waf respond rule 0: deny
	// answer 403 rule 0: deny
}

// The gate in front of a handler of one's own, in a real net/http
// server: gate.ConnContext records each connection's peer once, the
// host's rule set refuses what it must, and the route hands everything
// else to the embedder's mux.
func Example_server() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the mux\n") })
	rules, err := gate.NewRuleSet(gate.RuleSetConfig{ID: "waf", Rules: []gate.Rule{{PathPrefix: "/wp-"}}})
	if err != nil {
		panic(err)
	}
	g, err := gate.New(gate.Config{Hosts: []gate.Host{{
		Names:    []string{"app.example"},
		Policies: []gate.PolicyUse{{Policy: rules}},
		Routes: []gate.Route{{ID: "app", Prefix: "/", Target: gate.TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *gate.Request) {
			w.Header().Set("X-Client", rq.Client.String()) // the gate's reading of the client
			mux.ServeHTTP(w, r)
		})}},
	}}})
	if err != nil {
		panic(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv := &http.Server{Handler: g, ConnContext: gate.ConnContext, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()

	client := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	for _, c := range []struct{ host, path string }{{"app.example", "/hello"}, {"app.example", "/wp-login.php"}, {"other.example", "/hello"}} {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+c.path, nil)
		req.Host = c.host
		res, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		fmt.Printf("%s%s: %d %q %s", c.host, c.path, res.StatusCode, res.Header.Get("X-Client"), b)
	}
	// Output:
	// app.example/hello: 200 "127.0.0.1" hello from the mux
	// app.example/wp-login.php: 403 "" 403 Forbidden
	// other.example/hello: 404 "" not found
}
