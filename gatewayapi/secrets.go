package gatewayapi

import (
	"os"
	"path/filepath"

	"github.com/paduraksa/paduraksa/internal/namedfile"
)

// WriteSecrets writes the certificate files of the objects' Secrets
// ([Result.Secrets]) under Options.SecretDir, creating it (mode 0700)
// when missing: each file with mode 0600, written beside its place and
// renamed over it, so a reader never sees half a key. A file whose
// content is already the Secret's is left alone. It writes nothing for a
// translation without Secrets.
func (r *Result) WriteSecrets() error {
	for _, f := range r.Secrets {
		// What is there already is read as the library reads named files
		// (a regular file, at most the new contents' size, under a
		// deadline): a FIFO or a device there is replaced, never read.
		if old, err := (namedfile.Reader{}).Read(f.Path, int64(len(f.Data))); err == nil && string(old) == string(f.Data) {
			continue
		}
		dir := filepath.Dir(f.Path)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.Path)+".*")
		if err != nil {
			return err
		}
		_, err = tmp.Write(f.Data)
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), f.Path)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return err
		}
	}
	return nil
}
