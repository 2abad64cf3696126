package namedfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Codes of the reader's refusals. They are the same at every path that
// names a file (certificates[0].certFile, hosts[2].tls.clientCAs); the
// public packages export them (tlsselect.CodeFileNotRegular, ...).
const (
	CodeNotRegular = "file.notRegular" // a directory, device, FIFO or socket, after symlinks
	CodeTooLarge   = "file.tooLarge"   // over the cap, or the files of one read together over MaxTotal
	CodeTimeout    = "file.timeout"    // not read within Reader.Timeout
	CodeBusy       = "file.busy"       // refused at once: too many earlier reads never returned
)

// Limits and defaults; see the package doc for the reasons.
const (
	// MaxPEMSize caps each PEM file a document names: a certificate
	// chain, a private key, a client CA bundle.
	MaxPEMSize = 1 << 20
	// DefaultTimeout bounds one ReadAll when Reader.Timeout is 0.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxTotal bounds the bytes of one ReadAll when
	// Reader.MaxTotal is 0.
	DefaultMaxTotal = 64 << 20
	// maxAbandoned is how many reads that outlived their deadline may
	// still be in the kernel before a ReadAll is refused at once.
	maxAbandoned = 8
)

// Error is a file the reader refused. Errors of the file system itself
// (a missing file, permission denied) are returned as os returns them.
type Error struct {
	// Code is one of the Code constants.
	Code string
	// Name is the file as it was named.
	Name string
	// Msg says what is wrong and names the file.
	Msg string
}

func (e *Error) Error() string { return e.Msg }

// Request names one file to read and its cap in bytes.
type Request struct {
	Name string
	Max  int64
}

// Result is what reading one file gave: its bytes and stamp, or an error.
// Data must not be modified: a later ReadAll may share it.
type Result struct {
	Data  []byte
	Stamp Stamp
	Err   error
}

// Stamp identifies one version of a file: its device and inode (0 where
// the system has none) and its size and modification time. A file
// replaced by a rename has another inode; one rewritten in place another
// size or time.
type Stamp struct {
	Dev, Ino uint64
	Size     int64
	Mod      int64 // Unix nanoseconds
}

// Reader reads named files under the package's rules. The zero value
// uses the defaults.
type Reader struct {
	// Timeout bounds one ReadAll, every file of it together; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxTotal bounds the bytes of the files of one ReadAll together; 0
	// means DefaultMaxTotal.
	MaxTotal int64
}

// Read reads one file of at most max bytes.
func (r Reader) Read(name string, max int64) ([]byte, error) {
	res := r.ReadAll([]Request{{Name: name, Max: max}}, nil)
	return res[0].Data, res[0].Err
}

// ReadAll reads the files of reqs, in order, on a goroutine of its own,
// and returns their results, one per request, within Timeout. prev, when
// not nil, returns the result of an earlier read of a name: a file whose
// stat equals that result's stamp gives the same result without being
// read again.
func (r Reader) ReadAll(reqs []Request, prev func(name string) (Result, bool)) []Result {
	out := make([]Result, len(reqs))
	if len(reqs) == 0 {
		return out
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if n := abandoned.count(); n >= maxAbandoned {
		for i, q := range reqs {
			out[i].Err = &Error{Code: CodeBusy, Name: q.Name,
				Msg: q.Name + ": not read: " + strconv.Itoa(n) + " earlier reads of named files have not returned (a hung file system?)"}
		}
		return out
	}
	total := r.MaxTotal
	if total <= 0 {
		total = DefaultMaxTotal
	}
	w := &worker{reqs: reqs, prev: prev, total: total, left: total, res: make([]Result, len(reqs)), done: make(chan struct{})}
	go w.run()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.done:
		return w.res
	case <-t.C:
	}
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return w.res
	}
	w.stopped = true
	n := w.next
	abandoned.add(1)
	w.mu.Unlock()
	copy(out, w.res[:n])
	stuck := reqs[n].Name
	out[n].Err = &Error{Code: CodeTimeout, Name: stuck, Msg: stuck + ": not read within " + timeout.String()}
	for i := n + 1; i < len(reqs); i++ {
		out[i].Err = &Error{Code: CodeTimeout, Name: reqs[i].Name,
			Msg: reqs[i].Name + ": not read: " + stuck + " had not been read within " + timeout.String()}
	}
	return out
}

// worker reads the files of one ReadAll, one after the other. The caller
// may stop waiting at any time: from then on the worker stores nothing
// and ends after the read it is in.
type worker struct {
	reqs  []Request
	prev  func(string) (Result, bool)
	total int64 // MaxTotal
	left  int64 // what the files read so far left of it
	done  chan struct{}

	mu       sync.Mutex
	res      []Result // res[:next] are final; the caller reads them once it stopped
	next     int
	finished bool
	stopped  bool
}

