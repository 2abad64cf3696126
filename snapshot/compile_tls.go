package snapshot

import (
	"crypto/rand"
	"crypto/x509"
	"slices"
	"strconv"
	"strings"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/namedfile"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// tlsTable maps the document onto tlsselect's config and builds the TLS
// table, recording problems under the document's paths and warnings. The
// table holds every host that has a certificate, or every host when
// global.tls.defaultCertificate names one; a document without
// certificates has none (nil). prev's table is reused when nothing it was
// built from changed: the same config, certificate files of the same
// stamp (device, inode, size, modification time) as the files read ahead
// of this compile say, and no certificate from a source (a source, ACME
// above all, may have something new at any time).
func (r *run) tlsTable(prev *Snapshot) (*tlsselect.Table, *tlsInputs) {
	doc, c := r.doc, r.c
	if len(doc.Certificates) == 0 && doc.Global.TLS == (config.GlobalTLS{}) {
		return nil, nil
	}
	cfg := tlsselect.Config{
		DefaultCertificate: doc.Global.TLS.DefaultCertificate,
		UnknownSNI:         tlsselect.Fallback(doc.Global.TLS.UnknownSNI),
		NoSNI:              tlsselect.Fallback(doc.Global.TLS.NoSNI),
		TicketSecret:       c.ticketSecret,
		TicketSecrets:      c.TicketSecrets,
		TicketKeyPeriod:    duration(doc.Global.TLS.TicketKeyPeriod),
	}
	in := &tlsInputs{reusable: true, set: r.files}
	for i := range doc.Certificates {
		dc := &doc.Certificates[i]
		ct := tlsselect.Certificate{ID: dc.ID, CertFile: dc.CertFile, KeyFile: dc.KeyFile}
		switch {
		case dc.ACME && (dc.CertFile != "" || dc.KeyFile != ""):
			r.add(CodeCertificateSourceMissing, index("certificates", i)+".acme", "a certificate comes from files or from ACME, not both")
		case dc.ACME && c.ACME == nil:
			r.add(CodeCertificateSourceMissing, index("certificates", i)+".acme", "ACME is not set up in this gateway (Compiler.ACME)")
		case dc.ACME:
			ct.Source, in.reusable = c.ACME, false
		case dc.CertFile == "" && dc.KeyFile == "":
			src := c.Certificates[dc.ID]
			if src == nil {
				r.add(CodeCertificateSourceMissing, index("certificates", i), "a certificate needs certFile and keyFile, acme, or a source of the gateway's own under its ID")
			}
			ct.Source, in.reusable = src, false
		default:
			in.stat(dc.CertFile)
			in.stat(dc.KeyFile)
		}
		cfg.Certificates = append(cfg.Certificates, ct)
	}
	anyHTTP3 := false
	cfg.Hosts, in.hosts = make([]tlsselect.Host, 0, len(doc.Hosts)), make([]int, 0, len(doc.Hosts))
	for i := range doc.Hosts {
		h := &doc.Hosts[i]
		if h.Certificate == "" && cfg.DefaultCertificate == "" {
			continue // served over plain HTTP only
		}
		th := tlsselect.Host{Names: h.Names, Certificate: h.Certificate}
		if t := h.TLS; t != nil {
			th.TLS = tlsselect.Policy{
				MinVersion: tlsselect.Version(t.MinVersion),
				HTTP1Only:  t.HTTP1Only,
				HTTP3:      t.HTTP3,
				ClientAuth: tlsselect.ClientAuth(t.ClientAuth),
			}
			if t.ClientCAs != "" {
				th.TLS.ClientCAs = r.clientCAs(hostPath(i, ".tls.clientCAs"), t.ClientCAs)
				in.stat(t.ClientCAs)
			}
			anyHTTP3 = anyHTTP3 || t.HTTP3
		}
		cfg.Hosts = append(cfg.Hosts, th)
		in.hosts = append(in.hosts, i)
	}
	// A handshake that names no host is served over HTTP/3 too when some
	// host is.
	cfg.DefaultTLS.HTTP3 = anyHTTP3
	// The gate re-checks each request's client certificate against the
	// roots the handshake of its host would have used.
	r.hostCAs = make([][]*x509.Certificate, len(doc.Hosts))
	for k, i := range in.hosts {
		r.hostCAs[i] = cfg.Hosts[k].TLS.ClientCAs
	}
	if len(r.probs) > 0 {
		return nil, nil
	}
	in.cfg = cfg
	if in.reusable && prev != nil && prev.tlsIn != nil && prev.tlsIn.same(in) {
		r.tlsWarnings(prev.tls, in) // the document's, whose hosts may sit elsewhere
		return prev.tls, prev.tlsIn
	}
	cfg.ReadFile = r.files.read // the files were read ahead: the compile reads none
	if prev != nil {
		// What did not change is not worked out again: certificates
		// whose files hold the same bytes, and their hosts' coverage.
		cfg.Previous = prev.tls
	}
	t, err := tlsselect.New(cfg)
	r.under("", err, in.docPath)
	if err != nil {
		return nil, nil
	}
	r.tlsWarnings(t, in)
	return t, in
}

// tlsWarnings records the warnings of t, built from in, under the
// document's paths.
func (r *run) tlsWarnings(t *tlsselect.Table, in *tlsInputs) {
	for _, w := range t.Warnings() {
		if p := in.docPath(w.Path); p != w.Path {
			r.warns.Add(w.Code, p, w.Msg)
		} else {
			r.warns = append(r.warns, w) // shared, as an upstream's are across publishes
		}
	}
}

// clientCAs returns the client certificate roots of a PEM file, as the
// files read ahead of the compile hold it.
func (r *run) clientCAs(path, file string) []*x509.Certificate {
	cas, code, msg := r.files.clientCAs(file)
	if code != "" {
		r.add(code, path, msg)
	}
	return cas
}

// tlsInputs is what a TLS table was built from: the config, the files it
// read and the document host of each of its hosts.
type tlsInputs struct {
	cfg      tlsselect.Config
	files    []fileStamp
	hosts    []int
	reusable bool     // every certificate comes from files
	set      *fileSet // the files read ahead of the compile
}

type fileStamp struct {
	name  string
	stamp namedfile.Stamp
}

// stat records the stamp of a file the table is built from, as it was
// read ahead.
func (in *tlsInputs) stat(name string) {
	in.files = append(in.files, fileStamp{name: name, stamp: in.set.stamp(name)})
}

// same reports whether in would build the same table as o: equal configs,
// and files unchanged on disk since o was built.
func (o *tlsInputs) same(in *tlsInputs) bool {
	if len(o.files) != len(in.files) || !tlsConfigEqual(&o.cfg, &in.cfg) {
		return false
	}
	for i, f := range o.files {
		if f != in.files[i] {
			return false
		}
	}
	return true
}

// changedIn reports whether a file the table was built from is another
// in set, files read since: replaced, rewritten, or gone.
func (o *tlsInputs) changedIn(set *fileSet) bool {
	for _, f := range o.files {
		if set.stamp(f.name) != f.stamp {
			return true
		}
	}
	return false
}

func tlsConfigEqual(a, b *tlsselect.Config) bool {
	if a.DefaultCertificate != b.DefaultCertificate || a.UnknownSNI != b.UnknownSNI || a.NoSNI != b.NoSNI ||
		a.TicketKeyPeriod != b.TicketKeyPeriod || a.DefaultTLS.HTTP3 != b.DefaultTLS.HTTP3 ||
		len(a.Certificates) != len(b.Certificates) || len(a.Hosts) != len(b.Hosts) || string(a.TicketSecret) != string(b.TicketSecret) ||
		a.TicketSecrets != b.TicketSecrets {
		return false
	}
	for i := range a.Certificates {
		if a.Certificates[i] != b.Certificates[i] {
			return false
		}
	}
	for i := range a.Hosts {
		x, y := &a.Hosts[i], &b.Hosts[i]
		if x.Certificate != y.Certificate || !slices.Equal(x.Names, y.Names) ||
			x.TLS.MinVersion != y.TLS.MinVersion || x.TLS.HTTP1Only != y.TLS.HTTP1Only || x.TLS.HTTP3 != y.TLS.HTTP3 ||
			x.TLS.ClientAuth != y.TLS.ClientAuth || len(x.TLS.ClientCAs) != len(y.TLS.ClientCAs) {
			return false
		}
		for k := range x.TLS.ClientCAs {
			if !x.TLS.ClientCAs[k].Equal(y.TLS.ClientCAs[k]) {
				return false
			}
		}
	}
	return true
}

// docPath maps a path in tlsselect's config onto the document.
func (in *tlsInputs) docPath(p string) string {
	switch {
	case p == "defaultCertificate", p == "unknownSni", p == "noSni", p == "ticketKeyPeriod":
		return "global.tls." + p
	case strings.HasPrefix(p, "defaultTLS"):
		return "global.tls"
	case strings.HasPrefix(p, "hosts["):
		rest := p[len("hosts["):]
		end := strings.IndexByte(rest, ']')
		k, err := strconv.Atoi(rest[:max(end, 0)])
		if end < 0 || err != nil || k < 0 || k >= len(in.hosts) || in.hosts[k] == k {
			return p // hosts[k] is the document's too
		}
		return hostPath(in.hosts[k], rest[end+1:])
	}
	return p // certificates[i]...: the same in both
}

// newTicketSecret makes a random session ticket secret.
func newTicketSecret() []byte {
	b := make([]byte, tlsselect.MinTicketSecretLen)
	rand.Read(b)
	return b
}
