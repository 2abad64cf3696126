package simulate

import "net/http"

// Kind says what became of a simulated request.
type Kind string

// The kinds of outcome.
const (
	// ConnectionRefused: the connection stage closed the connection
	// before TLS or HTTP (Outcome.Stage: "proxyProtocol" or
	// "connections").
	ConnectionRefused Kind = "connectionRefused"
	// TLSRefused: the handshake failed: an unknown or missing SNI the
	// table refuses, no HTTP/3 for the name, a TLS version or ALPN the
	// name does not take, or no TLS configured at all.
	TLSRefused Kind = "tlsRefused"
	// ServerRefused: the HTTP server answered before the gate saw the
	// request (400 for a malformed request, a PROXY header on a listener
	// that expects none), or closed the connection.
	ServerRefused Kind = "serverRefused"
	// Misdirected: 421, the connection is weaker than the host allows.
	Misdirected Kind = "misdirected"
	// Answered: the gate answered itself: a policy's answer or
	// challenge, a fixed host, robots.txt, an ACME challenge, a limit
	// (413, 414, 431) or a refused path (400).
	Answered Kind = "answered"
	// Redirected: a host redirect or the HTTPS redirect (Outcome.Location).
	Redirected Kind = "redirected"
	// NotFound: no host has the name (the default answer), or no route
	// matches the path.
	NotFound Kind = "notFound"
	// Dropped: a policy closes the connection without an answer.
	Dropped Kind = "dropped"
	// Forwarded: the request goes to a route's target (Outcome.Upstream
	// when it is the proxy's).
	Forwarded Kind = "forwarded"
)

// Outcome is what a simulated request gets.
type Outcome struct {
	Kind Kind `json:"kind"`
	// Stage names the step that decided: "proxyProtocol",
	// "connections", "handshake", "server", or a gate step ("policy",
	// "tls", "route", "limits", "path", "request", "acme", "host",
	// "redirect", "answer", "hand-over").
	Stage string `json:"stage"`
	// Reason is that step's own reason.
	Reason string `json:"reason,omitempty"`
	// Status is the status answered; 0 for a forward (the upstream
	// answers), a drop and a refused connection or handshake.
	Status int `json:"status,omitempty"`
	// Location is a redirect's target.
	Location string `json:"location,omitempty"`
	// Protocol is the HTTP version the request was sent with, after the
	// handshake settled it: "HTTP/1.1", "HTTP/2.0" or "HTTP/3.0".
	Protocol string `json:"protocol,omitempty"`
	// Host is the first configured name of the matched host and
	// HostMatch how it matched ("exact", "wildcard", "unknown").
	Host      string `json:"host,omitempty"`
	HostMatch string `json:"hostMatch,omitempty"`
	// Route is the matched route's ID, or its path when it has none.
	Route string `json:"route,omitempty"`
	// Match says why the route won (the route it won over and the key of
	// precedence that decided, and a route of higher precedence whose
	// path matched with the match it failed) or, when no route matched,
	// which route came nearest (its path matched) and which of its
	// matches failed.
	Match string `json:"match,omitempty"`
	// Policy is the ID of the policy that answered or dropped.
	Policy string `json:"policy,omitempty"`
	// Upstream is where a forwarded request goes: on a route with
	// backends, the upstream of the side Split names.
	Upstream *Upstream `json:"upstream,omitempty"`
	// Split says, on a route with backends, which side the request goes
	// to and why; nil on a route with one upstream.
	Split *Split `json:"split,omitempty"`
	// Mirror says, on a route that mirrors, whether the request would be
	// copied to the mirror; nil on a route that mirrors nothing. A
	// simulation sends nothing to a mirror.
	Mirror *Mirror `json:"mirror,omitempty"`
	// Forward says, for a forward, the path and query the upstream would
	// receive (the route's rewrite applied) and the route's timeouts.
	Forward *Forward `json:"forward,omitempty"`
	// Headers says, for each of Server, Alt-Svc,
	// Strict-Transport-Security and X-Request-Id, the value the answer
	// carries or why it carries none.
	Headers []HeaderFact `json:"headers,omitempty"`
	// Header holds the response headers as sent, without Date; for a
	// forward, those the gateway sets before and on the upstream's
	// answer (which adds its own).
	Header http.Header `json:"header,omitempty"`
}

// HeaderFact is one response header: Value when the answer carries it,
// else Absent says why not.
type HeaderFact struct {
	Name   string `json:"name"`
	Value  string `json:"value,omitempty"`
	Absent string `json:"absent,omitempty"`
}

// Upstream is the upstream a request is forwarded to, with its
// destinations as the target config names them and their health now.
// Which destination serves is the balancer's choice at that moment, so it
// is never named.
type Upstream struct {
	ID           string        `json:"id"`
	Destinations []Destination `json:"destinations"`
	// Available counts the destinations that would take the request now.
	Available int `json:"available"`
	// Note says where the health comes from.
	Note string `json:"note"`
	// Connection is what a new connection to a destination presents of
	// the gateway; nil when it presents nothing (no client certificate,
	// no PROXY header).
	Connection *UpstreamConnection `json:"connection,omitempty"`
}

// Destination is one destination of an upstream.
type Destination struct {
	ID      string `json:"id"`
	Address string `json:"address"`
	// Health is the live verdict ("healthy", "unhealthy", "unknown") of
	// the live destination with the same upstream ID, destination ID and
	// address; "unknown" when the live gateway has none such.
	Health string `json:"health"`
	// Available reports whether the live balancer would consider it.
	Available bool `json:"available"`
	// Live reports whether the live gateway has this destination.
	Live bool `json:"live"`
}
