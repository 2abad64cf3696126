// Package proxy is the forwarder: it sends a request the gate handed over
// to a destination of the route's cluster and copies the answer back.
//
// A [Route] is the proxy's [gate.Target]. It picks a destination among the
// cluster's available ones (power of two choices on in-flight counts unless
// the cluster has another [Picker]), counts the request in flight, and runs
// one round trip on the cluster's transport:
//
//   - The outgoing request is a pooled shallow copy of the client's: same
//     context, same streamed body, the client's raw path and query
//     forwarded byte for byte, the client's Host.
//   - Hop-by-hop fields are removed as RFC 9110 says, including every field
//     named in any Connection value; TE: trailers is kept.
//   - X-Forwarded-For and X-Real-IP carry exactly one address, the client
//     the gate resolved; X-Forwarded-Proto the trusted scheme;
//     X-Forwarded-Host the Host as received. Forwarded, X-Forwarded-Prefix,
//     X-Forwarded-Port, True-Client-IP and every cf-* field from the client
//     are removed. All are overwritten, never appended.
//   - The response keeps the gate's Server header; streams (unknown length,
//     text/event-stream) are flushed as data arrives; trailers cross in both
//     directions, and a response with trailers is never sent with a length
//     that would stop HTTP/1.1 from carrying them.
//
// Errors get the gate's answers with the host's headers: 503 when the
// cluster has no available destination, 502 when the destination cannot be
// reached or answers garbage, 504 on a timeout. A client that went away is
// a client abort ([ErrorClientAbort]): nothing is answered and the
// destination is not blamed. A body cut after the header was sent aborts
// the client's connection so the truncation is visible.
//
// # Transports
//
// One *http.Transport per cluster, built by [NewTransport] from a
// comparable [ClientConfig]. [Transports] keeps each cluster's transport,
// and its pooled connections, across publishes while its ClientConfig is
// unchanged.
//
// # Why not httputil.ReverseProxy
//
// The forwarder is written on http.RoundTripper directly. ReverseProxy
// clones the request (Request, URL, deep header copy), adds a client trace
// and a context per request, copies headers with Add (an allocation per
// value), and drops trailers when an upstream sends a length with them.
// Measured in this package's benchmarks on one machine in one run
// (BenchmarkProxyH1 and BenchmarkHTTPUtilH1, client, proxy and upstream in
// one process): 127 against 140 allocations and about 10.2 KB against
// 11.7 KB per request.
//
// # Concurrency
//
// Routes, clusters and transports are safe for concurrent use and
// immutable once built.
package proxy
