package simulate

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/internal/problem"
	"golang.org/x/net/http/httpguts"
)

// Probe is the request to simulate and how it reaches the gateway. A URL
// is enough: every other field has a default, and a field that would
// change nothing (TLS settings on a plain-HTTP URL, a PROXY source on
// HTTP/3) is refused with a [ProbeError], never ignored.
type Probe struct {
	// Method is the request method; empty means GET.
	Method string
	// URL is the absolute request URL: scheme (http or https), host
	// (the Host header or :authority), optional port, path and query.
	URL string
	// Header holds the request's headers as the client sends them (the
	// user agent, cookies, X-Forwarded-For from a proxy in front). The
	// Host comes from URL: a Host here is refused. A Content-Length (at
	// most [MaxProbeBody]) sends a body of that many bytes, and
	// Transfer-Encoding: chunked (HTTP/1.1 only) an empty chunked body
	// after it, so body limits are simulated too. The body is generated
	// as the server reads it, so a length costs what the server reads
	// (at most about 256 KiB over HTTP/1.1, a flow-control window over
	// HTTP/2 and HTTP/3), not what it declares. At most
	// [MaxProbeHeaderLines] values and [MaxProbeHeaderBytes] on the wire.
	Header http.Header
	// Peer is the address the connection comes from: the client itself
	// when it connects directly, the proxy's or load balancer's when one
	// is in front (Header then carries what that proxy adds:
	// X-Forwarded-For, CF-Connecting-IP, CF-Visitor). The zero value
	// means [DefaultPeer]; a zero port means 50000.
	Peer netip.AddrPort
	// ProxyProtocol, when valid, makes the connection start with a PROXY
	// protocol v2 header naming this source, as a load balancer at Peer
	// sends it. Only a listener that expects PROXY headers from Peer
	// accepts it; any other reads it as a malformed request.
	ProxyProtocol netip.AddrPort
	// TLS describes the client's handshake on an https URL; nil means the
	// defaults of [TLS].
	TLS *TLS
	// HTTPVersion is 1, 2 or 3; 0 means 1. HTTP/2 and HTTP/3 need an
	// https URL. The version is what the client asks for: an HTTP/2
	// client whose handshake settles on http/1.1 sends HTTP/1.1, and the
	// trace says so.
	HTTPVersion int
}

// TLS is the client side of a simulated handshake.
type TLS struct {
	// SNI is the server name sent in the handshake; empty means the
	// URL's host, or none for an IP literal (as browsers do). NoSNI sends
	// none whatever the URL.
	SNI   string
	NoSNI bool
	// ALPN lists the protocols offered, in order; nil means the ones of
	// the HTTP version: h2 and http/1.1 for HTTP/2, http/1.1 for HTTP/1.1,
	// h3 for HTTP/3.
	ALPN []string
	// Version is the highest TLS version the client speaks
	// (tls.VersionTLS12, tls.VersionTLS13); 0 means TLS 1.3.
	Version uint16
}

// MaxProbeBody bounds the body a probe's Content-Length asks for: 1 TiB,
// above any body limit worth simulating. The bytes are generated only as
// the server reads them (see [Probe.Header]).
const MaxProbeBody = 1 << 40

// A probe's headers are bounded: their cost is per line (validated,
// sorted, written, parsed), and a request past a listener's
// MaxHeaderBytes is answered 431 by net/http whatever it holds beyond it.
const (
	// MaxProbeHeaderLines bounds the header values of a probe: one line
	// each. It is above any header count limit worth simulating (nginx's
	// and HAProxy's are about 100).
	MaxProbeHeaderLines = 1000
	// MaxProbeHeaderBytes bounds a probe's header section as HTTP/1.1
	// sends it (name, ": ", value and CRLF per line): twice 1 MiB, so
	// that a listener's MaxHeaderBytes up to 1 MiB can be exceeded.
	MaxProbeHeaderBytes = 2 << 20
)

// DefaultPeer is the peer of a probe without one: an outside client
// (TEST-NET-1), connecting directly.
var DefaultPeer = netip.MustParseAddrPort("192.0.2.10:50000")

// ProbeError is one problem of a probe: a stable Code (the Code*
// constants), the Path of the field and a message.
type ProbeError = problem.Error

