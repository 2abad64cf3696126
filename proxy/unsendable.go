package proxy

import (
	"net/http"
	"strings"

	"golang.org/x/net/http/httpguts"
)

// Requests the outgoing clients refuse.
//
// A request that the clients toward upstreams refuse before a byte of it
// is sent, for what the request itself holds, is the client's doing: it
// is answered 400 (431 for too many header bytes), counted as
// [upstream.RequestInvalid], and never observed against the destination,
// which never saw it. Otherwise any
// client could take every destination out of rotation with a handful of
// requests no upstream would ever have received.
//
// Every such refusal of the clients (the direct HTTP/1.1 client refuses
// the same requests as net/http's, with an h1client.RequestError, so only
// net/http's are listed; Go 1.26, net/http's bundled HTTP/2), what lets
// such a request reach the forwarder (net/http's HTTP/1.1 and HTTP/2
// servers, quic-go's HTTP/3 server), and where it is closed:
//
//   - A method that is not a token (validMethod, in Transport.roundTrip:
//     HTTP/1.1 and h2c; over TLS only until a pooled HTTP/2 connection
//     exists, which then takes the request before the check and sends any
//     method): HTTP/2's server takes any non-empty :method ("GET /x",
//     "GE(T", "GET\t"); HTTP/1.1's and HTTP/3's refuse it. The gate
//     answers 400. An empty method is refused by all three servers (and
//     would be sent as GET).
//   - A field name that is not a token, or a value with a control
//     character other than HTAB (ValidHeaderFieldName/Value, on the
//     header and the trailer): all three servers refuse such a field
//     (net/http's readRequest, HTTP/2's HPACK decoding, quic-go's
//     validateHeaderFieldNameAndValue); the route's header rules are
//     checked when built, and forward-auth's identity fields were read by
//     net/http's client (textproto), which refuses the same. Not read
//     again.
//   - A declared trailer name that is not a token: the Trailer field's
//     names are taken unchecked by all three servers (fixTrailer,
//     NewServerRequest, extractAnnouncedTrailers; HTTP/3 even declares ""
//     for "Trailer: ,"). The gate answers 400. Trailer, Content-Length
//     and Transfer-Encoding as trailers (HTTP/2's commaSeparatedTrailers)
//     are never declared upstream: the gateway owns them.
//   - A Host that is not valid (ValidHostHeader; HTTP/2 refuses it,
//     HTTP/1.1 sends an empty Host instead) or whose IDNA conversion fails
//     (PunycodeHostPort, both: "xn--ü.test"; other non-ASCII names are
//     sent in punycode): HTTP/2's and HTTP/3's servers take any
//     :authority without "@", and HTTP/1.1's takes an absolute-form
//     target's host unchecked. The gate's host table refuses every Host
//     that is not letters, digits, "-", "_" and dots, an IPv6 literal or
//     digits for a port: such a request gets the unknown host's answer,
//     never a route. A custom or destination Host is checked when the
//     route is built.
//   - A control character in the target (HTTP/1.1's Request.write): all
//     three servers refuse one (url.ParseRequestURI), and the gate's path
//     view refuses what survives escaping. A raw space, which HTTP/2 and
//     HTTP/3 take, is refused by the gate in the path and the query: no
//     client refuses it, but an HTTP/1.1 request line cannot carry it.
//   - A :path that neither starts with "/" nor is "*" (HTTP/2's
//     validPseudoPath): the gate's path view starts with "/".
//   - Connection-specific fields (HTTP/2's checkConnHeaders: Upgrade,
//     Transfer-Encoding, a Connection other than close or keep-alive):
//     the forwarder removes them, except on an upgrade, which it forwards
//     with Connection: Upgrade. net/http sends a websocket upgrade over
//     HTTP/1.1 on a TLS connection even for an HTTP/2 cluster; any other
//     upgrade to an HTTP/2 cluster, and every one to an h2c cluster, is
//     refused, and answered 400 here.
//   - A header list over the upstream's SETTINGS_MAX_HEADER_LIST_SIZE
//     (HTTP/2's EncodeHeaders): any request within the gateway's own
//     limits may exceed a smaller one. Answered 431 here, as the upstream
//     itself would have answered over HTTP/1.1. Before the upstream's
//     SETTINGS arrive on a new connection, net/http sends such a request
//     anyway, and Go's server closes the connection with a GOAWAY:
//     COMPRESSION_ERROR for a field longer than its limit,
//     PROTOCOL_ERROR for a block over twice that. The same refusal, one
//     step later, answered the same way when the request's header list
//     is at least [minHeaderLimit], below the default limit of every
//     common server: an upstream that fails so on a shorter one is
//     blamed.
//
// The forwarder reads a request again only after its round trip failed
// with what would otherwise be a response header error: the refusals
// come back as plain errors, while a failed dial, handshake or timeout
// is the destination's however the request looks. A cluster that may
// negotiate either version over TLS (HTTP2 with VersionOrLower) is read
// against both clients' rules.

// refusal returns the status for a round trip of req to a destination of
// scheme that failed with err because the outgoing client (or, for its
// size, the upstream's HTTP/2 server) refused what req holds, or 0 when
// the failure may be the destination's. Only a [Transport]'s clients are
// known: a round tripper of one's own names its refusals with an Outcome
// method (see [upstream.ClassifyRoundTrip]).
func (rt *Route) refusal(req *http.Request, scheme string, err error) int {
	t, ok := rt.cluster.Transport.(*Transport)
	if !ok {
		return 0
	}
	h1, h2 := t.wires(scheme, req)
	if h2 && overLimit(req, err.Error()) {
		return http.StatusRequestHeaderFieldsTooLarge
	}
	if unsendable(req, h1, h2) {
		return http.StatusBadRequest
	}
	return 0
}

