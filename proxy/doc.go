// Package proxy is the forwarder: it sends a request the gate handed over
// to a destination of the route's cluster and copies the answer back.
//
// A [Route] is the proxy's [gate.Target], built by [NewRoute] from a
// [RouteConfig] (its cluster, its host's [Site], the Host header mode, the
// path [Rewrite], custom header rules and the [Retry] policy). Everything
// is checked and compiled there; the request path reads precomputed values.
//
// # Validation
//
// [NewRoute], [NewSite], [ClientConfig.Validate] and the Check functions
// return every problem at once, each a [ValidationError] with a stable
// code (listed in problems.go) and a path relative to the config
// ("rewrite.addPrefix", "requestHeaders[2].name"). The names of the
// enumerated settings ([HostHeaderNames], [RequestIDModeNames],
// [HTTPVersionNames], [VersionPolicyNames], [TrustNames], [HeaderOpNames],
// [EncodingNames]) are their String and Parse forms, and the ones a config
// document uses. A Route not built by NewRoute (the zero Route) reports
// what it lacks through [Route.CheckTarget], which gate.New asks.
//
// # What to call
//
// A hand-built gateway makes a [Transport] per cluster ([NewTransport]),
// a [Cluster] around it and the cluster's runtime state
// ([upstream.Registry], or [upstream.NewCluster] for a fixed set), a [Site]
// per host ([NewSite]) and a [Route] per route ([NewRoute]), and hands the
// routes to gate.New. A Route's settings are fixed when it is built:
// change them by building another, as a config publish does.
//
// # Pipeline
//
// Per request, in order ([balance] documents the same sequence):
//
//  1. Request ID (the host's [RequestIDMode]), then the rewrite: the
//     client's raw path with the route's prefix stripped and/or another
//     added, never decoded or re-encoded. A spelling of the prefix that
//     cannot be stripped is 404; a dot segment in any spelling or a loose
//     escape is 400 (see [Rewrite]).
//  2. Affinity ([balance.Affinity], when the cluster has one), then the
//     cluster's [balance.Policy] among the available destinations; none is
//     503.
//  3. The outgoing request: a pooled shallow copy of the client's (same
//     context plus a client trace for 1xx, same streamed body), the Host of
//     the route's [HostHeader] mode, hop-by-hop fields removed as RFC 9110
//     says (every name listed in any Connection value too; TE: trailers
//     kept), forwarding headers overwritten (X-Forwarded-For and X-Real-IP
//     carry exactly the client the gate resolved, X-Forwarded-Proto the
//     trusted scheme, X-Forwarded-Host the Host as received; Forwarded,
//     X-Forwarded-Prefix and X-Forwarded-Port from the client removed, and
//     every cf-* and True-Client-IP unless the gate says the peer is a
//     trusted Cloudflare one), X-Forwarded-Prefix on a stripping route,
//     then the custom request rules.
//  4. The round trip on the cluster's transport. On an https destination
//     the Host's name is the SNI and, with system trust, the certificate
//     check name: the [Transport] keeps a pool per name so a connection is
//     never reused for another name. 1xx responses (103 Early Hints) are
//     passed on with their hop-by-hop fields stripped.
//  5. The response: hop-by-hop fields and Alt-Svc removed, the gate's
//     Server kept, the request ID set, Location mapped back under the
//     client's prefix, compression, the custom response rules, the
//     affinity key; then the body with a flush after every read for streams
//     (unknown length, text/event-stream), and trailers both ways (a
//     response with trailers is never sent with a length that would stop
//     HTTP/1.1 from chunking them).
//  6. Upgrades (HTTP/1.1 only; Upgrade: h2c is never forwarded): a 101 for
//     the protocol asked is written on the hijacked client connection and
//     both ends are piped, with a half-close passed on.
//  7. The exchange's [upstream.Outcome] goes to the cluster's
//     [Cluster.Observer] (passive health: a health.Monitor is one, with no
//     glue) and its [Stats]. A client that went away or whose body failed
//     is a client-side outcome ([upstream.ClientAbort],
//     [upstream.ClientBodyError]): counted, reported to the tracer as 499,
//     never a 502 and never an observation, so it never counts against
//     the destination. So is a request the outgoing client refused to
//     send for what it holds ([upstream.RequestInvalid], answered 400, or
//     431 for a header list over an HTTP/2 upstream's limit): unsendable.go
//     lists every such refusal of the clients and where each is closed,
//     most of them by the gate before the request gets here.
//
// The proxy's own answers (502, 503, 504, 404, 400) are the gate's, written
// by [gate.Request.Answer] with the host's headers, the request ID and the
// route's custom response rules, and are never compressed.
//
// # Timeouts and errors
//
// [ClientConfig.ConnectTimeout] covers the TCP connect and the TLS
// handshake (default 10 s). [Cluster.IdleTimeout] (default 1 h) cuts an
// exchange when no data moved in either direction for that long: the upload
// of a request body, a response stream, an upgraded connection. It is one
// re-arming timer per pooled exchange plus an atomic stamp of the last
// activity that every read stores, so a one-way stream is never cut for the
// quiet direction; any data restarts it. The wait for the response header
// is bounded by [ClientConfig.ResponseHeaderTimeout], which the snapshot
// compiler sets to the same value. A timeout before the response is 504
// with the host's page; after the header, the client's stream is aborted so
// a cut body never looks complete. An unreachable destination is 502, no
// available destination 503. A failed round trip is classified by
// [upstream.ClassifyRoundTrip], as health's probes are (connect, TLS, a
// pin mismatch and a server name past [MaxServerNames] included, timeout,
// response header, client abort); a response header error that the
// request's own content explains (the clients' refusals) is
// [upstream.RequestInvalid]; a response body that broke off is a body
// error; a failure after the idle timeout fired is a timeout.
//
// # Retries
//
// Off by default. A route's [Retry] resends a failed attempt to another
// destination only when nothing of the request reached the upstream, or
// when the method is idempotent and the body is replayable (none, or at
// most BodyLimit bytes buffered before the first attempt: the only case
// where a body is not streamed); never once a response header arrived,
// never an upgrade; within a budget that is a share of the route's live
// requests.
//
// # Compression
//
// Off by default, per host ([Compression]). gzip (klauspost/compress, level
// 1) wins ties in q-value; Brotli and zstd are chosen only when the client
// prefers them or the host lists them first. Text-like types only; never
// for encoded responses, no-transform, 1xx/204/206/304, Content-Range,
// HEAD or upgrades. A strong ETag is weakened, Accept-Ranges and digests are
// dropped, Vary: Accept-Encoding is added. Encoders are pooled and flushed
// with the stream.
//
// # Transports
//
// One [Transport] per cluster, built from a comparable [ClientConfig]:
// HTTP/1.1, HTTP/2 over TLS through ALPN, or h2c with prior knowledge when
// the cluster asks for HTTP/2 with [VersionExact]
// ([ClientConfig.PlainTextVersion]). Keep a cluster's Transport, and so
// its pooled connections, across config changes while its ClientConfig is
// unchanged (the snapshot compiler does, per cluster ID), and close the
// idle connections of one that is replaced. Health probes use
// [Transport.HTTP], so they
// speak the same version with the same trust. Publishing never cuts
// in-flight work: a replaced transport only closes its idle connections,
// and an exchange finishes on the snapshot (and the Route) it started on.
//
// HTTP/1.1, to plain-text destinations and to the TLS ones of an
// HTTP/1.1 cluster, goes by default through the transport's direct
// client ([HTTP1Direct]), one pool per address and server name: the
// forwarding goroutine writes the request and reads the response on a
// pooled connection itself, with none of net/http's per-connection read
// and write loops, and parses the response head strictly (RFC 9112).
// Upgrades, Expect: 100-continue, uploads of unknown length or with
// trailers (the ones that stream both ways: the direct client reads the
// answer once the body is written), fields net/http refuses and an
// HTTP/2 cluster's TLS destinations go through net/http's client
// instead, counted by [Transport.HTTP1Counts]; [HTTP1NetHTTP] sends
// everything through it.
//
// # Why http.RoundTripper and not httputil.ReverseProxy
//
// The forwarder is written on http.RoundTripper directly, and the choice
// was measured. ReverseProxy clones the request (Request, URL, deep header
// copy), adds a client trace and a context per request, copies headers
// with Add (an allocation per value), forwards Upgrade: h2c, does not strip
// hop-by-hop fields from 1xx responses, and loses trailers when an HTTP/2
// upstream sends a length with them. It also leaves no place for the
// activity timeout, the error classification and the Host/SNI pools.
//
// Figures (go test -bench 'Forward|HTTPUtil' -benchmem -count=3, Go 1.26.8,
// 2 shared vCPUs, client, proxy and upstream in one process, so B/op and
// allocs/op count all three; medians):
//
//	BenchmarkForwardH1   152 µs/op  10.25 KB/op  125 allocs/op  (gate + forwarder)
//	BenchmarkHTTPUtilH1  139 µs/op  11.66 KB/op  140 allocs/op  (ReverseProxy alone)
//	BenchmarkForwardH2   306 µs/op  16.35 KB/op  161 allocs/op
//	BenchmarkHTTPUtilH2  277 µs/op  16.74 KB/op  174 allocs/op
//	BenchmarkForwardOwn  2.2 µs/op  112 B/op       1 alloc/op   (Route.Forward, canned transport)
//	BenchmarkForwardGzip16K  298 µs/op  12 KB/op  139 allocs/op, 16384 -> 2255 bytes
//
// Our path does 15 (H1) and 13 (h2c) fewer allocations and 12% (H1) and 2%
// (h2c) fewer bytes per request than ReverseProxy while also running the
// gate's decision; the times are within this machine's run-to-run noise
// (±15%).
//
// The proxies alone, on the same canned transport, request and
// ResponseWriter (go test -run '^$' -bench 'Own$' -benchmem, five
// interleaved runs, medians, on the same machine under other load):
//
//	BenchmarkForwardOwn   2.8 µs/op   112 B/op   1 alloc/op
//	BenchmarkHTTPUtilOwn  5.7 µs/op  1649 B/op  18 allocs/op
//
// The forwarder's own cost is one allocation per request: the
// outgoing context and the two forwarding header values, which the
// transport's goroutines may still read after the exchange is pooled again
// (a test asserts at most 2). The rest belongs to net/http's server and
// client; past this, the lever is a leaner upstream client behind the same
// http.RoundTripper.
//
// # Concurrency
//
// Routes, sites, clusters and transports are safe for concurrent use and
// immutable once built (a Transport adds a pool for a new server name
// behind an atomic pointer). Each exchange owns one pooled state; an
// upgraded connection runs one extra goroutine for the second direction,
// which ends with the tunnel.
package proxy
