package config

import "github.com/paduraksa/paduraksa/proxy"

// upstreamTLSIdentity writes an upstream tls block's CA file and client
// certificate.
func (e *canonEnc) upstreamTLSIdentity(t *UpstreamTLS) {
	e.str("caFile", t.CAFile)
	e.str("clientCertificate", t.ClientCertificate)
}

// upstreamProxyProtocol writes an upstream http block's proxyProtocol,
// left out when it is the default (off).
func (e *canonEnc) upstreamProxyProtocol(h *UpstreamHTTP) {
	e.strDefault("proxyProtocol", h.ProxyProtocol, proxy.ProxyProtocolNames()[0])
}
