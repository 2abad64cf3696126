package telemetry

import (
	"strconv"
	"sync/atomic"
	"time"
)

// Counter is a monotonic counter on a cache line of its own, so two
// counters that different cores bump do not share one. Its zero value is
// ready.
type Counter struct {
	n atomic.Uint64
	_ [56]byte
}

// Add adds d.
func (c *Counter) Add(d uint64) { c.n.Add(d) }

// Inc adds 1.
func (c *Counter) Inc() { c.n.Add(1) }

// Load returns the count.
func (c *Counter) Load() uint64 { return c.n.Load() }

// Gauge is a value that goes up and down (requests in flight), on a cache
// line of its own. Its zero value is ready.
type Gauge struct {
	n atomic.Int64
	_ [56]byte
}

// Add adds d, which may be negative.
func (g *Gauge) Add(d int64) { g.n.Add(d) }

// Load returns the value.
func (g *Gauge) Load() int64 { return g.n.Load() }

// Bounds are the upper bounds of a [Histogram]'s buckets, in seconds as
// Prometheus spells them: from 100 µs (a loopback round trip) to 60 s (a
// slow upload), a 1-2.5-5 series, with +Inf beyond.
var Bounds = [...]float64{
	0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05,
	0.1, 0.25, 0.5,
	1, 2.5, 5,
	10, 30, 60,
}

// NumBuckets is the number of a Histogram's buckets, +Inf included.
const NumBuckets = len(Bounds) + 1

// bounds are Bounds in nanoseconds, for Observe.
var bounds = func() (b [len(Bounds)]int64) {
	for i, s := range Bounds {
		b[i] = int64(s * float64(time.Second))
	}
	return b
}()

// Histogram counts durations in the buckets of [Bounds]. Its zero value is
// ready.
type Histogram struct {
	buckets [NumBuckets]atomic.Uint64 // not cumulative: one bucket per observation
	sum     atomic.Int64              // nanoseconds
	_       [56]byte
}

// Observe counts one duration; a negative one counts as 0.
func (h *Histogram) Observe(d time.Duration) {
	ns := int64(d)
	if ns < 0 {
		ns = 0
	}
	i := 0
	for i < len(bounds) && ns > bounds[i] {
		i++
	}
	h.buckets[i].Add(1)
	h.sum.Add(ns)
}

// HistogramValue is what a Histogram has counted, read for a scrape.
type HistogramValue struct {
	// Buckets are cumulative: Buckets[i] counts the observations up to
	// Bounds[i], the last one all of them.
	Buckets [NumBuckets]uint64
	Sum     time.Duration
}

// Count returns the number of observations.
func (v *HistogramValue) Count() uint64 { return v.Buckets[NumBuckets-1] }

// Load reads the histogram.
func (h *Histogram) Load() HistogramValue {
	var v HistogramValue
	var n uint64
	for i := range h.buckets {
		n += h.buckets[i].Load()
		v.Buckets[i] = n
	}
	v.Sum = time.Duration(h.sum.Load())
	return v
}

// codes are the status codes [Codes] counts one by one; the others count
// by class. Index 0 is unused: it marks a code counted by class.
var codes = [...]int{
	0,
	100, 101,
	200, 201, 202, 204, 206,
	301, 302, 303, 304, 307, 308,
	400, 401, 403, 404, 405, 408, 409, 411, 413, 414, 415, 421, 429, 431, 499,
	500, 501, 502, 503, 504,
}

// codeIndex maps a status to its place in codes, 0 for none.
var codeIndex = func() (ix [600]uint8) {
	for i, c := range codes {
		if c != 0 {
			ix[c] = uint8(i)
		}
	}
	return ix
}()

// numCells is the number of Codes' cells: the codes, then one per class.
const numCells = len(codes) + 5

// Codes counts requests by status code. The common codes of a gateway
// (those of the table in its Each) count one by one; any other code counts
// with its class ("4xx"). Its zero value is ready.
type Codes struct {
	cells [numCells]Counter
}

// cell returns the cell status counts in: its own, or its class's.
func cell(status int) int {
	if status < 100 || status > 599 {
		status = 599 // no response code is outside 100-599; count it as a 5xx
	}
	if i := codeIndex[status]; i != 0 {
		return int(i)
	}
	return len(codes) + status/100 - 1
}

// Inc counts one request answered status.
func (c *Codes) Inc(status int) { c.cells[cell(status)].Inc() }

// Each calls f for every cell that counted something, in a fixed order:
// the code as a label ("404", or its class "4xx" for a code counted by
// class) and the count.
func (c *Codes) Each(f func(code string, n uint64)) {
	for i := 1; i < numCells; i++ {
		if n := c.cells[i].Load(); n != 0 {
			f(codeLabels[i], n)
		}
	}
}

// Load returns the count for status (its class's, when status is not
// counted one by one).
func (c *Codes) Load(status int) uint64 { return c.cells[cell(status)].Load() }

var codeLabels = func() (l [numCells]string) {
	for i, c := range codes {
		if c != 0 {
			l[i] = strconv.Itoa(c)
		}
	}
	for k := 1; k <= 5; k++ {
		l[len(codes)+k-1] = string(rune('0'+k)) + "xx"
	}
	return l
}()
