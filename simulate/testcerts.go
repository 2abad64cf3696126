package simulate

import (
	"maps"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/hostname"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// testCertificateLifetime is how long a certificate of
// Target.TestCertificates is valid: far past any test run.
const testCertificateLifetime = 24 * time.Hour

// withTestCertificates returns doc and c with every certificate of doc
// served by a self-signed one for the names of the hosts that use it
// ([Target.TestCertificates]); neither argument is modified. An entry
// that is wrong as written (files and acme both, a certFile without its
// keyFile, no ID) is left as it is, so the draft is refused as the
// publish would refuse it.
func withTestCertificates(doc *config.Document, c *snapshot.Compiler) (*config.Document, *snapshot.Compiler, error) {
	if len(doc.Certificates) == 0 {
		return doc, c, nil
	}
	names := make(map[string][]string, len(doc.Certificates))
	for i := range doc.Hosts {
		h := &doc.Hosts[i]
		id := h.Certificate
		if id == "" {
			id = doc.Global.TLS.DefaultCertificate
		}
		for _, n := range h.Names {
			// The names as a client sends them; the catch-all's
			// handshakes are the default certificate's, named by none.
			if canon, _, err := hostname.Canonical(n); err == nil {
				names[id] = append(names[id], canon)
			}
		}
	}
	out := *doc
	out.Certificates = make([]config.Certificate, len(doc.Certificates))
	cc := *c
	cc.Certificates = maps.Clone(c.Certificates)
	if cc.Certificates == nil {
		cc.Certificates = make(map[string]tlsselect.Source, len(doc.Certificates))
	}
	for i, ct := range doc.Certificates {
		out.Certificates[i] = ct
		files, acme := ct.CertFile != "" || ct.KeyFile != "", ct.ACME
		if ct.ID == "" || (files && acme) || (files && (ct.CertFile == "" || ct.KeyFile == "")) {
			continue
		}
		cert, err := tlsselect.SelfSigned(testCertificateLifetime, names[ct.ID]...)
		if err != nil {
			return nil, nil, err
		}
		out.Certificates[i] = config.Certificate{ID: ct.ID}
		cc.Certificates[ct.ID] = tlsselect.Static(cert)
	}
	return &out, &cc, nil
}
