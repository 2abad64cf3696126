package source

import (
	"bytes"
	"cmp"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// logBuffer is a log sink a test reads while the source writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) count(s string) int { return strings.Count(l.String(), s) }

// recorder is a Publish that keeps what it was handed and applies it.
type recorder struct {
	mu   sync.Mutex
	docs []Document
	// during, when set, runs inside the publish, before it answers.
	during func()
}

func (r *recorder) publish(ctx context.Context, d Document) (snapshot.Outcome, error) {
	r.mu.Lock()
	r.docs = append(r.docs, d)
	n := len(r.docs)
	during := r.during
	r.mu.Unlock()
	if during != nil {
		during()
	}
	return snapshot.Outcome{Revision: uint64(n), Status: snapshot.Applied}, nil
}

// published returns the data of every document handed over, in order.
func (r *recorder) published() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.docs {
		out = append(out, string(d.Data))
	}
	return out
}

// newTestFile returns a File of path, logging into logs at debug level.
func newTestFile(t *testing.T, path string, period time.Duration, logs *logBuffer) *File {
	t.Helper()
	f, err := NewFile(FileConfig{Path: path, Period: period,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	return f
}

func write(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// waitFor polls cond until it holds, for at most 10 s: the outcome of a
// Run is seen through what it published or logged.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// run starts f.Run with publish and stops it when the test ends.
func run(t *testing.T, f *File, publish Publish) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, publish) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Error("Run did not return")
		}
	})
}

// TestFilePublishesOnlySettledFiles: a poll publishes a change once a
// second read agrees with the first, never a read that no other
// confirmed, and an applied document never again.
func TestFilePublishesOnlySettledFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	write(t, path, "v1")
	logs := &logBuffer{}
	f := newTestFile(t, path, NoPolling, logs)
	doc, err := f.Load(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Document{Data: []byte("v1"), Why: Start}, doc)
	var r recorder
	poll := func() { t.Helper(); require.NoError(t, f.poll(context.Background(), r.publish)) }

	poll()
	write(t, path, "v2 half") // caught while written
	poll()
	write(t, path, "v2 half and the rest")
	poll()
	assert.Empty(t, r.published(), "no read was confirmed by a second one")
	poll()
	assert.Equal(t, []string{"v2 half and the rest"}, r.published())
	assert.Equal(t, Change, r.docs[0].Why)
	poll()
	poll()
	assert.Len(t, r.published(), 1, "an applied document is not published again")

	// A change that is undone before it settles is never published.
	write(t, path, "v3")
	poll()
	write(t, path, "v2 half and the rest")
	poll()
	poll()
	assert.Len(t, r.published(), 1)
	assert.Equal(t, 1, logs.count(`msg="config reload" file=`+path+" why=change revision=1 status=applied"), logs.String())
}

// TestFileReadsAPeriodApart: a poll starts a whole period after the end
// of the one before, its publish included, so two agreeing reads were
// always at least a period apart, however long a publish takes (a loaded
// machine, a large document).
func TestFileReadsAPeriodApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	write(t, path, "v0")
	const period = 20 * time.Millisecond
	f := newTestFile(t, path, period, &logBuffer{})
	var mu sync.Mutex
	var starts []time.Time
	f.read = func(name string, max int64) ([]byte, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return snapshot.ReadDocument(name, max)
	}
	_, err := f.Load(context.Background())
	require.NoError(t, err)
	var r recorder
	// Each publish takes longer than two periods and a half.
	r.during = func() { time.Sleep(period*5/2 + period/7) }
	run(t, f, r.publish)
	for i := 1; i <= 4; i++ {
		v := "v" + string(rune('0'+i))
		write(t, path, v)
		waitFor(t, v+" published", func() bool { p := r.published(); return len(p) == i && p[i-1] == v })
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 2; i < len(starts); i++ { // starts[0] is Load's, starts[1] the first poll's
		assert.GreaterOrEqual(t, starts[i].Sub(starts[i-1]), period, "read %d started %v after read %d", i, starts[i].Sub(starts[i-1]), i-1)
	}
}

