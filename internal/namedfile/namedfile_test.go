//go:build unix

package namedfile_test

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/namedfile"
	"github.com/paduraksa/paduraksa/internal/namedfile/namedfiletest"
)

// special makes, in a fresh directory, every kind of file the reader must
// refuse, by name: a FIFO no one ever opens for writing, a directory, a
// listening Unix socket, a symlink to /dev/zero, and the devices.
func special(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink("/dev/zero", link))
	sub := filepath.Join(dir, "dir")
	require.NoError(t, os.Mkdir(sub, 0o700))
	return map[string]string{
		"/dev/zero": "/dev/zero", "/dev/urandom": "/dev/urandom", "fifo": fifo,
		"directory": sub, "socket": sock, "symlink to /dev/zero": link,
	}
}

// quick runs f on a goroutine and fails the test unless it returns
// within a second: the reader's timeout is minutes in these tests, so
// only a refusal that does not wait can pass, and a read that blocks
// fails the test instead of hanging it.
func quick(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("still waiting after a second")
	}
}

func code(err error) string {
	var e *namedfile.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

var slowReader = namedfile.Reader{Timeout: 10 * time.Minute}

func TestRefusesWhatIsNotARegularFile(t *testing.T) {
	want := map[string]string{
		"/dev/zero": "is a character device", "/dev/urandom": "is a character device", "fifo": "is a FIFO",
		"directory": "is a directory", "socket": "is a socket", "symlink to /dev/zero": "(a link to /dev/zero) is a character device",
	}
	for what, name := range special(t) {
		t.Run(what, func(t *testing.T) {
			var err error
			quick(t, func() { _, err = slowReader.Read(name, namedfile.MaxPEMSize) })
			require.Error(t, err)
			assert.Equal(t, namedfile.CodeNotRegular, code(err), err.Error())
			assert.Contains(t, err.Error(), name+" ")
			assert.Contains(t, err.Error(), want[what])
		})
	}
}

// TestDevicesAreNeverRead: a device that an opener hands over anyway
// (open happened, as after a swap between the stat and the open) is
// refused from fstat, with nothing read from it.
func TestDevicesAreNeverRead(t *testing.T) {
	for _, dev := range []string{"/dev/zero", "/dev/urandom"} {
		name := filepath.Join(t.TempDir(), "cert.pem")
		read := namedfiletest.Open(t, name, func() (namedfile.File, error) { return os.Open(dev) })
		_, err := slowReader.Read(name, namedfile.MaxPEMSize)
		assert.Equal(t, namedfile.CodeNotRegular, code(err), dev)
		assert.Zero(t, read.Load(), "bytes read from %s", dev)
	}
}

func TestRefusesAFileOverItsCap(t *testing.T) {
	dir := t.TempDir()
	at, over := filepath.Join(dir, "at"), filepath.Join(dir, "over")
	require.NoError(t, os.WriteFile(at, bytes.Repeat([]byte("a"), 100), 0o600))
	require.NoError(t, os.WriteFile(over, bytes.Repeat([]byte("a"), 101), 0o600))
	b, err := slowReader.Read(at, 100)
	require.NoError(t, err)
	assert.Len(t, b, 100)
	_, err = slowReader.Read(over, 100)
	assert.Equal(t, namedfile.CodeTooLarge, code(err))
	assert.Equal(t, over+" is 101 bytes; at most 100 are read", err.Error())
}

// TestReadsAtMostOnePastTheCap: a file whose stat says it is small and
// whose bytes never end (a /proc file, one growing while read) is read to
// one byte past the cap and refused.
func TestReadsAtMostOnePastTheCap(t *testing.T) {
	name := filepath.Join(t.TempDir(), "cert.pem")
	zero, err := os.Open("/dev/zero")
	require.NoError(t, err)
	t.Cleanup(func() { zero.Close() })
	read := namedfiletest.Serve(t, name, 10, zero)
	_, err = slowReader.Read(name, 1<<20)
	assert.Equal(t, namedfile.CodeTooLarge, code(err))
	assert.Contains(t, err.Error(), "holds more than its size said")
	assert.Equal(t, int64(1<<20+1), read.Load())
}

func TestRefusesWhatTheFilesTogetherPass(t *testing.T) {
	dir := t.TempDir()
	var reqs []namedfile.Request
	for _, n := range []string{"a", "b", "c"} {
		name := filepath.Join(dir, n)
		require.NoError(t, os.WriteFile(name, bytes.Repeat([]byte(n), 400), 0o600))
		reqs = append(reqs, namedfile.Request{Name: name, Max: 500})
	}
	res := namedfile.Reader{MaxTotal: 1000}.ReadAll(reqs, nil)
	var refused []error
	for _, r := range res {
		if r.Err != nil {
			refused = append(refused, r.Err)
		}
	}
	require.Len(t, refused, 1, "two of 400 bytes fit in 1000, the third does not")
	assert.Equal(t, namedfile.CodeTooLarge, code(refused[0]))
	assert.Contains(t, refused[0].Error(), "is 400 bytes: with the other files named with it, more than the 1000 bytes read at most together")
}

func TestMissingIsTheFileSystemsError(t *testing.T) {
	_, err := slowReader.Read(filepath.Join(t.TempDir(), "nope"), 100)
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.Empty(t, code(err))
}

// waitAbandoned waits until the count of abandoned reads is n.
func waitAbandoned(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		got, changed := namedfile.Abandoned()
		if got == n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("%d abandoned reads, want %d", got, n)
		}
	}
}

