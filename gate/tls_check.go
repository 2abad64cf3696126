package gate

import (
	"crypto/tls"
	"net/http"
)

// TLSPolicy is a host's TLS settings as the gate re-checks them per
// request. The handshake only saw the SNI's host, and clients reuse a
// connection for every name its certificate covers, so a request can reach
// a host over a connection that host would not have accepted. Such a
// request gets 421 Misdirected Request and the client retries on a
// connection of its own. The zero value accepts HTTP/1.1 and HTTP/2 over
// any TLS version and refuses HTTP/3.
type TLSPolicy struct {
	// MinVersion is the lowest TLS version (tls.VersionTLS12, ...); 0
	// means no minimum beyond the listener's.
	MinVersion uint16
	// HTTP1Only refuses HTTP/2 (the host's ALPN is http/1.1 only).
	HTTP1Only bool
	// HTTP3 accepts HTTP/3 and advertises it with Alt-Svc on TCP HTTPS.
	HTTP3 bool
	// AltSvc is the Alt-Svc value for HTTP/3 hosts; default
	// [DefaultAltSvc]. Use the externally visible port.
	AltSvc string
}

// tlsCheck returns the reason a request's connection is weaker than the
// host allows, or "". Plain HTTP is not checked.
func tlsCheck(p *TLSPolicy, r *http.Request, ci *ConnInfo) string {
	h3 := r.ProtoMajor == 3 || (ci != nil && ci.HTTP3)
	if r.TLS == nil && !h3 {
		return ""
	}
	if h3 && !p.HTTP3 {
		return "HTTP/3 not enabled for host"
	}
	if r.ProtoMajor == 2 && p.HTTP1Only {
		return "HTTP/2 not allowed for host"
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
			return "TLS version below host minimum"
		}
	}
	return ""
}
