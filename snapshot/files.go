package snapshot

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"sync"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/namedfile"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// fileSet holds what the files a document names (certificates' certFile
// and keyFile, hosts' tls.clientCAs) held when they were read: ahead of
// the compile, on the goroutine that publishes, checks or drafts the
// document, under the rules of tlsselect's MaxFileSize and FileTimeout.
// The compile reads the set and no file, so a publisher compiling on its
// own goroutine never waits on one. A set does not change once read.
type fileSet struct {
	byName map[string]*namedEntry
}

// noFiles is the set of a document that names no file, shared: a set
// does not change.
var noFiles = &fileSet{}

// namedEntry is one file of a set; an applied snapshot's entries are
// taken over by the next set for every file whose stat did not change,
// with the client CAs parsed from it.
type namedEntry struct {
	namedfile.Result

	once   sync.Once
	cas    []*x509.Certificate
	casErr string // why the file holds no client CA
}

// documentFiles returns the files doc names, once each, in document
// order. Every field of the document that names a file is listed here,
// so that it is read by the rules and ahead of the compile: a field
// added later that names one is added here too.
func documentFiles(doc *config.Document) []namedfile.Request {
	var reqs []namedfile.Request
	seen := make(map[string]bool)
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			reqs = append(reqs, namedfile.Request{Name: name, Max: tlsselect.MaxFileSize})
		}
	}
	for i := range doc.Certificates {
		if dc := &doc.Certificates[i]; !dc.ACME {
			add(dc.CertFile)
			add(dc.KeyFile)
		}
	}
	for i := range doc.Hosts {
		if t := doc.Hosts[i].TLS; t != nil {
			add(t.ClientCAs)
		}
	}
	for i := range doc.Upstreams {
		add(doc.Upstreams[i].HTTP.TLS.CAFile)
	}
	return reqs
}

// readFiles reads the files doc names within c.FileTimeout. prev, when
// not nil, is the set of the applied snapshot: a file whose stat is the
// same as when prev read it is taken from prev, not read again. It reads
// nothing of c but FileTimeout, so any goroutine may call it while the
// publisher compiles.
func (c *Compiler) readFiles(doc *config.Document, prev *fileSet) *fileSet {
	reqs := documentFiles(doc)
	if len(reqs) == 0 {
		return noFiles
	}
	set := &fileSet{byName: make(map[string]*namedEntry, len(reqs))}
	var old func(string) (namedfile.Result, bool)
	if prev != nil {
		old = func(name string) (namedfile.Result, bool) {
			if e := prev.byName[name]; e != nil {
				return e.Result, true
			}
			return namedfile.Result{}, false
		}
	}
	res := namedfile.Reader{Timeout: c.FileTimeout}.ReadAll(reqs, old)
	for i, q := range reqs {
		if prev != nil {
			// The same result as prev's: the same entry, with what was
			// parsed from it.
			if e := prev.byName[q.Name]; e != nil && res[i].Err == nil && e.Err == nil && e.Stamp == res[i].Stamp && sameBytes(e.Data, res[i].Data) {
				set.byName[q.Name] = e
				continue
			}
		}
		set.byName[q.Name] = &namedEntry{Result: res[i]}
	}
	return set
}

// sameBytes reports whether a and b are the same slice, as a result the
// reader took from an earlier one is.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// read returns the contents of a file of the set, or why it has none:
// the reader's own refusal (with its file code), or the file system's
// error. It is tlsselect.Config.ReadFile for the document's certificates.
func (s *fileSet) read(name string) ([]byte, error) {
	e := s.byName[name]
	if e == nil {
		return nil, errors.New(name + ": not read ahead of the compile")
	}
	return e.Data, e.Err
}

// pem returns the text of a PEM file of the set, or the code and
// message of why there is none: the reader's code for a file it refused,
// unreadable for one that could not be read.
func (s *fileSet) pem(name, unreadable string) (text, code, msg string) {
	e := s.byName[name]
	if e == nil {
		return "", unreadable, name + ": not read ahead of the compile"
	}
	if e.Err != nil {
		var fe *namedfile.Error
		if errors.As(e.Err, &fe) {
			return "", fe.Code, fe.Msg
		}
		return "", unreadable, e.Err.Error()
	}
	return string(e.Data), "", ""
}

// stamp returns the stamp of a file of the set; the zero Stamp for one
// that could not be read.
func (s *fileSet) stamp(name string) namedfile.Stamp {
	if e := s.byName[name]; e != nil && e.Err == nil {
		return e.Stamp
	}
	return namedfile.Stamp{}
}

// clientCAs returns the client certificate roots of the PEM file name,
// or the code and message of why there are none: the reader's code for
// a file it refused, CodeHostClientCAsUnreadable for one that could not
// be read or holds no certificate.
func (s *fileSet) clientCAs(name string) (cas []*x509.Certificate, code, msg string) {
	e := s.byName[name]
	if e == nil {
		return nil, CodeHostClientCAsUnreadable, name + ": not read ahead of the compile"
	}
	if e.Err != nil {
		var fe *namedfile.Error
		if errors.As(e.Err, &fe) {
			return nil, fe.Code, fe.Msg
		}
		return nil, CodeHostClientCAsUnreadable, e.Err.Error()
	}
	e.once.Do(func() { e.cas, e.casErr = parseClientCAs(name, e.Data) })
	if e.casErr != "" {
		return nil, CodeHostClientCAsUnreadable, e.casErr
	}
	return e.cas, "", ""
}

// parseClientCAs parses every CERTIFICATE block of a PEM file.
func parseClientCAs(file string, data []byte) ([]*x509.Certificate, string) {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		ct, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, file + ": " + err.Error()
		}
		out = append(out, ct)
	}
	if len(out) == 0 {
		return nil, file + ": no PEM certificate"
	}
	return out, ""
}

// ReadDocument reads a document file, such as a gateway's config file,
// under the rules by which every file a document names is read (see
// tlsselect.MaxFileSize): a regular file after symlinks (a FIFO, a
// device, a directory or a socket is refused without waiting on it), of
// at most max bytes (0, or more than MaxDocumentSize, means
// MaxDocumentSize), read within tlsselect.FileTimeout. A file those rules
// refuse is a *ValidationError with the rule's code
// (tlsselect.CodeFileNotRegular, CodeFileTooLarge, CodeFileTimeout,
// CodeFileBusy) and no path; any other failure is the file system's
// error, as os returns it.
func ReadDocument(name string, max int64) ([]byte, error) {
	if max <= 0 || max > config.MaxDocumentSize {
		max = config.MaxDocumentSize
	}
	b, err := namedfile.Reader{}.Read(name, max)
	return b, namedfile.Problem(err)
}
