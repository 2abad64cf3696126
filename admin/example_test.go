package admin_test

import (
	"encoding/json"
	"fmt"
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
