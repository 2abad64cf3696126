// Package namedfiletest makes the files the module's tests need and no
// test machine has: one whose open hangs, one that holds more than its
// size says, one that counts the bytes read from it. Each works through
// [namedfile.Intercept], so the code under test reads it through
// namedfile's rules as it reads a real file; each is undone when its test
// ends.
package namedfiletest

import (
	"bytes"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/internal/namedfile"
)

// Hang makes name a file whose open blocks until release is called (or
// the test ends), as on a hung network file system; then it opens as a
// regular file holding content. Opened reports each open as it starts.
func Hang(t testing.TB, name string, content []byte) (opened <-chan struct{}, release func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	starts := make(chan struct{}, 16)
	restore := namedfile.Intercept(name, func(string) (namedfile.File, error) {
		select {
		case starts <- struct{}{}:
		default:
		}
		<-gate
		return &File{R: bytes.NewReader(content), Info: Info{FileName: name, FileSize: int64(len(content))}}, nil
	})
	t.Cleanup(func() { release(); restore() })
	return starts, release
}

// Serve makes name a regular file of the given size whose bytes come
// from r, and returns the count of bytes read from it.
func Serve(t testing.TB, name string, size int64, r io.Reader) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	restore := namedfile.Intercept(name, func(string) (namedfile.File, error) {
		return &File{R: r, Info: Info{FileName: name, FileSize: size}, Count: &n}, nil
	})
	t.Cleanup(restore)
	return &n
}

// Open makes name the file open returns, its reads counted.
func Open(t testing.TB, name string, open func() (namedfile.File, error)) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	restore := namedfile.Intercept(name, func(string) (namedfile.File, error) {
		f, err := open()
		if err != nil {
			return nil, err
		}
		return &counted{File: f, n: &n}, nil
	})
	t.Cleanup(restore)
	return &n
}

type counted struct {
	namedfile.File
	n *atomic.Int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.File.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// File is an open file of Info's stat whose bytes come from R.
type File struct {
	R     io.Reader
	Info  Info
	Count *atomic.Int64 // bytes read; nil: not counted
}

func (f *File) Read(p []byte) (int, error) {
	n, err := f.R.Read(p)
	if f.Count != nil {
		f.Count.Add(int64(n))
	}
	return n, err
}

// Stat returns Info.
func (f *File) Stat() (fs.FileInfo, error) { return f.Info, nil }

// Close does nothing.
func (f *File) Close() error { return nil }

// Info is the stat of a File: regular unless FileMode says otherwise.
type Info struct {
	FileName string
	FileSize int64
	FileMode fs.FileMode
}

func (i Info) Name() string       { return i.FileName }
func (i Info) Size() int64        { return i.FileSize }
func (i Info) Mode() fs.FileMode  { return i.FileMode }
func (i Info) ModTime() time.Time { return time.Time{} }
func (i Info) IsDir() bool        { return i.FileMode.IsDir() }
func (i Info) Sys() any           { return nil }