func (w *worker) run() {
	for i, q := range w.reqs {
		r := w.one(q)
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			abandoned.add(-1)
			return
		}
		w.res[i] = r
		w.next = i + 1
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.finished = true
	w.mu.Unlock()
	close(w.done)
}

// one reads one file, or reuses an earlier read of it.
func (w *worker) one(q Request) Result {
	var r Result
	if open := intercepted(q.Name); open != nil {
		r = w.readOpened(q, q.Name, func() (File, error) { return open(q.Name) })
	} else {
		if w.prev != nil {
			if p, ok := w.prev(q.Name); ok && p.Err == nil && int64(len(p.Data)) <= min(q.Max, w.left) {
				if fi, err := os.Stat(q.Name); err == nil && fi.Mode().IsRegular() && stampOf(fi) == p.Stamp {
					w.left -= int64(len(p.Data))
					return p
				}
			}
		}
		r = w.read(q)
	}
	if r.Err == nil {
		w.left -= int64(len(r.Data))
	}
	return r
}

// read reads a file of the file system: resolve, stat, open, read.
func (w *worker) read(q Request) Result {
	resolved, err := filepath.EvalSymlinks(q.Name)
	if err != nil {
		return Result{Err: err}
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return Result{Err: err}
	}
	if !fi.Mode().IsRegular() {
		return Result{Err: notRegular(q.Name, resolved, fi.Mode())}
	}
	return w.readOpened(q, resolved, func() (File, error) {
		return os.OpenFile(resolved, os.O_RDONLY|openFlags, 0)
	})
}

// readOpened opens a file, checks it on its descriptor and reads it.
func (w *worker) readOpened(q Request, resolved string, open func() (File, error)) Result {
	f, err := open()
	if err != nil {
		return Result{Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Result{Err: err}
	}
	if !fi.Mode().IsRegular() {
		return Result{Err: notRegular(q.Name, resolved, fi.Mode())}
	}
	limit := min(q.Max, w.left)
	if fi.Size() > limit {
		return Result{Err: w.tooLarge(q, fi.Size(), "is "+strconv.FormatInt(fi.Size(), 10)+" bytes")}
	}
	data, err := readAtMost(f, fi.Size(), limit)
	if err != nil {
		return Result{Err: &fs.PathError{Op: "read", Path: q.Name, Err: err}}
	}
	if int64(len(data)) > limit {
		return Result{Err: w.tooLarge(q, int64(len(data)), "holds more than its size said")}
	}
	return Result{Data: data, Stamp: stampOf(fi)}
}

// tooLarge is the refusal of a file of size bytes: over its cap, or over
// what the files before it left of MaxTotal.
func (w *worker) tooLarge(q Request, size int64, what string) error {
	msg := q.Name + " " + what + "; at most " + strconv.FormatInt(q.Max, 10) + " are read"
	if size <= q.Max {
		msg = q.Name + " " + what + ": with the files named before it, more than the " + strconv.FormatInt(w.total, 10) + " bytes read at most together"
	}
	return &Error{Code: CodeTooLarge, Name: q.Name, Msg: msg}
}

// readAtMost reads r to its end, or to one byte past limit, which tells a
// file too long; size is what the file's stat said, the first guess of
// the buffer.
func readAtMost(r io.Reader, size, limit int64) ([]byte, error) {
	end := int(limit) + 1
	buf := make([]byte, 0, min(max(size, 0), limit)+1)
	for len(buf) < end {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // grow
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), end)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// notRegular is the refusal of a file of mode m; resolved is the target
// of the name's symlinks.
func notRegular(name, resolved string, m fs.FileMode) error {
	what := "is not a regular file"
	switch {
	case m.IsDir():
		what = "is a directory, not a regular file"
	case m&fs.ModeNamedPipe != 0:
		what = "is a FIFO, not a regular file"
	case m&fs.ModeSocket != 0:
		what = "is a socket, not a regular file"
	case m&fs.ModeCharDevice != 0:
		what = "is a character device, not a regular file"
	case m&fs.ModeDevice != 0:
		what = "is a device, not a regular file"
	}
	subject := name
	if resolved != name {
		subject += " (a link to " + resolved + ")"
	}
	return &Error{Code: CodeNotRegular, Name: name, Msg: subject + " " + what}
}

// abandoned counts the reads that outlived their ReadAll's deadline and
// are still in the kernel.
var abandoned abandonedReads

type abandonedReads struct {
	mu      sync.Mutex
	n       int
	changed chan struct{} // closed at the next change; nil until asked for
}

func (a *abandonedReads) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n
}

func (a *abandonedReads) add(d int) {
	a.mu.Lock()
	a.n += d
	if a.changed != nil {
		close(a.changed)
		a.changed = nil
	}
	a.mu.Unlock()
}

// watch returns the count and a channel closed at its next change.
func (a *abandonedReads) watch() (int, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.changed == nil {
		a.changed = make(chan struct{})
	}
	return a.n, a.changed
}