// Codes of the problems of a probe and a target. They are stable.
const (
	CodeProbeMethodInvalid      = "simulate.probe.method.invalid"      // method: not a token
	CodeProbeURLInvalid         = "simulate.probe.url.invalid"         // url: not an absolute http or https URL with a host
	CodeProbeHeaderInvalid      = "simulate.probe.header.invalid"      // header[name]: not a valid name or value
	CodeProbeHeaderHost         = "simulate.probe.header.host"         // header[Host]: the Host is the URL's
	CodeProbeHeaderTooLarge     = "simulate.probe.header.tooLarge"     // header: more than MaxProbeHeaderLines values or MaxProbeHeaderBytes
	CodeProbeHTTPVersionInvalid = "simulate.probe.httpVersion.invalid" // httpVersion: not 0-3
	CodeProbeHTTPVersionPlain   = "simulate.probe.httpVersion.plain"   // httpVersion: 2 or 3 on an http URL (no h2c, no QUIC without TLS)
	CodeProbeTLSPlain           = "simulate.probe.tls.plain"           // tls: TLS settings on an http URL would change nothing
	CodeProbeTLSVersionInvalid  = "simulate.probe.tls.version.invalid" // tls.version: not TLS 1.0-1.3
	CodeProbeTLSSNIConflict     = "simulate.probe.tls.sni.conflict"    // tls.sni: both a name and noSni
	CodeProbeProxyHTTP3         = "simulate.probe.proxyProtocol.http3" // proxyProtocol: HTTP/3 runs over UDP, where no PROXY header is read
	CodeProbePeerInvalid        = "simulate.probe.peer.invalid"        // peer: an address with a zone
	CodeProbeBodyInvalid        = "simulate.probe.body.invalid"        // header[Content-Length], header[Transfer-Encoding]: not a length up to MaxProbeBody, not chunked, or chunked over HTTP/2 or HTTP/3

	CodeDeadline = "simulate.deadline" // the caller's deadline passed before the simulation finished ([RunContext])

	CodeTargetNone     = "simulate.target.none"     // no store, snapshot or draft given
	CodeTargetMany     = "simulate.target.many"     // more than one of them given
	CodeTargetEmpty    = "simulate.target.empty"    // the store holds no snapshot yet
	CodeTargetListener = "simulate.target.listener" // the listener's connection-stage config is invalid

	CodeTargetCertificates = "simulate.target.certificates" // TestCertificates could not make a certificate
)

// request is a checked probe with its defaults applied.
type request struct {
	method  string
	url     *url.URL
	host    string // the URL's host[:port] as the Host header carries it
	header  http.Header
	peer    netip.AddrPort
	proxy   netip.AddrPort // invalid: no PROXY header
	https   bool
	version int // 1, 2 or 3: what the client asks for
	sni     string
	alpn    []string
	tlsMax  uint16
	body    int64 // the body's length, from Content-Length
	chunked bool  // Transfer-Encoding: chunked
}

