// Package h1client is the forwarder's HTTP/1.1 client toward upstreams,
// and the reader that holds net/http's client to the same rules.
//
// # The client
//
// A [Client] keeps idle connections per [Destination] (an address and,
// over TLS, the server name, and the [ProxyHeader] a connection starts
// with, before TLS, when the PROXY protocol is on), reused last in first
// out. [Client.Do]
// writes a [Request] (the head the caller prepared and a body of known
// length) and reads the response head from the caller's own goroutine:
// no goroutine per connection, none of net/http's read and write loops,
// no channel per exchange. It is not an http.RoundTripper: the caller
// hands it what it has (the head's parts, the body, the destination) and
// an [Exchange] of its own, which Do fills and which is the response's
// body. The Exchange's header map is the caller's until its next Do, and
// a warm connection answering like fields allocates nothing
// (TestExchangeAllocatesNothing): names and values are interned per
// connection, buffers belong to the connection. Fields that come in the
// previous head's order cost one map write each, and none but for changed
// values when the map still holds the previous head's fields (a
// three-field head's map in BenchmarkForwardH1: 2.7k instructions per
// exchange before, 0.85k). A context that can end
// is watched with context.AfterFunc, which allocates five objects.
//
// On plain TCP (unix), a request without a body is written from inside
// the wait of its answer's first read (syscall.RawConn.Read): the read
// parks in the poller at once instead of first finding nothing, one
// read system call per exchange fewer (the keep-alive benchmark through
// the proxy: 9 reads per request to 8, 17.2 system calls to 16.2). The
// poller's readiness is reset before the write, so an answer arriving
// after it always wakes the read; a write the socket does not take whole
// goes on the usual way. Taking a pooled connection and putting it back
// look its destination up once each, and the head's fields are sorted
// with their values (BenchmarkForwardH1 under callgrind, two runs each,
// the whole process: 168.2k to 168.9k instructions per request before
// the three changes, 166.1k to 168.4k after; appendHead 3265 to 2559,
// the pool's put 1078 to 587).
//
// The head is written byte for byte as net/http's client writes it, and
// what net/http refuses to send Do refuses too, with a *[RequestError]
// (FuzzRequestHead holds the two to each other). A pooled connection
// the upstream wrote on or closed while it was idle is never reused:
// its bytes would be read as the next request's answer (a response
// desync), and a half-closed upstream that never answers would hold the
// request to its deadline. A read before the write finds them (on the
// raw path inside the same read wait, one system call; otherwise a
// peek); the connection is closed and the request goes on another, with
// nothing written (TestStaleIdleConnectionNotReused). The check costs
// the raw path part of its win: 16.0 system calls per request through
// the proxy to 16.75, where a read that finds nothing before the write
// cost 17.2. A connection, pooled or new, that the upstream closes or
// resets after the request and before any answer (closed after the
// check, a process that exits, a listener closed with connections in its
// accept queue) costs a request without a body and with an idempotent
// method nothing: it is sent again on another connection, once after a
// new connection's drop (TestDroppedRequestIsSentAgainOnce); a dial
// refused then is a
// [DialError], which the proxy sends elsewhere. A timeout is not a drop
// and is never sent again (TestTimedOutRequestIsNotSentAgain).
//
// Connections are bounded per address when [Config.MaxConnsPerDestination]
// is set: a request that finds no idle connection and the address at its
// bound waits for one to go idle or close (an idle one kept for another
// server name or PROXY header gives its place up), as long as its context
// allows ([WaitError]). [Config.MaxPending] bounds the requests waiting
// for a connection, dialing one included; past it a request is refused
// at once with [ErrPending], so a flood never builds a queue. Each
// connection of a bounded address gives its place back on its first
// close, whichever path closes it.
//
// What it does not carry is its caller's to send with another client
// ([Carries]): an upgrade, Expect: 100-continue (the body waits for the
// upstream), and uploads of unknown length or with trailers, which may
// stream both ways while Do reads the answer only once the body is
// written. Upgrades and Expect could be carried on the one goroutine
// (the tunnel is the connection after the 101; the wait is a read
// deadline); streaming uploads need a second goroutine, as net/http has.
//
// # One set of rules
//
// Responses are read strictly, as RFC 9112 asks of a proxy (head.go
// lists the rules): a refused head fails the exchange as a bad response,
// a refused body framing cuts the body, and the connection is closed.
// The same rules, in the same code, read what net/http's client reads: a
// [CheckedConn] wraps each of its connections, follows the responses a
// step ahead of net/http's reader, and fails the read that would hand
// over the end of a refused head, chunk-size line or trailer line. So an
// answer that one client refuses, the other refuses too
// (FuzzCheckerAgrees holds the two readers to each other; the proxy's
// TestMalformedUpstreamAnswers runs every bad answer on every path). It
// also remembers the Connection fields net/http deletes.
//
// # Concurrency
//
// A Client is safe for concurrent use; a connection carries one exchange
// at a time. An Exchange is read from one goroutine; its Close may come
// from another while it is in use. A CheckedConn is armed by the
// goroutine that hands it to an exchange and read by net/http's reader.
package h1client
