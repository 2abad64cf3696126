package gate

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"slices"
	"strconv"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// TLSPolicy is a host's TLS settings as the gate re-checks them per
// request. The handshake only saw the SNI's host, and clients reuse a
// connection for every name its certificate covers, so a request can reach
// a host over a connection that host would not have accepted. Such a
// request gets 421 Misdirected Request and the client retries on a
// connection of its own. The zero value accepts HTTP/1.1 and HTTP/2 over
// any TLS version, with or without a client certificate, and refuses
// HTTP/3.
//
// The client certificate is re-checked against the host's own roots, not
// against what the handshake asked for: a connection made for another
// name was verified, if at all, against that name's pool. For a host with
// ClientCAs a request is served when the connection presented no
// certificate and the host does not require one, or when one of the
// connection's verified chains (tls.ConnectionState.VerifiedChains, which
// resumed sessions carry too) ends in one of ClientCAs. A certificate
// presented but verified only against another pool is refused, and so is
// plain HTTP to a host that requires a certificate, unless the host's
// HTTPS redirect answers it (the redirect never forwards). A host without
// ClientCAs takes any connection. The gate tells upstreams nothing of the
// client certificate; a target that does must take it from a connection
// this check passed for the request's host, never from the handshake
// alone.
type TLSPolicy struct {
	// MinVersion is the lowest TLS version (tls.VersionTLS12, ...); 0
	// means no minimum beyond the listener's.
	MinVersion uint16
	// HTTP1Only refuses HTTP/2 (the host's ALPN is http/1.1 only).
	HTTP1Only bool
	// HTTP3 accepts HTTP/3 and advertises it with Alt-Svc on TCP HTTPS.
	HTTP3 bool
	// AltSvc is the Alt-Svc value for HTTP/3 hosts; empty means
	// [AltSvcFor] the gate's [Config.HTTPSPort].
	AltSvc string
	// ClientCAs are the roots a client certificate must have been
	// verified against: the pool the handshake for this host verifies
	// with. They are compared by their DER bytes, so the same roots
	// parsed again (a file read by the next publish, a resumed session)
	// match. Nil means the host asks nothing of client certificates.
	// Without RequireClientCert a connection without a certificate
	// passes and one with a certificate must have it verified against
	// these roots (the "optional" mode).
	ClientCAs []*x509.Certificate
	// RequireClientCert refuses connections that presented no client
	// certificate verified against ClientCAs, which it needs.
	RequireClientCert bool
}

// The reasons of a refused TLS re-check, as a [Step] of kind StepTLS
// carries them.
const (
	reasonNoHTTP3         = "HTTP/3 not enabled for host"
	reasonHTTP1Only       = "HTTP/2 not allowed for host"
	reasonMinVersion      = "TLS version below host minimum"
	reasonCertRequired    = "client certificate required by host"
	reasonCertNotVerified = "client certificate not verified for host"
)

// tlsCheck returns the reason a request's connection is weaker than the
// host allows, or "". A host without client CAs pays one branch for them.
func tlsCheck(h *Host, r *http.Request, rq *Request) string {
	p, ci := &h.TLS, rq.Conn
	h3 := r.ProtoMajor == 3 || (ci != nil && ci.HTTP3)
	if r.TLS == nil && !h3 {
		// Plain HTTP carries no certificate: a host that requires one is
		// refused, unless its HTTPS redirect answers (and never
		// forwards) the request.
		if p.RequireClientCert && (h.httpsPage == nil || rq.Scheme != schemeHTTP) {
			return reasonCertRequired
		}
		return ""
	}
	if h3 && !p.HTTP3 {
		return reasonNoHTTP3
	}
	if r.ProtoMajor == 2 && p.HTTP1Only {
		return reasonHTTP1Only
	}
	if p.MinVersion != 0 {
		v := uint16(0)
		if ci != nil {
			v = ci.TLSVersion
		}
		if v == 0 && r.TLS != nil {
			v = r.TLS.Version
		}
		if h3 && v == 0 {
			v = tls.VersionTLS13 // QUIC is TLS 1.3
		}
		if v < p.MinVersion {
			return reasonMinVersion
		}
	}
	if h.clientRoots != nil {
		return h.clientCertCheck(r.TLS)
	}
	return ""
}

// clientCertCheck returns why the connection's client certificate does
// not satisfy h, or "". A nil cs (an HTTP/3 server that does not fill
// r.TLS) has no certificate.
func (h *Host) clientCertCheck(cs *tls.ConnectionState) string {
	if cs == nil || len(cs.PeerCertificates) == 0 {
		if h.TLS.RequireClientCert {
			return reasonCertRequired
		}
		return ""
	}
	for _, chain := range cs.VerifiedChains {
		if n := len(chain); n > 0 {
			if _, ok := h.clientRoots[string(chain[n-1].Raw)]; ok {
				return ""
			}
		}
	}
	return reasonCertNotVerified
}

// compileClientCAs checks a host's client certificate roots and builds the
// set the per-request check looks them up in; at is the host's path.
func (h *Host) compileClientCAs(errs *problem.List, at string) {
	p := &h.TLS
	if len(p.ClientCAs) == 0 {
		if p.RequireClientCert {
			errs.Add(CodeHostTLSClientCAsMissing, at+".tls.clientCAs", "a host that requires a client certificate needs the roots to verify it against")
		}
		return
	}
	p.ClientCAs = slices.Clone(p.ClientCAs)
	h.clientRoots = make(map[string]struct{}, len(p.ClientCAs))
	for i, ca := range p.ClientCAs {
		if ca == nil || len(ca.Raw) == 0 {
			errs.Add(CodeHostTLSClientCAsMissing, problem.Index(at+".tls.clientCAs", i), "certificate "+strconv.Itoa(i)+" is nil or was not parsed (no DER bytes)")
			continue
		}
		h.clientRoots[string(ca.Raw)] = struct{}{}
	}
}
