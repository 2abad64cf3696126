package proxy

import (
	"crypto/tls"
	"crypto/x509"

	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// ClientCertificates looks up, by ID, the certificates an upstream's
// client presents (see [ClientConfig.ClientCertificate]). It is called at
// every TLS handshake to the upstream, from the goroutine that dials, and
// must be safe for concurrent use.
type ClientCertificates interface {
	// ClientCertificate returns the certificate with the ID as it is now
	// (its chain, leaf first, and key), or nil when there is none yet
	// (an ACME order under way): the handshake then presents no
	// certificate.
	ClientCertificate(id string) *tls.Certificate
}

// ProxyProtocol says whether an upstream's connections start with a
// PROXY protocol header.
type ProxyProtocol uint8

const (
	// ProxyProtocolOff sends none (the zero value).
	ProxyProtocolOff ProxyProtocol = iota
	// ProxyProtocolV1 sends the text header: "PROXY TCP4 ..." with the
	// client's address, "PROXY UNKNOWN" on health probes.
	ProxyProtocolV1
	// ProxyProtocolV2 sends the binary header: PROXY with the client's
	// address, LOCAL on health probes.
	ProxyProtocolV2
)

var proxyProtocolNames = enum.Names[ProxyProtocol]{"off", "v1", "v2"}

// String returns the setting's name: "off", "v1" or "v2".
func (p ProxyProtocol) String() string { return proxyProtocolNames.Name(p) }

// ParseProxyProtocol returns the setting a name stands for.
func ParseProxyProtocol(name string) (ProxyProtocol, bool) { return proxyProtocolNames.Parse(name) }

// ProxyProtocolNames returns the names of the settings, the default
// first: the names a config document uses.
func ProxyProtocolNames() []string { return proxyProtocolNames }

// validateIdentity adds the problems of c's CA roots, client certificate
// and PROXY protocol.
func (c ClientConfig) validateIdentity(errs *problem.List) {
	switch {
	case c.Trust == TrustCAFile && c.CAs == "":
		errs.Add(CodeClientCAsMissing, "cas", "trust caFile needs the roots to check against")
	case c.Trust != TrustCAFile && c.CAs != "":
		errs.Add(CodeClientCAsUnexpected, "cas", "CA roots are only used with trust caFile, not "+c.Trust.String())
	case c.CAs != "" && rootCAs(c) == nil:
		errs.Add(CodeClientCAsEmpty, "cas", "no PEM certificate among the CA roots")
	}
	if c.ClientCertificate != "" && c.Certificates == nil {
		errs.Add(CodeClientCertificatesMissing, "certificates", "client certificate "+quote(c.ClientCertificate)+" has no store to be looked up in")
	}
	if !proxyProtocolNames.Known(c.ProxyProtocol) {
		errs.Add(CodeClientProxyProtocolUnknown, "proxyProtocol", "unknown PROXY protocol setting "+c.ProxyProtocol.String()+" (want "+proxyProtocolNames.List()+")")
	}
}

// rootCAs returns the pool of c's CA roots, or nil when c has none (and
// then, with TrustCAFile, Validate refuses c).
func rootCAs(c ClientConfig) *x509.CertPool {
	if c.Trust != TrustCAFile || c.CAs == "" {
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(c.CAs)) {
		return nil
	}
	return pool
}

// clientCertificate returns the tls.Config.GetClientCertificate of c:
// the certificate of c's ID as its store holds it at the handshake, so
// a renewal reaches the next new connection; nil when c presents none.
func clientCertificate(c ClientConfig) func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	id, store := c.ClientCertificate, c.Certificates
	if id == "" || store == nil {
		return nil
	}
	return func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if ct := store.ClientCertificate(id); ct != nil {
			return ct, nil
		}
		return new(tls.Certificate), nil // none yet: the upstream decides
	}
}
