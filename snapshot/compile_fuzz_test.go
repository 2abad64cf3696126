package snapshot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCompile: any document that decodes either compiles or is refused by
// validation; the compiler never panics and never meets a problem that
// validation let through (CodeCompileInternal).
func FuzzCompile(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.json")
	yamls, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range append(seeds, yamls...) {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	b, _ := json.Marshal(fleet(3, &backend{addr: "127.0.0.1:9"}))
	f.Add(b)
	f.Add([]byte(`{"hosts":[{"names":["*.a.test","A.TEST."],"routes":[{"path":"/x/","upstream":"u"}]}],"upstreams":[{"id":"u","destinations":[{"id":"d","address":"https://[::1]"}],"http":{"version":"2","tls":{"trust":"pinned","pins":["AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="]}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Decode(data)
		if err != nil {
			return
		}
		var c Compiler
		snap, err := c.Compile(doc)
		if err != nil {
			for _, p := range Problems(err) {
				if p.Code == CodeCompileInternal {
					t.Fatalf("validation let through a document the compiler cannot build: %v", p)
				}
			}
			return
		}
		if snap.Gate() == nil {
			t.Fatal("a compiled snapshot has no gate")
		}
		snap.commit()
	})
}
