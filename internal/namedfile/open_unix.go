//go:build unix

package namedfile

import (
	"io/fs"
	"syscall"
)

// openFlags open a FIFO without waiting for a writer and a terminal
// without making it the process's controlling terminal; fstat then
// refuses both.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY

// stampOf returns the stamp of a file's stat.
func stampOf(fi fs.FileInfo) Stamp {
	s := Stamp{Size: fi.Size(), Mod: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s.Dev, s.Ino = uint64(st.Dev), uint64(st.Ino)
	}
	return s
}
