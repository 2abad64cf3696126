package admin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/snapshot"
)

func Example() {
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	defer pub.Close()
	h, err := admin.New(admin.Config{Publisher: pub, Token: "s3cret"})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	client := srv.Client()

	push := func(doc, ifMatch string) {
		req, _ := http.NewRequest("PUT", srv.URL+"/config", strings.NewReader(doc))
		req.Header.Set("Authorization", "Bearer s3cret")
		if ifMatch != "" {
			req.Header.Set("If-Match", ifMatch)
		}
		res, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		var out admin.PushResult
		json.NewDecoder(res.Body).Decode(&out)
		fmt.Println(res.StatusCode, out.Status, "revision", out.Revision, "serving", out.Serving)
		for _, p := range out.Errors {
			fmt.Println("  ", strings.TrimSpace(p.Code+" "+p.Path))
		}
	}
	push("hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200, body: ok}\n", "")
	push("hosts:\n  - names: [app.test]\n    routes: [{upstream: missing}]\n", "")
	push("hosts: []\n", `"7"`)

	res, err := client.Get(srv.URL + "/healthz")
	if err != nil {
		panic(err)
	}
	res.Body.Close()
	fmt.Println("without the token:", res.StatusCode, res.Header.Get("WWW-Authenticate"))
	// Output:
	// 200 applied revision 1 serving 1
	// 422 refused revision 2 serving 1
	//    route.upstream.unknown hosts[0].routes[0].upstream
	// 412 stale revision 3 serving 1
	//    admin.revision.stale
	// without the token: 401 Bearer realm="paduraksa admin"
}

// The API under a prefix of one's own mux, beside one's own handlers:
// http.StripPrefix hands it the paths it knows (/config, /healthz, ...).
func ExampleNew_prefix() {
	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	defer pub.Close()
	// On the traffic's own listener, the API needs its token: without
	// one it serves only requests addressed to a loopback name.
	api, err := admin.New(admin.Config{Publisher: pub, Token: "s3cret"})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/gateway/", http.StripPrefix("/ops/gateway", api))
	mux.Handle("/", store) // the traffic
	srv := httptest.NewServer(mux)
	defer srv.Close()

	do := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Host = "app.test"
		if strings.HasPrefix(path, "/ops/") {
			req.Header.Set("Authorization", "Bearer s3cret")
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	var ready admin.Healthz
	code, b := do("GET", "/ops/gateway/healthz", "")
	json.Unmarshal(b, &ready)
	fmt.Println("healthz:", code, ready.Status)

	var push admin.PushResult
	code, b = do("PUT", "/ops/gateway/config", "hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200, body: hello}\n")
	json.Unmarshal(b, &push)
	fmt.Println("push:", code, push.Status, "revision", push.Revision)

	code, b = do("GET", "/", "")
	fmt.Println("traffic:", code, string(b))
	// Output:
	// healthz: 503 starting
	// push: 200 applied revision 1
	// traffic: 200 hello
}
