package proxy

import (
	"net/http"

	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/h1client"
)

// HTTP1Client chooses the client a [Transport] speaks HTTP/1.1 with: to
// plain-text destinations, and to TLS ones when its version is HTTP11.
// The choice is the cluster's, made once in [NewTransport].
type HTTP1Client uint8

const (
	// HTTP1Default is the library's choice (the zero value): HTTP1Direct.
	HTTP1Default HTTP1Client = iota
	// HTTP1Direct writes the request and reads the response on a pooled
	// connection from the forwarding goroutine itself, with none of
	// net/http's per-connection read and write loops. A request it does
	// not carry (see [HTTP1Fallback]) goes through net/http's client,
	// counted by reason in the cluster's [Stats]. A request without a
	// body and with an idempotent method that the destination read and
	// dropped (it closed or reset the connection, new or pooled, before
	// any answer, as a process that exits does) is sent again once on a
	// new connection; a destination that exited refuses that one, and
	// the request goes to another destination under [ConnectFailures].
	HTTP1Direct
	// HTTP1NetHTTP sends every request with net/http's client, which
	// sends a dropped request again only when the connection was a
	// pooled one.
	HTTP1NetHTTP
)

var http1ClientNames = enum.Names[HTTP1Client]{"default", "direct", "netHTTP"}

// String returns the client's name: "default", "direct" or "netHTTP".
func (c HTTP1Client) String() string { return http1ClientNames.Name(c) }

// ParseHTTP1Client returns the client a name stands for.
func ParseHTTP1Client(name string) (HTTP1Client, bool) { return http1ClientNames.Parse(name) }

// HTTP1ClientNames returns the names of the HTTP/1.1 clients, the default
// first: the names a config document uses.
func HTTP1ClientNames() []string { return http1ClientNames }

// defaultHTTP1 is what HTTP1Default stands for. Only the package's tests
// change it, before any transport is made, to run the suite on both
// clients.
var defaultHTTP1 = HTTP1Direct

// HTTP1Fallback is why a request to a cluster whose HTTP/1.1 client is
// [HTTP1Direct] went through net/http's client instead: what the direct
// client does not carry. Every other request of such a cluster goes
// direct; net/http's reading of these answers is checked by the same
// rules (see [Transport]).
type HTTP1Fallback uint8

const (
	// FallbackUpgrade is a request that asks to switch protocols
	// (WebSocket): the tunnel after the 101 is net/http's connection.
	FallbackUpgrade HTTP1Fallback = iota
	// FallbackExpectContinue is a request with Expect: 100-continue,
	// whose body waits for the upstream's 100 or a timeout.
	FallbackExpectContinue
	// FallbackTrailers is an upload with trailers.
	FallbackTrailers
	// FallbackUnknownLength is an upload of unknown length (chunked):
	// such an upload may stream both ways, and the direct client reads
	// the answer only once the body is written.
	FallbackUnknownLength

	numFallbacks = iota
)

var http1FallbackNames = enum.Names[HTTP1Fallback]{"upgrade", "expectContinue", "trailers", "unknownLength"}

// String returns the reason's name: "upgrade", "expectContinue",
// "trailers" or "unknownLength".
func (f HTTP1Fallback) String() string { return http1FallbackNames.Name(f) }

// HTTP1FallbackNames returns the names of the reasons, in order: the
// reason label of the fallback metric.
func HTTP1FallbackNames() []string { return http1FallbackNames }

// http1Fallback returns why the direct client does not carry req, or
// false when it does. Carries, which refuses upgrades too, is asked
// first: the header is looked up again only for a request it refuses.
func http1Fallback(req *http.Request) (HTTP1Fallback, bool) {
	switch {
	case !h1client.Carries(req.Header):
		if req.Header["Upgrade"] != nil {
			return FallbackUpgrade, true
		}
		return FallbackExpectContinue, true
	case req.Trailer != nil:
		return FallbackTrailers, true
	case req.Body != nil && req.ContentLength <= 0:
		return FallbackUnknownLength, true
	}
	return 0, false
}
