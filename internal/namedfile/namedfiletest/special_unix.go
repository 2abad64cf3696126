//go:build unix

package namedfiletest

import (
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/paduraksa/paduraksa/internal/namedfile"
)

// Refused is a file the reader must refuse, and the code it refuses it
// with.
type Refused struct {
	What, Path, Code string
}

// Special makes, in a fresh directory, every kind of file the reader
// refuses when a configuration names it: the devices /dev/zero and
// /dev/urandom, a FIFO that nothing ever opens for writing, a directory, a
// listening Unix socket, a symlink to /dev/zero, and a regular file one
// byte over namedfile.MaxPEMSize.
func Special(t testing.TB) []Refused {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.pem")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A socket's path is short on some systems (104 bytes): a directory
	// of its own under the system's temporary one.
	sdir, err := os.MkdirTemp("", "sock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sdir) })
	sock := filepath.Join(sdir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	link := filepath.Join(dir, "link.pem")
	must(t, os.Symlink("/dev/zero", link))
	sub := filepath.Join(dir, "dir.pem")
	must(t, os.Mkdir(sub, 0o700))
	big := filepath.Join(dir, "big.pem")
	must(t, os.WriteFile(big, make([]byte, namedfile.MaxPEMSize+1), 0o600))
	return []Refused{
		{"/dev/zero", "/dev/zero", namedfile.CodeNotRegular},
		{"/dev/urandom", "/dev/urandom", namedfile.CodeNotRegular},
		{"fifo", fifo, namedfile.CodeNotRegular},
		{"directory", sub, namedfile.CodeNotRegular},
		{"socket", sock, namedfile.CodeNotRegular},
		{"symlink to /dev/zero", link, namedfile.CodeNotRegular},
		{"over the cap", big, namedfile.CodeTooLarge},
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
