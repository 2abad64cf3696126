// Package simulate answers "what would this request get, and why": it runs
// a request through the real code of the gateway — the connection stage,
// the TLS handshake, net/http's server and the gate — over a config, and
// returns the outcome and a trace of every step. It never reimplements a
// decision, so its answer cannot drift from what production does.
//
// # Use
//
// [Run] takes a [Target] and a [Probe]. The target is the live gateway (a
// [snapshot.Store]), one compiled [snapshot.Snapshot] (an applied revision
// the publisher kept), or a draft [config.Document] that is compiled as
// a publish would compile it and never published: a draft with problems
// is refused with every one of them ([DraftRefused]). The target's
// Listener says how the daemon's listeners are set up: PROXY protocol
// from which load balancers, the deny list.
//
// The probe is a URL and, when it matters, a method, headers, the peer
// address and how it arrives (directly, through a trusted proxy with the
// headers it adds, Cloudflare, with a PROXY header and its source), the
// TLS handshake (SNI, ALPN, version) and the HTTP version. A field that
// would change nothing is refused with a stable code ([ProbeError]).
//
// The [Outcome] says what happens (connection or handshake refused and by
// which stage, the HTTP server's own 400, 421, a policy's answer, a
// redirect and its Location, a fixed answer, a drop, 404, or a forward to
// an upstream with its destinations and their health now), the status
// and the response headers the gateway sets, and for Server, Alt-Svc,
// Strict-Transport-Security and X-Request-Id the value or why there is
// none. The trace ([Step]) lists the connection stage, the handshake,
// client resolution (which header and hop were trusted), the host match,
// the TLS re-check, the response headers, every policy in order with its
// verdict and reason, the limits, the redirects, the route with the path
// view it matched, its path type and why it won (the route it won over
// and the key of precedence that decided; on a 404 the nearest route and
// which of its matches failed, also in [Outcome.Match]), the hand-over
// with what the route's target would send (the path and query after its
// rewrite, and its timeouts, also in [Outcome.Forward]) and the upstream,
// followed, when the upstream's connections present something of the
// gateway, by what a new one would: the client certificate ID and the
// PROXY header's version and addresses ([UpstreamConnection]).
//
// Credentials never show: in the outcome's response headers, the trace's
// facts and summaries and a what-if's probes, the value of every header
// the library's one rule names (Authorization, Proxy-Authorization,
// Cookie, Set-Cookie, and names ending in -Key, -Token or -Secret, in any
// case) is "(redacted)", as is a route match's value for such a header.
// A [Sample] keeps no request header at all, so [Sample.Recent] and the
// replays of a what-if carry none.
//
// A [Tester] ([NewTester], [Tester.Expect]) runs a table of expectations
// against a document: one line per case, in a user's own go test. With
// [Target.TestCertificates] a production document is tested where the
// certificate files it names are not: each certificate is served by a
// self-signed one for the names of the hosts that use it.
//
// # How it runs the real code
//
// Each simulation opens an in-memory connection with the probe's peer as
// its remote address (the server's writes never wait, like a socket with
// room in its buffers; the client's wait while 64 KiB are unread, like a
// socket whose buffers are full), and serves it with [edge.Start], the
// daemon's own listener stack, given that connection as its listener: the
// proxyproto listener, connlimit in its dry-run mode (it decides, and
// counts and logs nothing), the listener limits, crypto/tls with the
// target's tlsselect table as GetConfigForClient (without the Selector's
// counters), and net/http's server with the limits' settings, whose
// handler is [gate.Gate.Simulate] with a recording tracer. The client
// side writes the PROXY header, shakes hands with crypto/tls and sends
// the request over HTTP/1.1 or HTTP/2 (net/http's client). An HTTP/3
// probe runs quic-go's client over an in-memory datagram link to the
// edge's QUIC stack on the other end: connlimit's QUIC decision, the
// handshake through the table's QUIC configs, quic-go's HTTP/3 server
// with the listener limits' settings and the connection facts the edge
// gives the gate. The stages' verdicts reach the trace through the
// stack's own reports: connlimit's OnRefusal, the edge's
// OnHandshakeFailure, the PROXY-protocol listener's log.
//
// In the gate's dry run nothing changes: a rate limit reports "would
// allow, N tokens left" and takes none, forward-auth reports "would call
// URL" and calls nothing, a drop is traced and not carried out, no
// counter moves and the route's target is not called.
//
// What a simulation cannot see it says: the per-address connection cap
// counts live connections and is never reached; a draft's destinations
// have the health of the live destinations with the same upstream ID,
// destination ID and address ([Target.Live]) and are unknown otherwise;
// which destination would serve is the balancer's choice at that moment.
//
// # Cost
//
// A simulation costs what the request costs the real stages, in memory:
// about 0.1 ms of CPU over plain HTTP/1.1, 1 ms with a TLS handshake
// (HTTP/1.1 or HTTP/2) and 2 ms over HTTP/3 (QUIC's handshake and packet
// protection, both ends). A probe's declared body is generated as the
// server reads it (see [Probe.Header]), so its length costs nothing
// beyond what net/http reads of it. [RunContext] and [DiffContext] stop
// at the caller's deadline. [NewHandler] bounds what the HTTP API may
// cost: its calls at once, each call's deadline, the probes of a diff and
// the bytes of a request.
//
// # Concurrency
//
// Run is safe for concurrent use. Each call owns its in-memory
// connections, servers and goroutines, and closes them before it returns
// (the last goroutines end as the closed connections wake them, or, for
// an HTTP/1.1 connection net/http closes because its handler left a body
// unread, after net/http's half-second linger before the close).
package simulate
