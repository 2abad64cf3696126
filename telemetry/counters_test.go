package telemetry

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	h.Observe(-time.Second)                  // 0: the first bucket
	h.Observe(100 * time.Microsecond)        // on the first bound: le is inclusive
	h.Observe(100*time.Microsecond + 1)      // just over: the second
	h.Observe(time.Second)                   // on 1 s
	h.Observe(time.Minute + time.Nanosecond) // over the last bound: +Inf
	v := h.Load()
	assert.Equal(t, uint64(5), v.Count())
	assert.Equal(t, uint64(2), v.Buckets[0], "le 0.0001")
	assert.Equal(t, uint64(3), v.Buckets[1], "le 0.00025")
	i1s := 12
	require.Equal(t, 1.0, Bounds[i1s])
	assert.Equal(t, uint64(3), v.Buckets[i1s-1], "le 0.5")
	assert.Equal(t, uint64(4), v.Buckets[i1s], "le 1")
	assert.Equal(t, uint64(4), v.Buckets[len(Bounds)-1], "le 60")
	assert.Equal(t, 200*time.Microsecond+1+time.Second+time.Minute+1, v.Sum)
}

func TestBoundsIncrease(t *testing.T) {
	for i := 1; i < len(Bounds); i++ {
		require.Less(t, Bounds[i-1], Bounds[i])
		require.Less(t, bounds[i-1], bounds[i])
	}
}

func TestCodes(t *testing.T) {
	var c Codes
	for _, s := range []int{200, 200, 404, 418, 451, 299, 502, 0, 700} {
		c.Inc(s)
	}
	got := map[string]uint64{}
	var order []string
	c.Each(func(code string, n uint64) { got[code] = n; order = append(order, code) })
	assert.Equal(t, map[string]uint64{"200": 2, "404": 1, "4xx": 2, "2xx": 1, "502": 1, "5xx": 2}, got)
	assert.Equal(t, []string{"200", "404", "502", "2xx", "4xx", "5xx"}, order, "codes first, then classes")
	assert.Equal(t, uint64(2), c.Load(418), "an uncounted code reads its class")
	assert.Equal(t, uint64(1), c.Load(404))
}

func TestEveryCodeHasOneCell(t *testing.T) {
	seen := map[int]bool{}
	for _, code := range codes[1:] {
		require.False(t, seen[code], "%d twice", code)
		seen[code] = true
		assert.Equal(t, code, codes[cell(code)])
	}
	for s := 100; s < 600; s++ {
		i := cell(s)
		if !seen[s] {
			assert.Equal(t, string(rune('0'+s/100))+"xx", codeLabels[i], "%d", s)
		}
	}
}

func TestConcurrentCounting(t *testing.T) {
	var h Histogram
	var c Codes
	var n Counter
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 1000 {
				h.Observe(time.Duration(i) * time.Microsecond)
				c.Inc(200)
				n.Inc()
			}
		})
	}
	wg.Wait()
	v := h.Load()
	assert.Equal(t, uint64(4000), v.Count())
	assert.Equal(t, uint64(4000), c.Load(200))
	assert.Equal(t, uint64(4000), n.Load())
	assert.Equal(t, 4*time.Duration(999*1000/2)*time.Microsecond, v.Sum)
}

func TestCountingAllocatesNothing(t *testing.T) {
	var h Histogram
	var c Codes
	var n Counter
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		h.Observe(3 * time.Millisecond)
		c.Inc(503)
		n.Add(2)
	}))
}

func BenchmarkObserve(b *testing.B) {
	var h Histogram
	var c Codes
	b.ReportAllocs()
	d := 3 * time.Millisecond
	for b.Loop() {
		h.Observe(d)
		c.Inc(200)
	}
}
