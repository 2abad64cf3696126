//go:build !unix

package namedfile

import "io/fs"

// openFlags: systems other than Unix have no FIFO that blocks an open
// for reading and no controlling terminal to acquire.
const openFlags = 0

// stampOf returns the stamp of a file's stat: its size and modification
// time, with no inode to tell a replaced file.
func stampOf(fi fs.FileInfo) Stamp {
	return Stamp{Size: fi.Size(), Mod: fi.ModTime().UnixNano()}
}
