// Package gate is the per-request decision pipeline of a gateway: it takes
// one immutable [Gate], resolves the client, finds the host, answers what
// the host answers itself (redirects, fixed answers, the default answer for
// unknown hosts), matches the route and hands the request over to the
// route's [Target] — usually the proxy's forwarder, or any code of the
// embedder's.
//
// A Gate is built from a plain [Config] by [New] and never changes: to
// change anything, build a new Gate and swap it in (the snapshot package
// does that behind one atomic pointer). Because a request reads one Gate and
// every later decision — host, policies, route, target — comes from it, a
// request never mixes two config generations.
//
// The pipeline, in order:
//
//  1. Client address: the socket peer, or, when the peer is a trusted proxy
//     ([Config.TrustedProxies]), the rightmost untrusted address of
//     X-Forwarded-For. The trusted scheme is the connection's, or
//     X-Forwarded-Proto from a trusted proxy when allowed.
//  2. Host lookup without allocation: exact names, then wildcard parents
//     from the most specific; port stripped, case folded. An unknown host
//     gets the default answer (404).
//  3. The host's Server header on every answer that follows.
//  4. Redirect and fixed-answer hosts answer from precomputed values.
//  5. Route match: the most specific path prefix, on segment boundaries;
//     404 if none matches.
//  6. Hand-over: [Target.Forward] with the per-request [Request] as a typed
//     argument. The gate does not use the request's context to carry state
//     (r.WithContext costs three allocations per request).
//
// The gate's own answers (404, 502, 503, 504, ...) carry the host's headers;
// targets write them with [Request.Answer].
//
// # Tracing
//
// Every step reports to a [Tracer] when one is set. The production setting
// is a nil *Tracer, which costs one predictable branch per step; the
// simulator passes a recording one.
//
// # Concurrency
//
// A Gate is safe for concurrent use. A [Request] belongs to one request and
// is reused after the target returns.
package gate
