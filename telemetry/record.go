package telemetry

import (
	"net/netip"
	"time"
)

// Record is one finished request as the gateway saw it: what an
// [Observer] and the access log receive. The gate fills it from the
// request it decided and the target (the forwarder) adds what happened
// upstream; strings point into the request and the compiled config, so
// filling it allocates nothing.
type Record struct {
	// Start is when the gate began deciding; Duration runs to the end of
	// the answer (its last byte handed to the connection).
	Start    time.Time
	Duration time.Duration
	// Client is the resolved client address, Peer the connection's peer
	// (the PROXY-protocol source when there was one).
	Client netip.Addr
	Peer   netip.AddrPort
	// Method, Host and Path are the request's as the client sent them
	// (Path without the query); Proto is "HTTP/1.1", "HTTP/2.0" or
	// "HTTP/3.0".
	Method, Host, Path, Proto string
	// TLSVersion is the connection's TLS version (tls.VersionTLS13...), 0
	// over plain HTTP; SNI the server name of its handshake.
	TLSVersion uint16
	SNI        string
	// Status is the status answered: the upstream's, or the gateway's own
	// (499 when the client went away first); 0 when the request was
	// dropped without an answer.
	Status int
	// BytesIn counts the request body bytes read, BytesOut the response
	// body bytes written.
	BytesIn, BytesOut int64
	// HostID and RouteID name the host and route that matched, as the
	// metrics label them; empty when none did.
	HostID, RouteID string
	// Upstream and Destination name the cluster and the destination of the
	// last attempt; empty when nothing was forwarded.
	Upstream, Destination string
	// Error is the kind of failure the answer stands for ("connect",
	// "timeout", "dropped", ...), empty when there was none.
	Error string
	// RequestID is the request's X-Request-Id as forwarded, if any.
	RequestID string
	// Retries counts the attempts after the first.
	Retries int
	// Split says why a route with weighted backends sent the request to
	// the side Upstream names ("weight", "sticky", "forced",
	// "fallback"); empty on a route with one upstream.
	Split string
	// Mirror says what became of a request sampled for mirroring
	// ("sent", "dropped", "tooLarge", "incomplete"); empty when it was
	// not sampled, or its route mirrors nothing.
	Mirror string
	// Gate is the time from Start to the hand-over to the target; TTFB the
	// time from sending to the upstream to its response header (0 when
	// nothing was forwarded).
	Gate, TTFB time.Duration
}

// Observer receives every finished request. ObserveRequest runs on the
// request's goroutine after the answer was written, so it adds to every
// request's latency and must not block: copy what it needs and return.
// rec is valid only during the call.
type Observer interface {
	ObserveRequest(rec *Record)
}
