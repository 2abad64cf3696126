package edge_test

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/paduraksa/paduraksa/edge"
)

func Example() {
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello over "+r.Proto) })
	srv, err := edge.Start(edge.Config{Handler: hello, HTTP: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())

	res, err := http.Get("http://" + srv.Addr("http").String() + "/")
	if err != nil {
		panic(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	fmt.Println(res.StatusCode, string(b))
	// Output:
	// 200 hello over HTTP/1.1
}
