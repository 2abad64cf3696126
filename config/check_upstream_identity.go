package config

// upstreamIdentity checks what an upstream presents of the gateway on its
// connections: the certificate its tls.clientCertificate names must be
// one of the document's, and every destination must speak TLS for it to
// be presented at all.
func (c *Checker) upstreamIdentity(i int) {
	u := &c.doc.Upstreams[i]
	id := u.HTTP.TLS.ClientCertificate
	if id == "" {
		return
	}
	path := upPath(i, ".http.tls.clientCertificate")
	known := false
	for k := range c.doc.Certificates {
		if c.doc.Certificates[k].ID == id {
			known = true
			break
		}
	}
	if !known {
		c.add(CodeUpstreamHTTPTLSClientCertificateUnknown, path, "no certificate of certificates[] has the ID "+quote(id))
	}
	for j := range u.Destinations {
		if a, reason := parseAddr(u.Destinations[j].Address); reason == "" && a.Scheme == "http" {
			c.add(CodeUpstreamHTTPTLSClientCertificatePlainHTTP, path,
				"destination "+quote(u.Destinations[j].ID)+" is http://: a client certificate is presented on TLS connections only")
			return
		}
	}
}
