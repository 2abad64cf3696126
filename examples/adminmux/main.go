// Command adminmux mounts the gateway's admin API under a prefix of one's
// own http.ServeMux, beside the program's own handlers and the gateway's
// traffic: a document pushed to PREFIX/config serves at once.
//
//	go run ./examples/adminmux -addr 127.0.0.1:8080
//	curl http://127.0.0.1:8080/                 # hello, from the first document
//	curl -X PUT --data-binary @new.yaml http://127.0.0.1:8080/admin/config
//	curl http://127.0.0.1:8080/admin/revisions
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/snapshot"
)

const document = `
hosts:
  - names: [localhost, 127.0.0.1]
    kind: fixed
    fixed: {status: 200, body: "hello, from the first document\n"}
`

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on (port 0: any free port)")
	prefix := flag.String("prefix", "/admin", "path the admin API is mounted under")
	token := flag.String("token", "", "bearer token the admin API asks for (default: none)")
	flag.Parse()

	store := new(snapshot.Store)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: store})
	defer pub.Close()
	if o, err := pub.PublishData([]byte(document)).Wait(context.Background()); err != nil || o.Status != snapshot.Applied {
		log.Fatal("document: ", o.Status, o.Errors, err)
	}
	api, err := admin.New(admin.Config{Publisher: pub, Token: *token})
	if err != nil {
		log.Fatal(err)
	}

	p := "/" + strings.Trim(*prefix, "/")
	mux := http.NewServeMux()
	mux.Handle(p+"/", http.StripPrefix(p, api)) // PREFIX/config, PREFIX/revisions, PREFIX/health, ...
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "myapp dev") // one of the program's own
	})
	mux.Handle("/", store) // everything else is the gateway's traffic

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on http://%s (admin API under %s/)\n", ln.Addr(), p)
	srv := &http.Server{Handler: mux, ConnContext: gate.ConnContext, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}
