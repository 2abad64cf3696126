package admin

import (
	"errors"
	"strings"

	"github.com/paduraksa/paduraksa/internal/namedfile"
)

// MaxTokenFileSize is the largest token file [ReadTokenFile] reads: a
// bearer token is tens of bytes.
const MaxTokenFileSize = 4 << 10

// ReadTokenFile returns the bearer token a file holds, without the white
// space around it, for Config.Token. The file is read under the rules by
// which the library reads every file a configuration names (see
// snapshot.ReadDocument): a regular file after symlinks, at most
// MaxTokenFileSize bytes, within tlsselect.FileTimeout, so a FIFO or a
// device named by mistake is refused at once (a *ValidationError with
// the rule's code) instead of blocking or filling memory. A file that
// holds only white space is an error.
func ReadTokenFile(name string) (string, error) {
	b, err := namedfile.Reader{}.Read(name, MaxTokenFileSize)
	if err != nil {
		return "", namedfile.Problem(err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", errors.New(name + " is empty")
	}
	return token, nil
}
