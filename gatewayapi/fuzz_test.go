package gatewayapi_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/paduraksa/paduraksa/gatewayapi"
	"github.com/paduraksa/paduraksa/internal/gwconformance"
)

// FuzzDecode: any input decodes to objects or problems, never a panic,
// and whatever decodes translates to a document or problems.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/conformance/*.yaml")
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add(gwconformance.Backends(map[string]int{"svc-a": 1, "svc-b": 2, "svc-c": 3}))
	f.Add([]byte("---\n---\nkind: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := gatewayapi.Decode(data)
		if objs == nil {
			if err == nil {
				t.Fatal("no objects and no error")
			}
			return
		}
		res, err := gatewayapi.Translate(objs, gatewayapi.Options{SecretDir: t.TempDir()})
		if res == nil {
			t.Fatalf("no result (%v)", err)
		}
	})
}