// check returns the probe with its defaults, or every problem of it.
func (p *Probe) check() (*request, error) {
	var errs problem.List
	rq := &request{method: p.Method, peer: p.Peer, proxy: p.ProxyProtocol, version: p.HTTPVersion, header: http.Header{}}
	if rq.method == "" {
		rq.method = http.MethodGet
	}
	if !httpguts.ValidHeaderFieldName(rq.method) {
		errs.Add(CodeProbeMethodInvalid, "method", strconv.Quote(p.Method)+" is not a method token")
	}
	u, err := url.Parse(p.URL)
	switch {
	case err != nil:
		errs.Add(CodeProbeURLInvalid, "url", strconv.Quote(p.URL)+": "+strings.TrimPrefix(err.Error(), "parse "+strconv.Quote(p.URL)+": "))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil, u.Opaque != "":
		errs.Add(CodeProbeURLInvalid, "url", strconv.Quote(p.URL)+" is not an absolute http:// or https:// URL with a host and no user info")
	default:
		rq.url, rq.host, rq.https = u, u.Host, u.Scheme == "https"
		if u.Path == "" && u.RawPath == "" {
			u.Path = "/"
		}
	}
	lines, size := 0, 0
	for _, vs := range p.Header {
		lines += len(vs)
	}
	if lines > MaxProbeHeaderLines {
		// Said before the lines are looked at, which would cost what
		// the bound saves.
		errs.Add(CodeProbeHeaderTooLarge, "header", strconv.Itoa(lines)+" header values; a probe sends at most "+strconv.Itoa(MaxProbeHeaderLines))
		return nil, errs.Err()
	}
	for k, vs := range p.Header {
		at := "header[" + k + "]"
		for _, v := range vs {
			size += len(k) + len(": \r\n") + len(v)
		}
		if !httpguts.ValidHeaderFieldName(k) {
			errs.Add(CodeProbeHeaderInvalid, at, strconv.Quote(k)+" is not a header name")
			continue
		}
		if http.CanonicalHeaderKey(k) == "Host" {
			errs.Add(CodeProbeHeaderHost, at, "the Host is the URL's host; put the name there")
			continue
		}
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldValue(v) {
				errs.Add(CodeProbeHeaderInvalid, at, strconv.Quote(v)+" is not a header value")
			}
		}
		rq.header[http.CanonicalHeaderKey(k)] = append(rq.header[http.CanonicalHeaderKey(k)], vs...)
	}
	if size > MaxProbeHeaderBytes {
		errs.Add(CodeProbeHeaderTooLarge, "header", strconv.Itoa(size)+" bytes of headers; a probe sends at most "+strconv.Itoa(MaxProbeHeaderBytes))
	}
	if v, ok := rq.header["Content-Length"]; ok {
		n, err := strconv.ParseInt(strings.TrimSpace(v[0]), 10, 64)
		if len(v) != 1 || err != nil || n < 0 || n > MaxProbeBody {
			errs.Add(CodeProbeBodyInvalid, "header[Content-Length]", "one length of 0 to "+strconv.FormatInt(MaxProbeBody, 10)+" bytes")
		}
		rq.body = n
	}
	if v, ok := rq.header["Transfer-Encoding"]; ok {
		if len(v) != 1 || !strings.EqualFold(v[0], "chunked") || rq.version > 1 {
			errs.Add(CodeProbeBodyInvalid, "header[Transfer-Encoding]", "only chunked, and only over HTTP/1.1")
		}
		rq.chunked = true
	}
	switch rq.version {
	case 0:
		rq.version = 1
	case 1, 2, 3:
		if rq.version > 1 && rq.url != nil && !rq.https {
			errs.Add(CodeProbeHTTPVersionPlain, "httpVersion", "HTTP/"+strconv.Itoa(rq.version)+" needs an https URL: the gateway speaks neither h2c nor QUIC without TLS")
		}
	default:
		errs.Add(CodeProbeHTTPVersionInvalid, "httpVersion", strconv.Itoa(rq.version)+" is not 1, 2 or 3 (0 means 1)")
	}
	if !rq.peer.IsValid() {
		rq.peer = DefaultPeer
	}
	if rq.peer.Addr().Zone() != "" {
		errs.Add(CodeProbePeerInvalid, "peer", "an address with a zone cannot be a peer")
	}
	if rq.peer.Port() == 0 {
		rq.peer = netip.AddrPortFrom(rq.peer.Addr(), DefaultPeer.Port())
	}
	rq.peer = netip.AddrPortFrom(rq.peer.Addr().Unmap(), rq.peer.Port())
	if rq.proxy.IsValid() && rq.version == 3 {
		errs.Add(CodeProbeProxyHTTP3, "proxyProtocol", "HTTP/3 runs over UDP, where no PROXY header is read")
	}
	if rq.url != nil && !rq.https && p.TLS != nil {
		errs.Add(CodeProbeTLSPlain, "tls", "TLS settings on an http URL would change nothing")
	}
	if rq.https {
		t := TLS{}
		if p.TLS != nil {
			t = *p.TLS
		}
		switch {
		case t.NoSNI && t.SNI != "":
			errs.Add(CodeProbeTLSSNIConflict, "tls.sni", "both a server name and noSni")
		case t.SNI != "":
			rq.sni = t.SNI
		case !t.NoSNI:
			if _, err := netip.ParseAddr(u.Hostname()); err != nil {
				rq.sni = u.Hostname()
			}
		}
		rq.alpn = t.ALPN
		if rq.alpn == nil {
			rq.alpn = [...][]string{1: {"http/1.1"}, 2: {"h2", "http/1.1"}, 3: {"h3"}}[min(max(rq.version, 1), 3)]
		}
		rq.tlsMax = t.Version
		switch rq.tlsMax {
		case 0:
			rq.tlsMax = tls.VersionTLS13
		case tls.VersionTLS10, tls.VersionTLS11, tls.VersionTLS12, tls.VersionTLS13:
		default:
			errs.Add(CodeProbeTLSVersionInvalid, "tls.version", "0x"+strconv.FormatUint(uint64(t.Version), 16)+" is not TLS 1.0-1.3")
		}
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return rq, nil
}
