package source

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/snapshot"
)

// DefaultPeriod is how often a [File] reads its file by default.
const DefaultPeriod = time.Second

// NoPolling is a [FileConfig.Period] that turns polling off: the file is
// read again only on [File.Reload].
const NoPolling time.Duration = -1

// Problem codes of [NewFile]; they are stable.
const (
	CodePathMissing     = "source.file.path.missing"     // at "path"
	CodeMaxBytesInvalid = "source.file.maxBytes.invalid" // at "maxBytes"
)

// ErrRunning is [File.Run]'s answer while another Run of the same File
// runs.
var ErrRunning = errors.New("source: the file's Run is already running")

// ErrNotNew is the error of Load, Run and Save on a zero [File], one not
// made by [NewFile].
var ErrNotNew = errors.New("source: a File not made by NewFile names no file")

// FileConfig configures a [File]. Only Path is required.
type FileConfig struct {
	// Path names the config file, JSON or YAML.
	Path string
	// Period is how long the file rests between two reads (from the end
	// of one, its publish included, to the start of the next); 0 means
	// [DefaultPeriod], a negative period ([NoPolling]) reads it again
	// only on [File.Reload].
	Period time.Duration
	// MaxBytes is the largest file read; 0 means
	// config.MaxDocumentSize, which it may not exceed.
	MaxBytes int64
	// Logger receives every reload with its outcome, an unreadable file
	// and every push written; nil discards.
	Logger *slog.Logger
	// RefusalsLogged says the publisher logs every refusal itself, with
	// its problems (a snapshot.PublisherConfig.OnOutcome that does, as
	// the reference daemon's): a refused reload is then left to that
	// line, so that it is logged once. The other outcomes, an unreadable
	// file and the pushes written are logged all the same.
	RefusalsLogged bool
}

// File is the [Source] of a config file: the gateway's document is what
// the file holds, read under the rules by which the library reads every
// file a document names ([snapshot.ReadDocument]: a regular file after
// symlinks, capped, within a deadline), so a FIFO or a device put in its
// place is refused at once.
//
// Run reads the file every Period and publishes a change once two reads
// in a row, at least a Period apart, agree: a file caught half-written
// (an editor or a copy still writing it) is published only if it stayed
// half-written for a whole Period. Writing a new file and renaming it over
// the old one makes a change visible at once and whole. [File.Reload]
// publishes what the file holds at once, changed or not (the operator
// asked, and the files the document names are read again). A file that
// cannot be read is logged once, until that changes; the previous
// document keeps serving.
//
// [File.Save] writes a pushed document to the file atomically and takes
// it as published, so that the next reads publish nothing.
//
// A File is safe for concurrent use: Load, Reload and Save may be called
// from any goroutine, Run from one at a time. Make it with [NewFile]: a
// zero File names no file, and its Load, Run and Save return
// [ErrNotNew] at once (Reload does nothing).
type File struct {
	cfg    FileConfig
	log    *slog.Logger
	reload chan struct{} // one pending Reload; more coalesce
	// read reads the file; snapshot.ReadDocument, wrapped by tests to
	// see when reads happen.
	read    func(name string, max int64) ([]byte, error)
	running atomic.Bool

	mu        sync.Mutex
	published []byte // the document last handed to the publisher, or saved; nil: none
	pending   []byte // a changed document read once, waiting for a second read
	lastErr   string // the read error last logged, "" after a good read
	saves     uint64 // counts the pushes written, so a read older than one is told apart
}

var _ Source = (*File)(nil)

// NewFile returns the source of cfg.Path, or every problem of cfg. It
// reads nothing yet.
func NewFile(cfg FileConfig) (*File, error) {
	var probs problem.List
	if cfg.Path == "" {
		probs.Add(CodePathMissing, "path", "a config file is required")
	}
	if cfg.MaxBytes < 0 || cfg.MaxBytes > config.MaxDocumentSize {
		probs.Add(CodeMaxBytesInvalid, "maxBytes", "must be 0 (the default) or 1 to "+strconv.Itoa(config.MaxDocumentSize))
	}
	if err := probs.Err(); err != nil {
		return nil, err
	}
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = config.MaxDocumentSize
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &File{cfg: cfg, log: log, reload: make(chan struct{}, 1), read: snapshot.ReadDocument}, nil
}

// Load reads the file and returns its document, taken as published: Run
// publishes it again only once it changed or on Reload. Its error is
// [snapshot.ReadDocument]'s.
func (f *File) Load(ctx context.Context) (Document, error) {
	if f.read == nil {
		return Document{}, ErrNotNew
	}
	data, err := f.readNow()
	defer f.mu.Unlock()
	if err != nil {
		return Document{}, err
	}
	f.published, f.pending, f.lastErr = data, nil, ""
	return Document{Data: data, Why: Start}, nil
}

// Run reads the file every Period and on Reload, and hands what it
// should publish to publish, waiting for each outcome, until ctx is
// done; it returns ctx's error, or [ErrRunning] while another Run of f
// runs. Without a Load first, the file is published once two reads
// agree.
func (f *File) Run(ctx context.Context, publish Publish) error {
	if f.read == nil {
		return ErrNotNew
	}
	if !f.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer f.running.Store(false)
	var tick <-chan time.Time
	var t *time.Timer
	if f.cfg.Period > 0 {
		t = time.NewTimer(f.cfg.Period)
		defer t.Stop()
		tick = t.C
	}
	for {
		var err error
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			err = f.poll(ctx, publish)
			// The rest starts after the read and its publish, so that
			// two reads are always a Period apart.
			t.Reset(f.cfg.Period)
		case <-f.reload:
			err = f.reloadNow(ctx, publish)
		}
		if err != nil {
			return err
		}
	}
}

