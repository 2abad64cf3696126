package proxy_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/paduraksa/paduraksa/proxy"
)

// TestMain runs the tests once on each HTTP/1.1 client a cluster may
// choose: the direct one, then net/http's. PROXY_TEST_HTTP1=direct
// or netHTTP runs one pass only. Benchmarks and fuzzing run once, on the
// default.
func TestMain(m *testing.M) {
	flag.Parse()
	passes := []proxy.HTTP1Client{proxy.HTTP1Direct, proxy.HTTP1NetHTTP}
	if name := os.Getenv("PROXY_TEST_HTTP1"); name != "" {
		c, ok := proxy.ParseHTTP1Client(name)
		if !ok {
			fmt.Fprintln(os.Stderr, "PROXY_TEST_HTTP1: unknown client", name)
			os.Exit(2)
		}
		passes = passes[:0]
		passes = append(passes, c)
	}
	if flagSet("test.bench") || flagSet("test.fuzz") {
		passes = passes[:1]
	}
	code := 0
	for _, c := range passes {
		proxy.SetDefaultHTTP1(c)
		if testing.Verbose() {
			fmt.Println("=== HTTP/1.1 client:", c)
		}
		if code = m.Run(); code != 0 {
			fmt.Fprintln(os.Stderr, "FAIL with HTTP/1.1 client", c)
			break
		}
	}
	os.Exit(code)
}

func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() != ""
}