// TestFileReload: a reload publishes what the file holds at once,
// changed or not, whole or not; asked for while the file cannot be read,
// it says so every time.
func TestFileReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	write(t, path, "v1")
	logs := &logBuffer{}
	f := newTestFile(t, path, NoPolling, logs)
	_, err := f.Load(context.Background())
	require.NoError(t, err)
	var r recorder
	run(t, f, r.publish)

	f.Reload()
	waitFor(t, "the reload of the unchanged file", func() bool { return len(r.published()) == 1 })
	write(t, path, "v2 half")
	f.Reload()
	waitFor(t, "the reload of the changed file", func() bool { return len(r.published()) == 2 })
	assert.Equal(t, []string{"v1", "v2 half"}, r.published())
	for _, d := range r.docs {
		assert.Equal(t, Reload, d.Why)
	}

	require.NoError(t, os.Remove(path))
	f.Reload()
	waitFor(t, "the first unreadable reload", func() bool { return logs.count("config unreadable") == 1 })
	f.Reload()
	waitFor(t, "the second unreadable reload", func() bool { return logs.count("config unreadable") == 2 })
	assert.Len(t, r.published(), 2, "nothing was published without a file")
	assert.Equal(t, 2, logs.count("why=reload"), logs.String())
}

// TestFileUnreadableLoggedOnce: polls of a file that cannot be read log
// it once, until the error changes or the file was readable in between.
func TestFileUnreadableLoggedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "paduraksa.yaml")
	write(t, path, "v1")
	logs := &logBuffer{}
	f := newTestFile(t, path, NoPolling, logs)
	_, err := f.Load(context.Background())
	require.NoError(t, err)
	var r recorder
	poll := func() { t.Helper(); require.NoError(t, f.poll(context.Background(), r.publish)) }

	require.NoError(t, os.Remove(path))
	for range 3 {
		poll()
	}
	assert.Equal(t, 1, logs.count("config unreadable"), logs.String())
	assert.Contains(t, logs.String(), "no such file or directory")

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	require.NoError(t, os.Rename(fifo, path))
	start := time.Now()
	poll()
	poll()
	assert.Less(t, time.Since(start), 2*time.Second, "a FIFO is refused from its stat, never waited on")
	assert.Equal(t, 2, logs.count("config unreadable"), "another error is logged again")
	assert.Contains(t, logs.String(), tlsselect.CodeFileNotRegular)

	require.NoError(t, os.Remove(path))
	write(t, path, "v1")
	poll()
	require.NoError(t, os.Remove(path))
	poll()
	assert.Equal(t, 3, logs.count("config unreadable"), "logged again once it was readable in between")
	assert.Empty(t, r.published())
}

// TestFileLogsEveryReloadWithItsOutcome: through a real publisher, each
// reload is logged with its outcome, a refusal with every problem.
func TestFileLogsEveryReloadWithItsOutcome(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	fixed := "hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200, body: %s}\n"
	write(t, path, strings.Replace(fixed, "%s", "one", 1))
	logs := &logBuffer{}
	f := newTestFile(t, path, NoPolling, logs)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: new(snapshot.Store)})
	defer pub.Close()
	doc, err := f.Load(context.Background())
	require.NoError(t, err)
	o, err := To(pub)(context.Background(), doc)
	require.NoError(t, err)
	require.Equal(t, snapshot.Applied, o.Status)
	run(t, f, To(pub))

	reload := func(what, want string) {
		t.Helper()
		f.Reload()
		waitFor(t, what, func() bool { return strings.Contains(logs.String(), want) })
	}
	reload("unchanged", `msg="config reload" file=`+path+" why=reload revision=1 status=unchanged")
	write(t, path, strings.Replace(fixed, "%s", "two", 1))
	reload("applied", `msg="config reload" file=`+path+" why=reload revision=2 status=applied")
	write(t, path, "hosts:\n  - names: [app.test]\n    routes: [{path: /, upstream: missing}]\n    bogus: 1\n")
	reload("refused", "level=ERROR")
	line := logs.String()[strings.LastIndex(logs.String(), "level=ERROR"):]
	assert.Contains(t, line, `msg="config reload refused; the previous config keeps serving" file=`+path+" why=reload revision=3 status=refused problems=2")
	assert.Contains(t, line, "hosts[0].bogus: ")
	assert.Contains(t, line, "(document.field.unknown); hosts[0].routes[0].upstream: ")
	assert.Contains(t, line, "(route.upstream.unknown)")
	cur, _ := pub.Current()
	assert.Equal(t, uint64(2), cur.Revision, "the refused reload left the applied one serving")
}

