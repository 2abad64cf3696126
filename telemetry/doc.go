// Package telemetry is what the gateway observes requests with, shared by
// the packages that count and by the embedder who watches:
//
//   - lock-free cells: a [Counter] on a cache line of its own, a
//     [Histogram] of durations on fixed buckets ([Bounds]) and [Codes],
//     requests by status code. Every increment is one or two atomic adds
//     on memory allocated when the config compiled: 0 B per request, no
//     lock. Reads are for scrapes: each cell is read atomically, a
//     histogram's buckets one by one, so a scrape racing a request may see
//     it in a bucket and not yet in the sum;
//   - the [Record] of one finished request and the [Observer] that
//     receives it, once per request, on the request's goroutine;
//   - the [AccessLog], an Observer that writes each record through
//     log/slog off the request path, behind a bounded buffer that drops and
//     counts when full, never blocking a request.
//
// The package imports nothing of the gateway's: the gate, the forwarder
// and health count in its cells, and the admin package exports them.
package telemetry