// TestTimeout: a file whose open hangs is refused at the deadline; the
// files the other readers took are read; the reads are abandoned,
// counted, until they return.
func TestTimeout(t *testing.T) {
	waitAbandoned(t, 0)
	dir := t.TempDir()
	stuck, after := filepath.Join(dir, "stuck"), filepath.Join(dir, "after")
	require.NoError(t, os.WriteFile(after, []byte("x"), 0o600))
	opened, release := namedfiletest.Hang(t, stuck, []byte("late"))
	start := time.Now()
	res := namedfile.Reader{Timeout: 200 * time.Millisecond}.ReadAll([]namedfile.Request{{Name: stuck, Max: 10}, {Name: after, Max: 10}}, nil)
	took := time.Since(start)
	<-opened
	assert.GreaterOrEqual(t, took, 200*time.Millisecond)
	assert.Less(t, took, 5*time.Second)
	assert.Equal(t, namedfile.CodeTimeout, code(res[0].Err))
	assert.Equal(t, stuck+": not read within 200ms", res[0].Err.Error())
	require.NoError(t, res[1].Err, "a file after the one that hangs")
	assert.Equal(t, "x", string(res[1].Data))
	waitAbandoned(t, 1)
	release()
	waitAbandoned(t, 0)
}

// TestTimeoutUnreached: with every reader stuck, the files no reader
// reached are refused too, naming the file that holds them up.
func TestTimeoutUnreached(t *testing.T) {
	waitAbandoned(t, 0)
	dir := t.TempDir()
	var reqs []namedfile.Request
	var releases []func()
	for i := range 4 {
		name := filepath.Join(dir, "stuck"+string(rune('a'+i)))
		_, release := namedfiletest.Hang(t, name, nil)
		releases = append(releases, release)
		reqs = append(reqs, namedfile.Request{Name: name, Max: 10})
	}
	after := filepath.Join(dir, "after")
	require.NoError(t, os.WriteFile(after, []byte("x"), 0o600))
	reqs = append(reqs, namedfile.Request{Name: after, Max: 10})
	res := namedfile.Reader{Timeout: time.Second}.ReadAll(reqs, nil)
	for i := range 4 {
		assert.Equal(t, reqs[i].Name+": not read within 1s", res[i].Err.Error())
	}
	assert.Equal(t, namedfile.CodeTimeout, code(res[4].Err))
	assert.Equal(t, after+": not read: "+reqs[0].Name+" had not been read within 1s", res[4].Err.Error())
	waitAbandoned(t, 4)
	for _, release := range releases {
		release()
	}
	waitAbandoned(t, 0)
}

