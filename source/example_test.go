package source_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
)

func Example() {
	dir, err := os.MkdirTemp("", "source-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "paduraksa.yaml")
	doc := func(body string) []byte {
		return []byte("hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200, body: " + body + "}\n")
	}
	if err := os.WriteFile(path, doc("one"), 0o644); err != nil {
		panic(err)
	}

	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: new(snapshot.Store)})
	defer pub.Close()
	file, err := source.NewFile(source.FileConfig{Path: path, Period: source.NoPolling})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// At start: the file's document, or no start at all.
	first, err := file.Load(ctx)
	if err != nil {
		panic(err)
	}
	o, err := source.To(pub)(ctx, first)
	if err != nil {
		panic(err)
	}
	fmt.Println(first.Why, "revision", o.Revision, o.Status)

	// Then every change; here, a reload (what SIGHUP asks for).
	outcomes := make(chan snapshot.Outcome)
	go file.Run(ctx, func(ctx context.Context, d source.Document) (snapshot.Outcome, error) {
		o, err := source.To(pub)(ctx, d)
		fmt.Println(d.Why, "revision", o.Revision, o.Status)
		outcomes <- o
		return o, err
	})
	if err := os.WriteFile(path, doc("two"), 0o644); err != nil {
		panic(err)
	}
	file.Reload()
	<-outcomes

	// A push the admin API applied is written to the file (its Persist).
	if _, err := file.Save(ctx, source.Push{Data: doc("pushed")}); err != nil {
		panic(err)
	}
	saved, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(saved)), "\n")
	fmt.Println("the file:", strings.TrimSpace(lines[len(lines)-1]))
	// Output:
	// start revision 1 applied
	// reload revision 2 applied
	// the file: fixed: {status: 200, body: pushed}
}
