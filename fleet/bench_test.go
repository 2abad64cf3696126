package fleet_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/fleet/etcdtest"
	"github.com/paduraksa/paduraksa/snapshot"
)

// hostsDoc is a document of n fixed hosts besides app.test, which
// answers body.
func hostsDoc(n int, body string) string {
	var b strings.Builder
	b.WriteString(fixed(body))
	for i := range n {
		b.WriteString("  - names: [h" + strconv.Itoa(i) + ".test]\n    kind: fixed\n    fixed: {status: 200, body: h}\n")
	}
	return b.String()
}

// BenchmarkEtcdPutToAllServing measures the time from a put of the
// document in etcd to three instances serving it (each one's outcome
// recorded: the snapshot swapped), one host changed each time, with the
// median and the 99th percentile of the iterations:
//
//	go test -run '^$' -bench EtcdPutToAllServing -benchtime 20x ./fleet
func BenchmarkEtcdPutToAllServing(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run("hosts="+strconv.Itoa(n), func(b *testing.B) {
			e := etcdtest.Start(b)
			c := e.Client()
			put(b, c, hostsDoc(n, "start"))
			ins := []*instance{newInstance(b, e.Endpoint), newInstance(b, e.Endpoint), newInstance(b, e.Endpoint)}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				v := strconv.FormatInt(put(b, c, hostsDoc(n, "v"+strconv.Itoa(i))), 10)
				for _, in := range ins {
					o, err := in.src.Outcome(ctx, v)
					if err != nil || o.Status != snapshot.Applied {
						b.Fatalf("version %s: %v %v %v", v, o.Status, o.Errors, err)
					}
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "ms-median")
			b.ReportMetric(float64(took[(len(took)*99-1)/100].Microseconds())/1000, "ms-p99")
		})
	}
}