// TestFileRefusalsLogged: with RefusalsLogged, a refused reload is left
// to the publisher's log, and the file's other lines stay.
func TestFileRefusalsLogged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	write(t, path, "hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200, body: one}\n")
	logs := &logBuffer{}
	f, err := NewFile(FileConfig{Path: path, Period: NoPolling, RefusalsLogged: true,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{Store: new(snapshot.Store)})
	defer pub.Close()
	doc, err := f.Load(context.Background())
	require.NoError(t, err)
	_, err = To(pub)(context.Background(), doc)
	require.NoError(t, err)
	outcomes := make(chan snapshot.Status, 4)
	run(t, f, func(ctx context.Context, d Document) (snapshot.Outcome, error) {
		o, err := To(pub)(ctx, d)
		outcomes <- o.Status
		return o, err
	})

	write(t, path, "hosts:\n  - names: [app.test]\n    bogus: 1\n")
	f.Reload()
	require.Equal(t, snapshot.Refused, <-outcomes)
	write(t, path, "hosts:\n  - names: [app.test]\n    kind: fixed\n    fixed: {status: 200, body: two}\n")
	f.Reload() // the file logs its reloads in turn: this one's line follows the refused one's
	require.Equal(t, snapshot.Applied, <-outcomes)
	waitFor(t, "the next reload", func() bool { return strings.Contains(logs.String(), "why=reload revision=3 status=applied") })
	assert.NotContains(t, logs.String(), "config reload refused", logs.String())
	assert.Zero(t, logs.count("level=ERROR"), logs.String())
}

// TestFileSave: a push is written whole and taken as published: polls of
// the file publish nothing, and a later edit publishes as usual; a push
// that cannot be written is reported and changes nothing.
func TestFileSave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "paduraksa.yaml")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o640))
	logs := &logBuffer{}
	f := newTestFile(t, path, NoPolling, logs)
	_, err := f.Load(context.Background())
	require.NoError(t, err)
	var r recorder
	poll := func() { t.Helper(); require.NoError(t, f.poll(context.Background(), r.publish)) }

	before, err := os.Stat(path)
	require.NoError(t, err)
	pushed := []byte("pushed")
	version, err := f.Save(context.Background(), Push{Data: pushed})
	require.NoError(t, err)
	assert.Empty(t, version, "a file keeps no versions")
	pushed[0] = 'X' // the caller's bytes are its own again
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "pushed", string(saved))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.FileMode(0o640), fi.Mode().Perm(), "the file keeps its permissions")
	assert.False(t, os.SameFile(before, fi), "the push is a new file renamed over the old one, never the old one rewritten in place")
	left, err := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no temporary file is left")
	assert.Contains(t, logs.String(), `msg="pushed config written" file=`+path+" bytes=6")
	poll()
	poll()
	assert.Empty(t, r.published(), "the push is not published again")

	require.NoError(t, os.WriteFile(path, []byte("edited"), 0o640))
	poll()
	poll()
	assert.Equal(t, []string{"edited"}, r.published())

	// A push based on a version is stale: a file has none.
	_, err = f.Save(context.Background(), Push{Data: []byte("conditional"), IfVersion: "7"})
	assert.ErrorIs(t, err, ErrStale)

	// A file that cannot be written is reported, and the source keeps
	// what it had.
	g := newTestFile(t, filepath.Join(dir, "missing-dir", "x.yaml"), NoPolling, logs)
	_, err = g.Save(context.Background(), Push{Data: []byte("lost")})
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, logs.String(), "pushed config not written")
	assert.Equal(t, "edited", string(f.published))
	saved, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "edited", string(saved), "the refused push wrote nothing")
	poll()
	poll()
	assert.Len(t, r.published(), 1)
}

// TestFileSaveOvertakesARead: a push written while a reload reads the
// file makes that read stale: the file is read again, and the reload
// publishes the push, not the document the push replaced.
func TestFileSaveOvertakesARead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	write(t, path, "v1")
	f := newTestFile(t, path, NoPolling, &logBuffer{})
	_, err := f.Load(context.Background())
	require.NoError(t, err)
	write(t, path, "edited")
	f.read = func(name string, max int64) ([]byte, error) {
		data, err := snapshot.ReadDocument(name, max)
		if string(data) == "edited" {
			_, serr := f.Save(context.Background(), Push{Data: []byte("pushed")})
			require.NoError(t, serr)
		}
		return data, err
	}
	var r recorder
	require.NoError(t, f.reloadNow(context.Background(), r.publish))
	assert.Equal(t, []string{"pushed"}, r.published(), "the reload published what the push replaced")
	require.NoError(t, f.poll(context.Background(), r.publish))
	require.NoError(t, f.poll(context.Background(), r.publish))
	assert.Len(t, r.published(), 1)
}

