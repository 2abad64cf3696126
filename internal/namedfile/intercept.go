package namedfile

import (
	"io"
	"io/fs"
	"maps"
	"sync"
	"sync/atomic"
)

// File is an open file as the reader uses it; *os.File is one.
type File interface {
	io.Reader
	Stat() (fs.FileInfo, error)
	Close() error
}

// Opener opens a file in place of the file system.
type Opener func(name string) (File, error)

// intercepts maps names to the Opener that opens them; nil when none is
// set, which is always outside tests.
var intercepts struct {
	mu sync.Mutex // serialises writers
	m  atomic.Pointer[map[string]Opener]
}

// Intercept makes every read of name, the exact string as the caller
// names it, open the file with open instead of the file system, until
// the returned function is called; the rules of the package apply to
// what open returns as to a real file (its Stat must say regular; its
// size, its bytes and the deadline are checked), and a read of it is
// never taken from an earlier result. It is for the module's tests: no
// file on a test machine hangs, grows or counts its reads.
func Intercept(name string, open Opener) (restore func()) {
	intercepts.mu.Lock()
	defer intercepts.mu.Unlock()
	m := map[string]Opener{}
	if cur := intercepts.m.Load(); cur != nil {
		m = maps.Clone(*cur)
	}
	m[name] = open
	intercepts.m.Store(&m)
	return func() {
		intercepts.mu.Lock()
		defer intercepts.mu.Unlock()
		m := maps.Clone(*intercepts.m.Load())
		delete(m, name)
		if len(m) == 0 {
			intercepts.m.Store(nil)
		} else {
			intercepts.m.Store(&m)
		}
	}
}

// intercepted returns the Opener of name, or nil.
func intercepted(name string) Opener {
	if m := intercepts.m.Load(); m != nil {
		return (*m)[name]
	}
	return nil
}
