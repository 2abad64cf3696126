// Package listenlimits states the limits a public listener puts on its
// clients and applies them to a net/http server: how long a client may
// take to finish its TLS handshake and its request headers, how long an
// idle keep-alive connection waits, how many connections, upgraded
// connections and HTTP/2 streams there may be, and the minimum data rates
// of request bodies and responses. A daemon and any program that embeds
// the library use the same [Limits] value.
//
// # Main types
//
//   - [Limits]: a plain struct whose zero value gives every default
//     (header timeout 15 s, keep-alive idle 120 s, TLS handshake 10 s,
//     32 KiB of headers, 10 000 connections, 2 000 upgraded connections,
//     100 HTTP/2 streams, 120 B/s of request body and 240 B/s of response
//     after 10 s). In each field 0 means the default and a negative value
//     ([Off]) turns the limit off. [Limits.Validate] reports every problem
//     with a stable code.
//   - [Limits.Apply] sets what net/http enforces itself on an *http.Server.
//   - [Listener] sheds connections above MaxConnections and bounds the TLS
//     handshake.
//   - [Limits.Handler], [MinRateReader] and [MinRateWriter] enforce the
//     minimum data rates.
//   - [Upgrades] caps upgraded connections; a proxy calls it around an
//     upgrade.
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
// HTTP/2 streams: http.Server.HTTP2.MaxConcurrentStreams. net/http has no
// "unlimited"; Off sets the largest value. HTTP/3 streams are quic-go's
// quic.Config.MaxIncomingStreams.
//
// Data rates: net/http has none, but http.ResponseController can set read
// and write deadlines per request (per stream on HTTP/2). [MinRateReader]
// sets the read deadline before each Read to the moment the body's average
// rate would fall below the minimum, so a stalled upload is cut by the
// runtime's timers with no goroutine of its own. [MinRateWriter] gives
// each Write max(grace, size/rate) while it waits for the client and
// clears the deadline after it, so a handler's own pauses (an event
// stream) are never judged; what net/http still holds in its buffer when
// the handler returns is flushed without it. Both replace the
// connection's ReadTimeout or WriteTimeout deadline while they run: use
// them instead of those. Upgraded connections are never judged by rates
// (as in Kestrel); a proxy bounds them with an idle timeout of its own.
//
// # Wiring
//
//	limits := listenlimits.Limits{}                  // defaults
//	srv := &http.Server{Handler: limits.Handler(h)}  // data rates
//	_ = limits.Apply(srv)                            // net/http's own limits
//	ln = &connlimit.Listener{Listener: ln, Limiter: lim} // above PROXY protocol, if any
//	ln = limits.Listener(ln)                          // shed, handshake deadline
//	srv.Serve(tls.NewListener(ln, tlsConfig))
//
// # Concurrency
//
// Limits is a value. A Listener, an Upgrades and the connections a
// Listener returns are safe for concurrent use and lock-free, except that
// deadline changes take a per-connection mutex until the handshake ends.
// MinRateReader and MinRateWriter belong to their request's handler, like
// the body and ResponseWriter they wrap.
package listenlimits