// TestFileSaveDuringAPublish: a push written while a change was being
// published leaves unknown which of the two applied last; the file is
// published again, so what serves is what it holds.
func TestFileSaveDuringAPublish(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	write(t, path, "v1")
	f := newTestFile(t, path, NoPolling, &logBuffer{})
	_, err := f.Load(context.Background())
	require.NoError(t, err)
	var r recorder
	poll := func() { t.Helper(); require.NoError(t, f.poll(context.Background(), r.publish)) }
	write(t, path, "edited")
	r.during = func() {
		r.during = nil
		_, err := f.Save(context.Background(), Push{Data: []byte("pushed")})
		require.NoError(t, err)
	}
	poll()
	poll()
	assert.Equal(t, []string{"edited"}, r.published())
	poll()
	poll()
	assert.Equal(t, []string{"edited", "pushed"}, r.published(), "the pushed file is published again")
	poll()
	poll()
	assert.Len(t, r.published(), 2)
}

func TestFileLoad(t *testing.T) {
	dir := t.TempDir()
	f := newTestFile(t, filepath.Join(dir, "missing.yaml"), NoPolling, &logBuffer{})
	_, err := f.Load(context.Background())
	assert.ErrorIs(t, err, fs.ErrNotExist)

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	f = newTestFile(t, fifo, NoPolling, &logBuffer{})
	_, err = f.Load(context.Background())
	var p *ValidationError
	require.ErrorAs(t, err, &p)
	assert.Equal(t, tlsselect.CodeFileNotRegular, p.Code)

	big := filepath.Join(dir, "big.yaml")
	write(t, big, "hosts: []\n"+strings.Repeat("# padding\n", 10))
	f, err = NewFile(FileConfig{Path: big, MaxBytes: 32})
	require.NoError(t, err)
	_, err = f.Load(context.Background())
	require.ErrorAs(t, err, &p)
	assert.Equal(t, tlsselect.CodeFileTooLarge, p.Code)
}

func TestFileRunsOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paduraksa.yaml")
	write(t, path, "v1")
	f := newTestFile(t, path, NoPolling, &logBuffer{})
	var r recorder
	run(t, f, r.publish)
	waitFor(t, "the first Run", func() bool { return f.running.Load() })
	assert.ErrorIs(t, f.Run(context.Background(), r.publish), ErrRunning)
}

func TestNewFileProblems(t *testing.T) {
	for _, tc := range []struct {
		cfg  FileConfig
		want []string
	}{
		{FileConfig{Path: "x"}, nil},
		{FileConfig{Path: "x", Period: NoPolling, MaxBytes: config.MaxDocumentSize}, nil},
		{FileConfig{}, []string{CodePathMissing + " path"}},
		{FileConfig{Path: "x", MaxBytes: -1}, []string{CodeMaxBytesInvalid + " maxBytes"}},
		{FileConfig{MaxBytes: config.MaxDocumentSize + 1}, []string{CodePathMissing + " path", CodeMaxBytesInvalid + " maxBytes"}},
	} {
		f, err := NewFile(tc.cfg)
		var got []string
		for _, p := range snapshot.Problems(err) {
			got = append(got, p.Code+" "+p.Path)
		}
		assert.Equal(t, tc.want, got, "%+v", tc.cfg)
		if tc.want == nil {
			require.NotNil(t, f)
			assert.Equal(t, cmp.Or(tc.cfg.Period, DefaultPeriod), f.cfg.Period)
			assert.Equal(t, cmp.Or(tc.cfg.MaxBytes, config.MaxDocumentSize), f.cfg.MaxBytes)
		} else {
			assert.Nil(t, f)
		}
	}
}

func TestReasonNames(t *testing.T) {
	assert.Equal(t, "start", Start.String())
	assert.Equal(t, "change", Change.String())
	assert.Equal(t, "reload", Reload.String())
	assert.Equal(t, "invalid", Reason(9).String())
}
