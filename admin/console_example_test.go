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

// A browser's way in: the login answers a session cookie and a CSRF
// token; the cookie authenticates reads, and a state change without the
// CSRF token is refused.
func ExampleHandler_console() {
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: new(snapshot.Store)})
	defer pub.Close()
	h, err := admin.New(admin.Config{Publisher: pub, Token: "s3cret"})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	do := func(method, path, body string, hdr ...string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			panic(err)
		}
		return res
	}

	res := do("GET", "/console/", "")
	res.Body.Close()
	fmt.Println("page:", res.StatusCode, res.Header.Get("Content-Type"))

	res = do("POST", "/console/login", `{"token": "s3cret"}`, "Content-Type", "application/json")
	var s admin.Session
	json.NewDecoder(res.Body).Decode(&s)
	res.Body.Close()
	c := res.Cookies()[0]
	fmt.Println("login:", res.StatusCode, strings.HasPrefix(c.Name, admin.SessionCookie+"_"), "HttpOnly", c.HttpOnly, "SameSite=Strict", c.SameSite == http.SameSiteStrictMode)
	cookie := c.Name + "=" + c.Value

	res = do("GET", "/revisions", "", "Cookie", cookie)
	res.Body.Close()
	fmt.Println("read with the cookie:", res.StatusCode)

	doc := "hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200}\n"
	res = do("PUT", "/config", doc, "Cookie", cookie)
	var e admin.ErrorBody
	json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	fmt.Println("push without the CSRF token:", res.StatusCode, e.Error.Code)

	res = do("PUT", "/config", doc, "Cookie", cookie, admin.CSRFHeader, s.CSRF)
	var p admin.PushResult
	json.NewDecoder(res.Body).Decode(&p)
	res.Body.Close()
	fmt.Println("push with it:", res.StatusCode, p.Status)
	// Output:
	// page: 200 text/html; charset=utf-8
	// login: 200 true HttpOnly true SameSite=Strict true
	// read with the cookie: 200
	// push without the CSRF token: 403 admin.csrf.missing
	// push with it: 200 applied
}
