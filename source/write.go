package source

import (
	"os"
	"path/filepath"
)

// writeFileAtomic replaces path with data whole: a temporary file in the
// same directory, written, synced and renamed over it, so that a reader (a
// restart, the polls) sees the old document or the new one, never half
// of one. The file keeps its permissions (0644 for a new one). The
// rename is made durable by syncing the directory; a directory that
// cannot be synced (some file systems refuse it) is not an error, since
// the file is replaced all the same.
func writeFileAtomic(path string, data []byte) (err error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
