// Package listenlimits states the limits a public listener puts on its
// clients and applies them to a net/http server: how long a client may
// take to finish its TLS handshake and its request headers, how long an
// idle keep-alive connection waits, how many connections, upgraded
// connections and HTTP/2 streams there may be, and the minimum data rates
// of request bodies and responses; and it refuses the HTTP/1.x request
// framings RFC 9112 forbids and net/http accepts. A daemon and any program
// that embeds the library use the same [Limits] value.
//
// # Main types
//
//   - [Limits]: a plain struct whose zero value gives every default
//     (header timeout 15 s, keep-alive idle 120 s, TLS handshake 10 s,
//     32 KiB of headers, 10 000 connections, 2 000 upgraded connections,
//     100 HTTP/2 streams, 120 B/s of request body and 240 B/s of response
//     after 10 s). In each field 0 means the default and a negative value
//     ([Off]) turns the limit off; LaxFraming turns the framing guard off.
//     [Limits.Validate] reports every problem with a stable code.
//   - [Limits.Apply] sets what net/http enforces itself on an *http.Server,
//     and tells the framing guard of hijacks.
//   - [Listener] sheds connections above MaxConnections, bounds the TLS
//     handshake, guards the framing of HTTP/1.x requests and parks idle
//     plain HTTP/1.1 keep-alive connections (IdleRelease).
//   - [Limits.Handler], [MinRateReader] and [MinRateWriter] enforce the
//     minimum data rates.
//   - [Limits.Handler] caps upgraded connections (MaxUpgradedConnections)
//     with an [Upgrades], which a proxy can also call around an upgrade
//     itself.
//
// # What net/http enforces, and what it cannot
//
// Request headers: http.Server.ReadHeaderTimeout. For the first request of
// a connection it runs from the end of the TLS handshake, for the next
// ones from their first byte (net/http peeks for it under IdleTimeout). A
// slowloris is closed when it expires; net/http closes without answering
// 408 (it answers 400 when the request line itself was cut).
//
// TLS handshake: net/http has no setting of its own. It sets the
// handshake's deadline to the smallest of ReadHeaderTimeout (or ReadTimeout
// when that is 0) and WriteTimeout, and clears the read and write
// deadlines right after the handshake. With [Limits.Apply] alone the
// handshake therefore gets RequestHeaderTimeout (15 s). [Listener] makes
// it TLSHandshakeTimeout: from accept, it clamps every deadline set on the
// connection to the handshake deadline until net/http clears the read
// deadline after the handshake. That clearing happens whenever the server
// has any of ReadHeaderTimeout, ReadTimeout or WriteTimeout, which Apply
// ensures unless RequestHeaderTimeout is off; on a listener without TLS,
// the clamp bounds the first request's headers instead.
//
// Max connections: net/http has none. [Listener] sheds (accepts and closes
// at once) instead of blocking Accept like x/net's netutil.LimitListener,
// whose waiting connections sit unanswered in the kernel's queue.
//
// Idle keep-alive connections: net/http keeps the goroutine that served a
// connection (its stack grows to 8 KiB serving a request and cannot shrink
// back while it waits, its frames being over a quarter of 4 KiB) and two
// 4 KiB buffers for as long as the connection stays open: about 20 KiB
// each. [Listener] parks a plain HTTP/1.1 connection idle for IdleRelease:
// it ends the idle wait at the release time and answers net/http's read
// with io.EOF, so net/http lets go of the connection as of a client that
// left; the Close that follows keeps the socket open instead and a
// goroutine of the Listener, with a small stack, waits for the next
// request's first byte under the rest of the idle deadline. With that
// byte, Accept hands the connection back and net/http serves it as a new
// one. The release time is counted back from the idle deadline net/http
// sets (its IdleTimeout from now, which Apply set), so the wait between
// two requests reads no clock of its own.
//
// What a parked connection lets go of stays the process's until the Go
// runtime collects and returns it: the heap goal set while the
// connections were active holds until the next collection (an idle
// process reaches it by the runtime's two-minute forced one), net/http's
// pooled buffers survive one collection, and the scavenger returns free
// pages only above the goal, at its own pace. So when a wave of parks
// ends (at least 1 024 parks, a quarter second of 256 or more among
// them, then a quarter second of fewer than 64), a goroutine of the
// Listener collects twice (runtime.GC), at most once per 30 s in the
// process, and the scavenger returns what the lower goal frees. Parking
// at a steady rate never ends a wave. With 10 000 keep-alive
// connections, one request each, the daemon's PSS grew by 11.8 KiB per
// connection 2 and 5 s after the last one, and with the collection by
// 11.1 and 8.1 KiB (the live heap then 1.1 KiB, the parked goroutines'
// stacks 3.8). debug.FreeOSMemory after the collections brought it to
// 5.3 KiB at 2 s, but it returns the pages at once on the calling
// goroutine's core, about 30 ms for 190 MiB during which that core runs
// nothing else: a stall the clients still active would see, so it is
// not done.
//
// HTTP/2 streams: http.Server.HTTP2.MaxConcurrentStreams. net/http has no
// "unlimited"; Off sets the largest value. HTTP/3 streams are quic-go's
// quic.Config.MaxIncomingStreams.
//
// HTTP/2's other settings stay net/http's defaults, because none of them
// makes a request cheaper. Measured with the daemon on one core behind
// TLS, 64 connections of 10 streams asking for 13 bytes (h2load), each
// setting alone, three rounds in turn, CPU per request min/median:
// defaults 58.4/59.7 µs; MaxReadFrameSize 16 KiB 60.1/63.4;
// MaxConcurrentStreams 250 64.5/64.9; MaxReceiveBufferPerStream 65 535
// bytes 62.8/64.0; WriteByteTimeout 10 s 61.7/64.4 (it sets and clears a
// write deadline around every write to the connection); a second series
// of the defaults gave 58.3/65.0, which is the noise. Every one left the
// system calls per request where they were (2.9 writes, 2.2 reads), which
// is where the time goes: a third of the CPU is in them. net/http writes a small
// answer's HEADERS and DATA frames in two TLS records and two writes (the
// handler waits for HEADERS to be written, and the connection's goroutine
// flushes whenever its queue is empty), and no setting changes that. The
// write scheduler is not a setting either: http.HTTP2Config has no field
// for it, and net/http's bundled server always uses x/net's round-robin
// scheduler.
//
// Data rates: net/http has none, but http.ResponseController can set read
// and write deadlines per request (per stream on HTTP/2). [MinRateReader]
// sets the read deadline before each Read to the moment the body's average
// rate would fall below the minimum, so a stalled upload is cut by the
// runtime's timers with no goroutine of its own. [MinRateWriter] gives
// each Write max(grace, size/rate) while it waits for the client and
// clears the deadline after it, so a handler's own pauses (an event
// stream) are never judged; what net/http still holds in its buffer when
// the handler returns is flushed without it. Under [Limits.Handler], over
// HTTP/1.x and HTTP/2, a write that stays within net/http's response
// buffer (2 KiB since the last flush) cannot wait for the client and sets
// no deadline: on HTTP/2 each deadline is a message to the connection's
// goroutine and a timer, which a small answer no longer pays. Both replace the
// connection's ReadTimeout or WriteTimeout deadline while they run: use
// them instead of those. [Limits.Handler] wraps every request, and only a
// request that became an upgrade is exempt: once the handler hijacked the
// connection (before it writes the 101) or answered a CONNECT with a 2xx,
// nothing more is judged and the rate deadlines are cleared, and an
// upgraded connection is bounded by the proxy's idle timeout instead (as
// in Kestrel). A request that merely carries Upgrade, or is a CONNECT not
// yet answered, is judged like any other, so the header cannot lift the
// rates from a slow body.
//
// # Framing guard
//
// net/http serves a request that has both Content-Length and
// Transfer-Encoding: chunked (it drops Content-Length and reads the body
// chunked) and keeps the connection, so a request pipelined after it is
// served too. RFC 9112 section 6.1 says a server must close the connection
// after answering such a request, and nginx refuses it with 400: a front
// proxy that frames by Content-Length would see a different request
// boundary than net/http (request smuggling). net/http also drops
// Transfer-Encoding on an HTTP/1.0 request, which RFC 9112 says to treat as
// faulty framing. A Listener refuses both: net/http answers 400 Bad Request
// with Connection: close and closes, and nothing after it on that
// connection reaches a handler.
//
// The check cannot be made in a handler, since net/http has removed both
// header fields before it runs, so it is made at the connection: each
// connection runs a small state machine over the bytes net/http reads. It
// follows each request as net/http reads it: the request line's method and
// version; at the start of each header line, Content-Length,
// Transfer-Encoding and Upgrade (folded lines too; any other line is
// skipped with bytes.IndexByte); then the body by Content-Length, or by
// chunk-size lines, chunk data and trailers. So it tracks pipelined
// requests. A forbidden combination is complete at the ':' after the
// second header's name, and that byte is in the buffer the Read is about
// to return, unread by net/http (a name split across reads is carried
// over): the guard overwrites it with a NUL, net/textproto refuses the
// header block ("malformed MIME header"), and net/http itself answers 400
// with Connection: close and closes. The guard never answers or closes on
// its own, so net/http's error handling stays the only one; after a
// refusal it follows nothing more.
//
// The guard stops following a connection, and from then on passes every
// byte untouched, when the bytes are not HTTP/1.x it can follow:
//
//   - TLS: a Listener below crypto/tls sees ciphertext (its first byte,
//     0x16, is not a method). The guard cannot see requests behind TLS, so
//     it protects plain-HTTP listeners, and TLS listeners only where TLS is
//     ended in front of them.
//   - HTTP/2: a request line with version HTTP/2.0, as in the h2c
//     prior-knowledge preface "PRI * HTTP/2.0".
//   - An upgrade: after a 101 or a CONNECT's 2xx the bytes belong to
//     another protocol. With [Limits.Apply]'s ConnState hook, net/http
//     tells the guard when a handler hijacks the connection, and the guard
//     stops there, so a request that merely asks for an upgrade (Upgrade:
//     x) cannot turn it off. Without the hook (or where the connection
//     reaches net/http through a wrapper without a NetConn method), the
//     guard stops after the head of the first request with an Upgrade
//     header or the CONNECT method.
//   - Anything else it cannot follow: a byte no request line starts with,
//     a version other than HTTP/1.x, or framing net/http refuses (a bad
//     Content-Length, another transfer coding, a malformed chunk). net/http
//     answers those with an error and closes, so nothing is lost.
//
// A client that sends tunnel bytes before it has the 101 (which WebSocket
// and h2c forbid) has them read as HTTP until the hijack; they are altered
// only if they form a request head with a forbidden framing.
//
// Cost: no goroutine, no buffer, no allocation per Read; a few words of
// state per connection carry a name, a value or a chunk-size line across
// reads. On a busy 2-core machine BenchmarkFramingGET measured 0.4 to
// 0.9 µs per keep-alive GET of 430 bytes (13 header lines), where
// http.ReadRequest of the same request took 5 to 11 µs, and
// BenchmarkFramingChunkedUpload 3 to 7 µs per MiB of chunked body in
// 16 KiB chunks (bodies are skipped, not read).
//
// # Wiring
//
//	limits := listenlimits.Limits{}                  // defaults
//	srv := &http.Server{Handler: limits.Handler(h)}  // data rates
//	_ = limits.Apply(srv)                            // net/http's own limits, word of hijacks
//	ln = &connlimit.Listener{Listener: ln, Limiter: lim} // above PROXY protocol, if any
//	ln = limits.Listener(ln)                          // shed, handshake deadline, framing
//	srv.Serve(tls.NewListener(ln, tlsConfig))         // or srv.Serve(ln) for plain HTTP
//
// # Concurrency
//
// Limits is a value. A Listener, an Upgrades and the connections a
// Listener returns are safe for concurrent use and lock-free, except that
// deadline changes take a per-connection mutex until the handshake ends.
// A connection knows when its wrapped connection has no read (write)
// deadline, without a lock, so clearing it again costs no call: net/http
// clears both, already clear, once per request.
// The framing guard of a connection belongs to its reading goroutine
// (net/http reads from one at a time).
// MinRateReader and MinRateWriter belong to their request's handler, like
// the body and ResponseWriter they wrap.
package listenlimits
