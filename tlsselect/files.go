package tlsselect

import (
	"errors"
	"io/fs"

	"github.com/paduraksa/paduraksa/internal/namedfile"
)

// The files a Config names (Certificate.CertFile and KeyFile) and the
// ACME cache are read under one set of rules, the same for every file a
// configuration of the library names: the name's symlinks are resolved
// and the target must be a regular file (a directory, a device such as
// /dev/zero, a FIFO or a socket is refused from its stat, never opened
// for a read, so nothing waits for a FIFO's writer); it may hold at most
// MaxFileSize bytes, and no more than that is ever read from it; and the
// files of one New are read on a goroutine of their own within
// FileTimeout, which refuses what is not read by then (a hung network
// file system) instead of waiting for it.
const (
	// MaxFileSize is the largest PEM file read: a chain and its key are a
	// few KiB, and a CA bundle as large as Mozilla's about 220 KiB.
	MaxFileSize = namedfile.MaxPEMSize
	// FileTimeout bounds the reading of the files of one New, every file
	// together.
	FileTimeout = namedfile.DefaultTimeout
)

// Codes of a file refused by those rules, at the path of the field that
// names it. They are the same wherever the library reads a file a
// configuration names (snapshot reports them at hosts[i].tls.clientCAs
// too), so they carry no package prefix. A file that is not there keeps
// CodeCertificateFileMissing, one the system cannot read (permissions,
// I/O) CodeCertificateFileUnreadable.
const (
	CodeFileNotRegular = namedfile.CodeNotRegular // a directory, device, FIFO or socket, after symlinks
	CodeFileTooLarge   = namedfile.CodeTooLarge   // more than MaxFileSize, or the files of one build together past 64 MiB
	CodeFileTimeout    = namedfile.CodeTimeout    // not read within FileTimeout
	CodeFileBusy       = namedfile.CodeBusy       // refused at once: earlier reads of named files hang in the kernel
)

// readAhead reads the files of the certificates that need them (but
// those for which skip reports true) in one read, and returns how New
// then gets them.
func readAhead(certs []Certificate, skip func(i int) bool) func(string) ([]byte, error) {
	var reqs []namedfile.Request
	seen := make(map[string]bool)
	for i := range certs {
		ct := &certs[i]
		if ct.Source != nil || skip(i) {
			continue
		}
		for _, name := range []string{ct.CertFile, ct.KeyFile} {
			if name != "" && !seen[name] {
				seen[name] = true
				reqs = append(reqs, namedfile.Request{Name: name, Max: MaxFileSize})
			}
		}
	}
	res := namedfile.Reader{}.ReadAll(reqs, nil)
	got := make(map[string]namedfile.Result, len(reqs))
	for i, q := range reqs {
		got[q.Name] = res[i]
	}
	return func(name string) ([]byte, error) {
		r, ok := got[name]
		if !ok {
			return nil, errors.New(name + ": not among the files read")
		}
		return r.Data, r.Err
	}
}

// readFile gets the file name of the field at path through read, adding
// its problem to p when there is one.
func readFile(p *problems, path, name string, read func(string) ([]byte, error)) ([]byte, bool) {
	b, err := read(name)
	var fe *namedfile.Error
	switch {
	case err == nil:
		return b, true
	case errors.Is(err, fs.ErrNotExist):
		p.add(CodeCertificateFileMissing, path, "%s does not exist", name)
	case errors.As(err, &fe):
		p.add(fe.Code, path, "%s", fe.Msg)
	default:
		p.add(CodeCertificateFileUnreadable, path, "%v", err)
	}
	return nil, false
}
