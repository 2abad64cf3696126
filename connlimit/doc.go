// Package connlimit is the connection stage that runs before TLS: a deny
// list of prefixes and a cap on the concurrent connections of each client
// address, with trusted proxies exempt. It is a leaf package: of this
// module it imports only the internal address rules it shares with the
// gate and the PROXY-protocol listener, and any Go server can use it alone.
//
// # Decision
//
// [Limiter.Admit] decides about a new connection in this order:
//
//  1. The deny list ([Config].Deny), for every address, trusted proxies
//     included: the operator's explicit list wins. Refused: [ErrDenied].
//  2. With the cap off ([Off]), or from a trusted proxy
//     ([Config].TrustedProxies): admitted and never counted. Every visitor
//     behind a trusted proxy shares its address; those visitors are judged
//     by their real address later, per request, not here.
//  3. The table: counted, or refused with [ErrOverCap] when the address
//     key already holds the cap (256 by default, at most 100 000).
//
// The address key is the whole IPv4 address or the IPv6 /64 (one host
// usually owns a /64). An IPv4-mapped IPv6 address is its IPv4 address, so
// a dual-stack TCP socket (which reports ::ffff:a.b.c.d) and QUIC (which
// reports a.b.c.d) count the same key. The prefixes of Deny and
// TrustedProxies follow the same rule as everywhere in the library: an
// IPv4-mapped prefix of /96 or longer is the IPv4 prefix it maps, a
// shorter one is refused by [Config.Validate], and an IPv6 prefix holds no
// IPv4 address (::/0 is all of IPv6).
//
// # Unknown client addresses
//
// A connection whose client address is unknown is never exempt from the
// cap: its address is the invalid [netip.Addr], which no prefix of the
// deny list or of TrustedProxies holds, and all such connections count
// under one shared key, as if they were one client. They are a Unix socket
// peer, a PROXY header with UNIX addresses (its RemoteAddr is a
// *net.UnixAddr, whatever the path says; see [AddrOf]), or any net.Addr
// that holds no IP address. A flood of them uses up one cap, the unknown
// client's, and nobody else's.
//
// A PROXY LOCAL header (and a v1 UNKNOWN one) is different: it means the
// proxy opened the connection itself (health checks), and the
// PROXY-protocol listener reports the socket's own peer, the proxy, which
// is judged as any address is: counted under the proxy's key, or exempt if
// the proxy is in TrustedProxies. List a PROXY-protocol load balancer
// there only if its own connections should go uncounted.
//
// # The table
//
// The counts live in a fixed table of 64-bit entries (65 536 by default,
// 512 KiB), each a 40-bit tag of the key's hash and a 24-bit count, changed
// only by compare-and-swap. A key probes the 8 entries of its bucket (one
// cache line). The hash is seeded at random per Limiter, so nobody can
// choose addresses that crowd someone else's bucket. An entry whose count
// is back at 0 keeps its tag until another address needs the place.
//
// The table bounds memory, so a flood from very many addresses can fill a
// bucket. A connection that finds no room is admitted uncounted (fail open)
// and [Stats].TableFull counts it: the cap stops applying to new addresses
// in that bucket, but nothing is refused that should not be.
//
// Admit returns a [Ticket] naming the entry it counted in, and
// [Limiter.Release] gives exactly that place back, so counts never drift
// and never go negative. One race is accepted: two connections of a new
// address admitted at the same instant may claim two entries, letting that
// address briefly hold up to twice its cap. A count at the field's maximum
// is treated as over any cap.
//
// # TCP
//
// [Listener] wraps a net.Listener below crypto/tls. A refused connection is
// closed unread, so the client sees its connection closed with no TLS
// handshake, and Accept goes on to the next connection without waiting. A
// counted connection gives its place back when it is closed; net/http
// closes every connection it accepts, however its handler ends, including
// hijacked ones once the hijacker closes them. The address judged is the
// accepted connection's RemoteAddr: under a PROXY-protocol listener that is
// the PROXY source, so each visitor of a trusted load balancer counts as
// itself. The order of listeners in a server is therefore:
//
//	TCP accept -> PROXY protocol -> connlimit.Listener -> crypto/tls -> net/http
//
// # QUIC
//
// QUIC connections are judged in two steps, because a source address is
// spoofable until the handshake completes and a handshake can fail after
// it started:
//
//   - [Limiter.QUICConnContext], set as quic.Transport.ConnContext, refuses
//     denied addresses and addresses already at their cap at the first
//     Initial packet, before any cryptography (the client sees
//     CONNECTION_REFUSED). It takes no place.
//   - [Limiter.HTTP3ConnContext], set as http3.Server.ConnContext, or
//     [Limiter.AdmitQUIC] for other QUIC protocols, counts the connection
//     once its handshake has completed and gives the place back when the
//     connection's context ends. A connection refused there is closed with
//     [QUICRefusedCode].
//
// Handshakes in flight are not counted: a burst of simultaneous handshakes
// from one address can pass the cap by the size of the burst, while its
// established connections cannot. A spoofed handshake never takes a place.
//
// # Refusals and dry runs
//
// [Config].OnRefusal is told of each refusal ([Refusal]: the address, the
// transport, [ErrDenied] or [ErrOverCap]) before the connection is closed,
// whichever entry point refused it: Admit and Check, the [Listener], the
// QUIC hooks.
//
// With [Config].DryRun the Limiter decides and keeps nothing: a denied
// address is refused as ever, no connection takes a place (there is no
// table, so the cap is never reached), and no counter or log record
// moves. Only OnRefusal hears of what it refused. A simulator runs the
// real connection stage so, through the same Listener and QUIC hooks a
// server uses, without touching anything a server counts.
//
// # Concurrency and cost
//
// A Limiter is immutable after [New] apart from its atomic counts and
// counters; all its methods are safe for concurrent use. Admit, Check and
// Release take no lock and allocate nothing. The Listener allocates one
// small wrapper per counted connection (none for uncounted ones); the QUIC
// hook allocates one context.AfterFunc registration per counted
// connection. [Limiter.Stats] sums the table on each call (O(table size)),
// so the connection path pays for no shared counter.
//
// # What is left out
//
// A rate limit on new connections per address (new connections per
// second), per-listener caps, and weighting the cap by transport.
//
// # Logs
//
// With [Config].Logger set, refusals are logged at Info level at most once
// per [LogInterval] per reason, with how many there were and the latest
// address, so a flood is counted rather than logged line by line.
package connlimit