// errHeaderListText is the text of HTTP/2's refusal of a header list
// over the peer's limit (httpcommon.ErrRequestHeaderListSize, which
// net/http does not export).
const errHeaderListText = "request header list larger than peer's advertised limit"

// minHeaderLimit is the smallest header list, counted as HTTP/2 does
// (RFC 9113 section 6.5.2: name, value and 32 bytes a field), whose
// refusal by an upstream's GOAWAY is taken for the request's.
const minHeaderLimit = 4 << 10

// overLimit reports whether the round trip of req failed with msg
// because its header list was over an HTTP/2 upstream's limit: the
// client's own refusal, or the upstream's GOAWAY for a list of at least
// minHeaderLimit.
func overLimit(req *http.Request, msg string) bool {
	if strings.Contains(msg, errHeaderListText) {
		return true
	}
	if !strings.Contains(msg, "server sent GOAWAY") ||
		!strings.Contains(msg, "ErrCode=COMPRESSION_ERROR") && !strings.Contains(msg, "ErrCode=PROTOCOL_ERROR") {
		return false
	}
	n := 4*32 + len(":authority:method:path:scheme") + len(req.Host) + len(req.Method) + len(req.URL.RequestURI()) + len(req.URL.Scheme)
	for k, vv := range req.Header {
		for _, v := range vv {
			n += len(k) + len(v) + 32
		}
	}
	return n >= minHeaderLimit
}

// wires reports whether t may send req to a destination of scheme over
// HTTP/1.1, and whether over HTTP/2: both for an HTTP/2 cluster that
// negotiates the version over TLS.
func (t *Transport) wires(scheme string, req *http.Request) (h1, h2 bool) {
	if scheme != "https" {
		h2 = t.cfg.PlainTextVersion() == HTTP2
		return !h2, h2
	}
	if t.cfg.Version != HTTP2 || requiresHTTP1(req) {
		return true, false
	}
	return t.cfg.VersionPolicy == VersionOrLower, true
}

// requiresHTTP1 reports whether net/http sends req over HTTP/1.1 on a TLS
// connection whatever the cluster's version: a websocket upgrade.
func requiresHTTP1(req *http.Request) bool {
	return containsToken(req.Header["Connection"], "upgrade") && strings.EqualFold(firstValue(req.Header["Upgrade"]), "websocket")
}

func firstValue(vv []string) string {
	if len(vv) == 0 {
		return ""
	}
	return vv[0]
}

// unsendable reports whether the HTTP/1.1 client (h1) or the HTTP/2 one
// (h2) refuses req before sending it, for what req holds: the checks of
// net/http's Transport.roundTrip, Request.write and HTTP/2's
// EncodeHeaders, in that order.
func unsendable(req *http.Request, h1, h2 bool) bool {
	if req.Method != "" && !httpguts.ValidHeaderFieldName(req.Method) {
		return true
	}
	if !validFields(req.Header) || !validFields(req.Trailer) {
		return true
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	host, err := httpguts.PunycodeHostPort(host)
	if err != nil {
		return true
	}
	if h1 && hasCTL(req.URL.RequestURI()) {
		return true
	}
	if !h2 {
		return false
	}
	if !httpguts.ValidHostHeader(host) || !validConnFields(req.Header) {
		return true
	}
	if p := req.URL.RequestURI(); !validPseudoPath(p) && !validPseudoPath(strings.TrimPrefix(p, req.URL.Scheme+"://"+host)) {
		return true
	}
	for k := range req.Trailer {
		switch http.CanonicalHeaderKey(k) {
		case "Transfer-Encoding", "Trailer", "Content-Length":
			return true
		}
	}
	return false
}

// validFields reports whether every name of h is a token and no value
// holds a control character other than HTAB.
func validFields(h http.Header) bool {
	for k, vv := range h {
		if !httpguts.ValidHeaderFieldName(k) {
			return false
		}
		for _, v := range vv {
			if !httpguts.ValidHeaderFieldValue(v) {
				return false
			}
		}
	}
	return true
}

// validConnFields reports whether HTTP/2 can send h's connection-specific
// fields, which it drops: Upgrade empty or "chunked", one Transfer-Encoding
// empty or "chunked", one Connection empty, close or keep-alive.
func validConnFields(h http.Header) bool {
	if vv := h["Upgrade"]; len(vv) > 0 && vv[0] != "" && vv[0] != "chunked" {
		return false
	}
	if vv := h["Transfer-Encoding"]; len(vv) > 0 && (len(vv) > 1 || vv[0] != "" && vv[0] != "chunked") {
		return false
	}
	if vv := h["Connection"]; len(vv) > 0 && (len(vv) > 1 || vv[0] != "" && !strings.EqualFold(vv[0], "close") && !strings.EqualFold(vv[0], "keep-alive")) {
		return false
	}
	return true
}

// validPseudoPath reports whether HTTP/2 can send p as :path: "/..." or
// "*".
func validPseudoPath(p string) bool { return (p != "" && p[0] == '/') || p == "*" }

// hasCTL reports whether s holds a byte below space or DEL, which
// HTTP/1.1's Request.write refuses in a target.
func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}
