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

	"github.com/paduraksa/paduraksa/internal/problem"
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

// ReadAll reads the files of reqs on a few goroutines of its own
// (readers), and returns their results, one per request, within Timeout.
// prev, when not nil, returns the result of an earlier read of a name: a
// file whose stat equals that result's stamp gives the same result
// without being read again.
func (r Reader) ReadAll(reqs []Request, prev func(name string) (Result, bool)) []Result {
	if len(reqs) == 0 {
		return nil
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if n := abandoned.count(); n >= maxAbandoned {
		out := make([]Result, len(reqs))
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
	b := &batch{reqs: reqs, prev: prev, total: total, left: total,
		res: make([]Result, len(reqs)), state: make([]uint8, len(reqs)), done: make(chan struct{})}
	for range min(len(reqs), readers) {
		go b.read()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-b.done:
		return b.res
	case <-t.C:
	}
	return b.stop(timeout)
}

// readers is how many goroutines read the files of one ReadAll, so that
// a file that hangs holds up the others only when as many hang.
const readers = 4

// The states of a request of a batch.
const (
	unstarted uint8 = iota
	reading
	finished
)

// batch is one ReadAll: its readers take the requests in order. The
// caller may stop waiting at any time: from then on a reader stores
// nothing and ends after the read it is in.
type batch struct {
	reqs  []Request
	prev  func(string) (Result, bool)
	total int64 // MaxTotal
	done  chan struct{}

	mu      sync.Mutex
	left    int64    // what the files read so far left of total
	res     []Result // final where state is finished
	state   []uint8
	next    int // the first unstarted request
	count   int // the finished ones
	stopped bool
}

// read is a reader: it reads requests until none is left or the caller
// stopped waiting.
func (b *batch) read() {
	for {
		b.mu.Lock()
		if b.stopped || b.next == len(b.reqs) {
			b.mu.Unlock()
			return
		}
		i := b.next
		b.next++
		b.state[i] = reading
		b.mu.Unlock()

		r := b.one(b.reqs[i])

		b.mu.Lock()
		if b.stopped {
			b.mu.Unlock()
			abandoned.add(-1) // stop counted this read as abandoned
			return
		}
		b.res[i], b.state[i] = r, finished
		b.count++
		all := b.count == len(b.reqs)
		b.mu.Unlock()
		if all {
			close(b.done)
		}
	}
}

// stop ends the wait at the deadline: the results so far stand, the
// reads under way are abandoned, and every file not read is refused.
func (b *batch) stop(timeout time.Duration) []Result {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.count == len(b.reqs) {
		return b.res
	}
	b.stopped = true
	out := make([]Result, len(b.reqs))
	stuck := ""
	for i, q := range b.reqs {
		switch b.state[i] {
		case finished:
			out[i] = b.res[i]
		case reading:
			abandoned.add(1)
			out[i].Err = &Error{Code: CodeTimeout, Name: q.Name, Msg: q.Name + ": not read within " + timeout.String()}
			if stuck == "" {
				stuck = q.Name
			}
		}
	}
	for i, q := range b.reqs {
		if b.state[i] == unstarted {
			out[i].Err = &Error{Code: CodeTimeout, Name: q.Name,
				Msg: q.Name + ": not read: " + stuck + " had not been read within " + timeout.String()}
		}
	}
	return out
}

// reserve takes n bytes of what is left of total, and reports whether
// there were.
func (b *batch) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		return false
	}
	b.left -= n
	return true
}

// one reads one file, or reuses an earlier read of it.
func (b *batch) one(q Request) Result {
	if open := intercepted(q.Name); open != nil {
		return b.readOpened(q, q.Name, func() (File, error) { return open(q.Name) })
	}
	if b.prev != nil {
		if p, ok := b.prev(q.Name); ok && p.Err == nil && int64(len(p.Data)) <= q.Max {
			if fi, err := os.Stat(q.Name); err == nil && fi.Mode().IsRegular() && stampOf(fi) == p.Stamp {
				if !b.reserve(int64(len(p.Data))) {
					return Result{Err: b.tooLarge(q, int64(len(p.Data)), "is "+strconv.Itoa(len(p.Data))+" bytes")}
				}
				return p
			}
		}
	}
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
	return b.readOpened(q, resolved, func() (File, error) {
		return os.OpenFile(resolved, os.O_RDONLY|openFlags, 0)
	})
}

// readOpened opens a file, checks it on its descriptor and reads it.
func (b *batch) readOpened(q Request, resolved string, open func() (File, error)) Result {
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
	size := fi.Size()
	if size > q.Max {
		return Result{Err: b.tooLarge(q, size, "is "+strconv.FormatInt(size, 10)+" bytes")}
	}
	if !b.reserve(size) {
		return Result{Err: b.tooLarge(q, size, "is "+strconv.FormatInt(size, 10)+" bytes")}
	}
	data, err := readAtMost(f, size, q.Max)
	if err != nil {
		b.reserve(-size)
		return Result{Err: &fs.PathError{Op: "read", Path: q.Name, Err: err}}
	}
	if n := int64(len(data)); n > q.Max || n > size && !b.reserve(n-size) {
		b.reserve(-size)
		return Result{Err: b.tooLarge(q, n, "holds more than its size said")}
	} else if n < size {
		b.reserve(n - size) // a file that shrank gives back what it did not use
	}
	return Result{Data: data, Stamp: stampOf(fi)}
}

// tooLarge is the refusal of a file of size bytes: over its cap, or over
// what the other files left of MaxTotal.
func (b *batch) tooLarge(q Request, size int64, what string) error {
	msg := q.Name + " " + what + "; at most " + strconv.FormatInt(q.Max, 10) + " are read"
	if size <= q.Max {
		msg = q.Name + " " + what + ": with the other files named with it, more than the " + strconv.FormatInt(b.total, 10) + " bytes read at most together"
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

// Problem returns err as the library's problem type, with its code and
// no path, when it is a refusal of the reader, and err itself otherwise
// (nil for nil): the error of a function that reads one file for a
// caller who has no document path to put in front.
func Problem(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return &problem.Error{Code: e.Code, Msg: e.Msg}
	}
	return err
}
