// Package proxyproto reads the PROXY protocol, versions 1 and 2, that load
// balancers such as HAProxy, AWS NLB, Google and Azure load balancers put
// in front of a TCP stream to tell the server who the client is.
//
// [Parse] decodes a header from a byte slice without allocating. It is
// strict as the specification requires: anything malformed is an error
// with a [Reason] ([*ParseError], matching [ErrInvalidHeader]), never a
// guess; input that cannot begin a signature is [ErrNoProxyHeader], decided
// from the first byte that rules both signatures out; a proper prefix of a
// possible header is [ErrIncomplete]. Addresses are [netip.AddrPort]
// values as sent: an IPv4-mapped IPv6 address stays IPv6 in [Header], and
// is unmapped by [Conn.RemoteAddr], [Conn.LocalAddr] and the trusted-source
// check of [Listener]. v2 TLVs are checked while parsing (framing, CRC32C,
// UNIQUE_ID length, SSL structure) and otherwise left alone; [Header.TLVs]
// iterates them without allocating, and [TLV] has helpers for the SSL TLV
// and the AWS, Azure and Google Cloud endpoint IDs. [Header.AppendTo]
// encodes a header, for tests and for proxies that send one.
//
// [Listener] wraps a [net.Listener] whose clients are proxies. The header
// is mandatory; it is accepted only from [Config.TrustedProxies], and
// every other connection is closed before a byte is read. Each trusted
// connection has its header read by its own goroutine, within
// [Config.HeaderTimeout] of accept, and only connections with a complete,
// valid header reach Accept, as [*Conn] values whose RemoteAddr is the
// client's. A client that stalls inside its header therefore delays
// nobody else, and a refused connection never makes Accept fail. For a
// LOCAL header (health checks) or a v1 UNKNOWN one, the socket's own
// addresses apply. [ReadConn] does the same work for one connection, for
// servers with their own accept loop.
//
// The reader consumes exactly the header: it reads what the socket
// delivers into a buffer, and bytes that follow the header (even another
// PROXY header) are returned by the Conn's first reads. A header split
// across several TCP segments is reassembled, within the deadline.
//
// Configuration is a plain [Config] per Listener; the package has no
// process-wide settings. Listener, Conn and the parse functions are safe
// for concurrent use; a [TLVIter] belongs to one goroutine.
//
// # Compared with github.com/pires/go-proxyproto
//
// The tests fuzz Parse against go-proxyproto v0.15.0. Its documented
// differences: it does not check TLVs while parsing (overruns, dangling
// bytes), has no CRC32C support, accepts UNIQUE_ID values over 128 bytes
// and malformed SSL TLVs — all refused here; it refuses v2 headers longer
// than its process-wide 4096-byte limit, which the specification allows
// (here the limit is [Config.MaxHeaderLength]); and it cuts UNIX paths at
// the first NUL, losing abstract socket names.
//
// Reading a header off a connection with [ReadConn] (BenchmarkStream,
// counted with callgrind) takes about 900 instructions for a v2 TCP4
// header, 1,060 for v2 TCP6 with two TLVs, 1,330 for a v1 TCP4 line and
// 1,950 for v1 TCP6, and one allocation, the Conn; go-proxyproto's Read
// over a reused bufio.Reader takes 5,290, 8,760, 6,700 and 9,930, and 7
// or 8 allocations. On a busy machine the Conn's allocation, not the
// parse, is most of ReadConn's time.
//
// Not covered: the UDP rule of the specification (one header per
// datagram) needs a per-datagram API, which is Parse applied to each
// datagram; the Listener is for streams only.
package proxyproto