// Reload asks Run to read the file and publish what it holds at once,
// whether it changed or not. It does not wait: Run logs the reload and
// its outcome. Reloads asked while one is waiting coalesce into it.
func (f *File) Reload() {
	select {
	case f.reload <- struct{}{}:
	default:
	}
}

// Save writes a pushed document to the file atomically (a temporary file
// in the same directory, written, synced, renamed over the file, and the
// directory synced), keeping the file's permissions, and takes it as
// published, so that Run does not publish it again; a read that began
// before the write is read again. It is admin.Config.Persist for a gateway
// served from the file. A file has no versions: a push with an IfVersion
// is refused with [ErrStale], and the version returned is empty. An error
// means the file was not replaced.
func (f *File) Save(ctx context.Context, p Push) (string, error) {
	if f.read == nil {
		return "", ErrNotNew
	}
	if p.IfVersion != "" {
		return "", ErrStale
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := writeFileAtomic(f.cfg.Path, p.Data); err != nil {
		f.log.Error("pushed config not written; a restart loses it", "file", f.cfg.Path, "err", err)
		return "", err
	}
	f.published, f.pending = bytes.Clone(p.Data), nil
	f.saves++
	f.log.Info("pushed config written", "file", f.cfg.Path, "bytes", len(p.Data))
	return "", nil
}

// readNow reads the file and returns with f.mu held and no push written
// since the read began: a read that a Save overtook is read again.
func (f *File) readNow() ([]byte, error) {
	for {
		f.mu.Lock()
		saves := f.saves
		f.mu.Unlock()
		data, err := f.read(f.cfg.Path, f.cfg.MaxBytes)
		f.mu.Lock()
		if f.saves == saves {
			return data, err
		}
		f.mu.Unlock()
	}
}

// poll publishes a changed file once two reads in a row agree.
func (f *File) poll(ctx context.Context, publish Publish) error {
	data, err := f.readNow()
	if f.unreadable(err, false) {
		f.mu.Unlock()
		return nil
	}
	switch {
	case bytes.Equal(data, f.published):
		f.pending = nil
	case f.pending != nil && bytes.Equal(data, f.pending):
		f.published, f.pending = data, nil
		saves := f.saves
		f.mu.Unlock()
		return f.hand(ctx, publish, Document{Data: data, Why: Change}, saves)
	default:
		f.log.Debug("config file changed; publishing when a second read agrees", "file", f.cfg.Path)
		f.pending = data
	}
	f.mu.Unlock()
	return nil
}

// reloadNow publishes what the file holds.
func (f *File) reloadNow(ctx context.Context, publish Publish) error {
	data, err := f.readNow()
	if f.unreadable(err, true) {
		f.mu.Unlock()
		return nil
	}
	f.published, f.pending = data, nil
	saves := f.saves
	f.mu.Unlock()
	return f.hand(ctx, publish, Document{Data: data, Why: Reload}, saves)
}

// unreadable reports whether err is a failed read, logging it when it is
// another than the one last logged, or always when asked. It is called
// with f.mu held.
func (f *File) unreadable(err error, asked bool) bool {
	if err == nil {
		f.lastErr = ""
		return false
	}
	if msg := err.Error(); asked || msg != f.lastErr {
		f.lastErr = msg
		f.log.Error("config unreadable; the previous config keeps serving", "file", f.cfg.Path, "err", err)
	}
	return true
}

// hand publishes d and logs its outcome. saves is the count of pushes
// written when d was taken as published: one written while d was being
// published leaves it unknown which of the two the publisher applied
// last, so the file is read and published again by the next polls (the
// push's own outcome when it was last: unchanged).
func (f *File) hand(ctx context.Context, publish Publish, d Document, saves uint64) error {
	o, err := publish(ctx, d)
	if err == nil {
		f.logOutcome(d, o)
	}
	f.mu.Lock()
	if err != nil || f.saves != saves {
		f.published, f.pending = nil, nil
	}
	f.mu.Unlock()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f.log.Error("config reload not published", "file", f.cfg.Path, "why", d.Why.String(), "err", err)
	}
	return nil
}

// logOutcome logs a reload with its outcome, a refusal with every
// problem.
func (f *File) logOutcome(d Document, o snapshot.Outcome) {
	attrs := []any{"file", f.cfg.Path, "why", d.Why.String(), "revision", o.Revision, "status", o.Status.String()}
	switch o.Status {
	case snapshot.Refused:
		if f.cfg.RefusalsLogged {
			return
		}
		var b strings.Builder
		for i, e := range o.Errors {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(e.Error())
		}
		f.log.Error("config reload refused; the previous config keeps serving", append(attrs, "problems", len(o.Errors), "errors", b.String())...)
	case snapshot.Superseded:
		f.log.Info("config reload", append(attrs, "supersededBy", o.SupersededBy)...)
	default:
		f.log.Info("config reload", attrs...)
	}
}