// TestBusy: with MaxAbandoned reads hung, the next read is refused at
// once instead of parking one more goroutine; once they return, reads
// work again.
func TestBusy(t *testing.T) {
	waitAbandoned(t, 0)
	dir := t.TempDir()
	r := namedfile.Reader{Timeout: 50 * time.Millisecond}
	var releases []func()
	for i := range namedfile.MaxAbandoned {
		name := filepath.Join(dir, "stuck"+string(rune('a'+i)))
		_, release := namedfiletest.Hang(t, name, nil)
		releases = append(releases, release)
		_, err := r.Read(name, 10)
		require.Equal(t, namedfile.CodeTimeout, code(err))
	}
	waitAbandoned(t, namedfile.MaxAbandoned)
	fine := filepath.Join(dir, "fine")
	require.NoError(t, os.WriteFile(fine, []byte("ok"), 0o600))
	var err error
	quick(t, func() { _, err = namedfile.Reader{Timeout: 10 * time.Minute}.Read(fine, 10) })
	assert.Equal(t, namedfile.CodeBusy, code(err))
	assert.Contains(t, err.Error(), "8 earlier reads of named files have not returned")
	for _, release := range releases {
		release()
	}
	waitAbandoned(t, 0)
	b, err := r.Read(fine, 10)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b))
}

// TestReuse: a file whose stat equals the earlier result's stamp is not
// read again (its bytes are the same slice); one replaced by a rename, or
// rewritten in place with another size, is.
func TestReuse(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "cert.pem")
	require.NoError(t, os.WriteFile(name, []byte("one"), 0o600))
	var r namedfile.Reader
	reqs := []namedfile.Request{{Name: name, Max: 100}}
	first := r.ReadAll(reqs, nil)[0]
	require.NoError(t, first.Err)
	prev := func(n string) (namedfile.Result, bool) { return first, n == name }

	again := r.ReadAll(reqs, prev)[0]
	require.NoError(t, again.Err)
	assert.True(t, unsafe.SliceData(first.Data) == unsafe.SliceData(again.Data), "the file was read again")

	tmp := filepath.Join(dir, "tmp")
	require.NoError(t, os.WriteFile(tmp, []byte("two"), 0o600))
	require.NoError(t, os.Chtimes(tmp, time.Unix(0, first.Stamp.Mod), time.Unix(0, first.Stamp.Mod)))
	require.NoError(t, os.Rename(tmp, name))
	renamed := r.ReadAll(reqs, prev)[0]
	require.NoError(t, renamed.Err)
	assert.Equal(t, "two", string(renamed.Data), "same size and time, another inode")

	require.NoError(t, os.WriteFile(name, []byte("three"), 0o600))
	rewritten := r.ReadAll(reqs, func(string) (namedfile.Result, bool) { return renamed, true })[0]
	assert.Equal(t, "three", string(rewritten.Data))
}

// TestReusedBytesCount: bytes taken from an earlier read count toward
// MaxTotal as read ones do.
func TestReusedBytesCount(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	require.NoError(t, os.WriteFile(a, bytes.Repeat([]byte("a"), 600), 0o600))
	require.NoError(t, os.WriteFile(b, bytes.Repeat([]byte("b"), 600), 0o600))
	r := namedfile.Reader{MaxTotal: 1000}
	first := r.ReadAll([]namedfile.Request{{Name: a, Max: 1000}}, nil)[0]
	require.NoError(t, first.Err)
	res := r.ReadAll([]namedfile.Request{{Name: a, Max: 1000}, {Name: b, Max: 1000}}, func(n string) (namedfile.Result, bool) { return first, n == a })
	// The files are read at once on several goroutines: whichever comes
	// second is the one over the total, a reused one as well as a read one.
	codes := []string{code(res[0].Err), code(res[1].Err)}
	assert.ElementsMatch(t, []string{"", namedfile.CodeTooLarge}, codes, "one of the two is over the total, the reused bytes counted")
}

func TestReadsRealFilesWhole(t *testing.T) {
	name := filepath.Join(t.TempDir(), "big")
	want := bytes.Repeat([]byte("0123456789abcdef"), 40000) // 640,000 bytes: many reads
	require.NoError(t, os.WriteFile(name, want, 0o600))
	got, err := slowReader.Read(name, namedfile.MaxPEMSize)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	got, err = slowReader.Read(name, int64(len(want)))
	require.NoError(t, err, "a file of exactly the cap")
	assert.Equal(t, want, got)
}
