// Package proxy is the forwarder: it sends a request the gate handed over
// to a destination of the route's cluster and copies the answer back.
//
// A [Route] is the proxy's [gate.Target], built by [NewRoute] from a
// [RouteConfig] (its cluster, its host's [Site], the Host header mode, the
// path [Rewrite], custom header rules and the [Retry] policy). Everything
// is checked and compiled there; the request path reads precomputed values.
//
// # Splits and mirrors
//
// A [Split] is a [gate.Target] over weighted sides, one Route each (its
// own cluster with its balancing, health, affinity and retries, and the
// route's settings): a request goes to the side a [Force] rule names, else
// to the side its sticky key's hash places it on ([Sticky]: a cookie, a
// header or the client address), else by the weights, on a
// low-discrepancy sequence over one atomic counter; a side without an
// available destination passes its share to the others until it has one
// again. [SideStats] count the requests of each side by [SplitReason].
// A [Mirror] ([RouteConfig.Mirror]) copies a sampled share of a route's
// requests to another cluster, off the request's goroutine once the body
// is complete, bounded in flight, and counted in [MirrorStats]; it never
// delays or changes the client's answer. Neither costs a route without
// them anything on the request path.
//
// # Validation
//
// [NewRoute], [NewSite], [ClientConfig.Validate] and the Check functions
// return every problem at once, each a [ValidationError] with a stable
// code (listed in problems.go) and a path relative to the config
// ("rewrite.addPrefix", "requestHeaders[2].name"). The names of the
// enumerated settings ([HostHeaderNames], [RequestIDModeNames],
// [HTTPVersionNames], [VersionPolicyNames], [TrustNames],
// [HTTP1ClientNames], [ProxyProtocolNames], [HeaderOpNames],
// [EncodingNames]) are their String
// and Parse forms, and the ones a config document uses. A Route not built by NewRoute (the zero Route) reports
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
//     added, or a template filled from the gate's template route values
//     ([gate.Request.PathValue]), never decoded or re-encoded. A spelling
//     of the prefix that cannot be stripped is 404; a dot segment in any
//     spelling or a loose escape is 400 (see [Rewrite]).
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
//  4. The round trip on the cluster's transport: HTTP/1.1 on the direct
//     client or net/http's (see Transports), HTTP/2 on net/http's. On an
//     https destination the Host's name is the SNI and, with system
//     trust, the certificate check name: the [Transport] keeps a pool per
//     name so a connection is never reused for another name. 1xx
//     responses (103 Early Hints) are passed on with their hop-by-hop
//     fields stripped.
//  5. The response: hop-by-hop fields and Alt-Svc removed, the gate's
//     Server kept, the request ID set, Location mapped back under the
//     client's prefix, compression, the custom response rules, the
//     affinity key; then the body, flushed after every read of a
//     text/event-stream and, for a body of unknown length, wherever the
//     upstream paused (the end of a chunk with nothing more buffered,
//     with the direct HTTP/1.1 client; every read otherwise), and
//     trailers both ways (a response with trailers is never sent with a
//     length that would stop HTTP/1.1 from chunking them).
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
// A request that never left is retried by default: when an attempt failed
// before any byte of the request was written (the connection was refused
// or reset while it was made, the connect timed out, the upstream's TLS
// handshake or the PROXY header failed), the request goes to another
// destination, whatever its method and body, up to [MaxConnectRetries]
// times, never twice to one destination, the first such retry outside the
// budget ([ConnectFailures]; a route turns it off with
// ConnectFailuresOff). The direct client says so with its dial error; for
// net/http's client, the attempt took no connection (no GotConn), on
// which alone it writes. The refusal is reported to the cluster's
// observer with [upstream.Observation.NotSent], and a health.Monitor
// ejects the destination at once. Once an attempt never left, the connects
// of all the request's later attempts end within [ConnectWindow] connect
// timeouts of its start (each dial is given what is left, on both
// clients), and no attempt is sent with less than MinConnectTimeout left:
// a cluster gone dark costs a request two connect timeouts, not one per
// destination and retry.
//
// Other retries are off by default. A route's [Retry] resends a failed
// attempt to another destination only when nothing of the request reached
// the upstream, or when the method is idempotent and the body is
// replayable (none, or at most BodyLimit bytes buffered before the first
// attempt: the only case where a body is not streamed); never once a
// response header arrived, never an upgrade; within a budget that is a
// share of the route's live requests.
//
// # Circuit breakers
//
// Off by default. A cluster's [Limits] bound its requests in flight and
// its retries in flight; its transport's [ClientConfig] bounds the
// connections per destination and the requests waiting for a connection
// of the direct client. Past a threshold a request is answered 503 at
// once with Retry-After ([OverloadRetryAfter]) and the error kind
// "overloaded" (a retry past its bound is not sent, and the failure is
// answered as without it); each trip is counted by [Limit] in the
// cluster's [Stats]. Nothing queues beyond the bounds, and no trip is an
// observation: a flood of clients is not the destination's failure. The
// counts are atomics; a cluster without limits pays one comparison.
//
// # Compression
//
// Off by default, per host ([Compression]). gzip wins ties in q-value;
// Brotli and zstd are chosen only when the client prefers them or the host
// lists them first. Text-like types only; never for encoded responses,
// no-transform, 1xx/204/206/304, Content-Range, HEAD or upgrades. A strong
// ETag is weakened, Accept-Ranges and digests are dropped, Vary:
// Accept-Encoding is added. Encoders are pooled with a 4 KiB buffer their
// output gathers in (a 16 KiB page reaches the connection in one or two
// writes) and are flushed with the stream.
//
// gzip is klauspost/compress's fastest deflate, in one of two encoders
// chosen by the body. A body of up to 32 KiB that is not flushed before
// its end (a page of known length) is gathered and compressed at the end
// in one call of the stateless encoder, whose 16 KB hash table is on the
// stack; a longer or flushed body (a stream, or a chunked answer flushed
// where the upstream paused) goes through a pooled level 1 writer from
// then on, as before. Both are single-probe hash matchers of about the
// same instructions a byte; what differs is the memory: a level 1 writer
// holds 500 KB, a 128 KB table among it, and when 64 connections compress
// at once most of a response's lookups miss the cache. On the suite's
// pages, 16 KiB in 8 KiB writes, per response (BenchmarkGzipEncoder under
// cachegrind, 2 MiB last-level cache, 64 encoders taken in turn; Ir the
// instructions, D1 and LL the first- and last-level data cache misses):
//
//	            level 1 writer                   stateless, gathered
//	repetitive  2255 B  352k Ir  2979 D1  1941 LL  2260 B  337k Ir  1216 D1  10 LL
//	varied      4215 B  573k Ir  2930 D1  1716 LL  4310 B  585k Ir  1389 D1   9 LL
//
// nginx at gzip_comp_level 1 sends 2296 and 4238 bytes; zlib level 1 on
// the same pages is 514k and 886k instructions. The other levels cost
// more for little: on the repetitive page level 2 is 430k Ir for 2267 B,
// level 3 509k for 2211 B; Huffman only is 371k for 9800 B.
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
// HTTP/1.1 has one path and one set of rules. A cluster's choice of
// client is made once, in [NewTransport] ([ClientConfig.HTTP1], the
// document's upstreams[].http.http1Client). With [HTTP1Direct], the
// default, HTTP/1.1 to plain-text destinations, and to the TLS ones of an
// HTTP/1.1 cluster, goes through the direct client (internal/h1client),
// one pool per address and server name: the forwarding goroutine writes
// the request and reads the response on a pooled connection itself, with
// none of net/http's per-connection read and write loops, into the pooled
// exchange, and refuses what net/http's client refuses to send. Only what
// it does not carry goes through net/http's client, per request, counted
// by reason in the cluster's [Stats] ([HTTP1Fallback]: upgrades, Expect:
// 100-continue, uploads with trailers or of unknown length, which may
// stream both ways while the direct client reads the answer only once
// the body is written). An HTTP/2 cluster's TLS destinations are
// net/http's by its configuration (it negotiates the version), and
// [HTTP1NetHTTP] sends everything through net/http's client.
//
// What a connection presents of the gateway is in the ClientConfig too:
// the client certificate ([ClientConfig.ClientCertificate]) is looked up
// in a [ClientCertificates] store at each handshake, on both clients and
// the probes, so a renewed certificate reaches the next new connection
// without a new Transport; [TrustCAFile] checks the upstream against the
// roots of [ClientConfig.CAs]. With [ClientConfig.ProxyProtocol] each new
// connection starts with a PROXY header, before TLS, naming the client
// ([ProxyAddresses]); a connection then carries one client's requests:
// the direct client pools per destination and header, net/http's
// transports keep no connection alive, and probes send LOCAL.
//
// Both clients read answers by the same rules (RFC 9112, strictly: see
// internal/h1client), because net/http's HTTP/1.1 connections are read
// through the direct client's own reader, a step ahead of net/http's: a
// head, chunk line or trailer line it refuses never reaches net/http
// whole. The same bad answer gets the same status on every path
// (TestMalformedUpstreamAnswers), with one exception: the TLS
// connections of an HTTP/2 cluster that negotiate HTTP/1.1 are read by
// net/http inside its own TLS, so they get net/http's reading of a head
// (which takes obs-fold, bare LF line ends, a field name with a space,
// and Transfer-Encoding with Content-Length), and the names a
// "Connection: close" field lists are not known there.
//
// # Why not httputil.ReverseProxy
//
// The forwarder calls http.RoundTripper and the direct client directly,
// and the choice was measured. ReverseProxy clones the request (Request,
// URL, deep header copy), adds a client trace and a context per request,
// copies headers with Add (an allocation per value), forwards Upgrade:
// h2c, does not strip hop-by-hop fields from 1xx responses, and loses
// trailers when an HTTP/2 upstream sends a length with them. It also
// leaves no place for the activity timeout, the error classification, the
// Host/SNI pools and the direct client.
//
// Figures (go test -run '^$' -bench
// 'ForwardH1$|HTTPUtilH1$|ForwardH2$|HTTPUtilH2$|ForwardGzip$|ForwardOwn$|HTTPUtilOwn$'
// -benchmem -count=5, Go 1.26.8, an Intel Xeon of 2 vCPUs shared with
// other load, medians; the loopback ones run client, proxy and upstream
// in one process, so their B/op, allocs/op and CPU count all three):
//
//	BenchmarkForwardH1        69 µs/op   72 µs CPU   7.97 KB/op   91 allocs/op  (gate + forwarder, direct client)
//	BenchmarkHTTPUtilH1       94 µs/op   94 µs CPU  11.67 KB/op  140 allocs/op  (ReverseProxy alone)
//	BenchmarkForwardH2       176 µs/op  173 µs CPU  16.37 KB/op  161 allocs/op  (h2c)
//	BenchmarkHTTPUtilH2      137 µs/op  136 µs CPU  16.76 KB/op  174 allocs/op
//	BenchmarkForwardGzip     145 µs/op  143 µs CPU   8.79 KB/op  102 allocs/op  (repetitive/length: 16384 -> 2260 bytes)
//	BenchmarkForwardOwn      1.6 µs/op               144 B/op       1 alloc/op  (Route.Forward alone)
//	BenchmarkHTTPUtilOwn     4.5 µs/op              1646 B/op      18 allocs/op (ReverseProxy alone)
//
// Over HTTP/1.1 our path does 49 fewer allocations, 32% fewer bytes and
// three quarters of the CPU per request of ReverseProxy's while also
// running the gate's decision; over h2c, where both use net/http's
// HTTP/2 client, 13 fewer allocations and 2% fewer bytes, in about 1.3
// times its time and CPU in this run (1.1 to 1.2 in earlier ones). Times
// on this machine vary by ±25% from run to run. The Own benchmarks run
// each proxy alone on the same canned RoundTripper, request and
// ResponseWriter.
//
// The forwarder's own cost is one allocation per request: the outgoing
// context and the two forwarding header values, which net/http's reader
// may still read after the exchange went back to the pool (it watches the
// context until the response body ends; a test asserts it). On a
// warm connection the direct client allocates nothing per exchange but
// its watch of the request's context (context.AfterFunc: five objects).
//
// # Concurrency
//
// Routes, sites, clusters and transports are safe for concurrent use and
// immutable once built (a Transport adds a pool for a new server name
// behind an atomic pointer). Each exchange owns one pooled state, which
// [Route.Forward] returns through one deferred finish, and only once
// net/http's goroutines no longer read the request (its writer until it
// wrote it, its reader until it returned the response head): a failed
// round trip or an upload answered early leaves it to the garbage
// collector instead. An upgraded connection runs one extra goroutine for
// the second direction, which ends with the tunnel.
package proxy
