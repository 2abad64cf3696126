package snapshot

import (
	"crypto/tls"
	"sync/atomic"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// clientIdentity maps an upstream's CA file, client certificate and PROXY
// protocol onto its client config: the CA file's text as the files read
// ahead hold it, the certificate by ID in the compiler's live store.
func (r *run) clientIdentity(i int, h *config.UpstreamHTTP, c *proxy.ClientConfig) {
	if f := h.TLS.CAFile; f != "" {
		text, code, msg := r.files.pem(f, CodeUpstreamCAFileUnreadable)
		if code != "" {
			r.add(code, upPath(i, ".http.tls.caFile"), msg)
		}
		c.CAs = text
		if c.CAs == "" && code == "" {
			c.CAs = " " // an empty file: proxy refuses it as holding no certificate
		}
	}
	if id := h.TLS.ClientCertificate; id != "" {
		c.ClientCertificate, c.Certificates = id, r.c.live
	}
	at := func() string { return upPath(i, ".http.proxyProtocol") }
	c.ProxyProtocol = name(r, at, h.ProxyProtocol, proxy.ParseProxyProtocol, proxy.ProxyProtocolNames(), proxy.CodeClientProxyProtocolUnknown)
}

// sameIdentity reports whether an upstream compiled earlier read the CA
// file u names as it is now, so that it may be reused: a CA file
// rewritten on disk is read by the next publish.
func (r *run) sameIdentity(u *config.Upstream, old *compiledUpstream) bool {
	f := u.HTTP.TLS.CAFile
	if f == "" {
		return true
	}
	text, code, _ := r.files.pem(f, CodeUpstreamCAFileUnreadable)
	return code == "" && text == old.client.CAs
}

// liveCertificates is the store upstream client certificates are looked
// up in at each handshake: the TLS table of the snapshot last applied,
// so a certificate renewed (ACME) or reloaded from its files is the one
// the next new connection presents. It is a [proxy.ClientCertificates];
// one lives as long as its Compiler.
type liveCertificates struct {
	table atomic.Pointer[tlsselect.Table]
}

var _ proxy.ClientCertificates = (*liveCertificates)(nil)

// ClientCertificate returns the certificate of the ID in the applied
// snapshot's table, or nil.
func (l *liveCertificates) ClientCertificate(id string) *tls.Certificate {
	return l.table.Load().Certificate(id)
}

// caFilesChangedIn reports whether an upstream CA file s was compiled
// with holds something else in set, files read since: a document
// unchanged but for a rewritten CA file is compiled again.
func (s *Snapshot) caFilesChangedIn(set *fileSet) bool {
	if s.doc == nil {
		return false
	}
	for i := range s.doc.Upstreams {
		u := &s.doc.Upstreams[i]
		if u.HTTP.TLS.CAFile == "" {
			continue
		}
		cu := s.upstreams[u.ID]
		if cu == nil {
			continue
		}
		text, code, _ := set.pem(u.HTTP.TLS.CAFile, CodeUpstreamCAFileUnreadable)
		if code != "" || text != cu.client.CAs {
			return true
		}
	}
	return false
}
