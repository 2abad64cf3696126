// Package etcdtest runs a real etcd for the fleet's tests: Debian's
// etcd-server, one member on free loopback ports with its data in a
// temporary directory.
//
// [Start] runs it as a child of a test and returns a [Server] once the
// member answers a Status; [Server.Stop] kills it and [Server.Start]
// starts it again on the same ports and data directory, so that a test
// sees a fleet ride out an outage. The member is killed at the test's
// cleanup and its output logged when the test failed. A machine without
// the binary fails the test with how to install it rather than skipping
// it.
//
// The package is imported only by tests. A Server's methods are called
// from the test's goroutine.
package etcdtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// install is what a machine without etcd is told.
const install = "the fleet's tests run against a real etcd: install Debian's package " +
	"(apt-get install -y etcd-server etcd-client), which ships /usr/bin/etcd"

// startTimeout bounds a start: ten times what a loaded machine needs.
const startTimeout = 30 * time.Second

// attempts is how often Start chooses ports again when another process
// took one first.
const attempts = 3

// Server is a running etcd member.
type Server struct {
	// Endpoint is the member's client URL, http on 127.0.0.1.
	Endpoint string

	t          *testing.T
	bin, dir   string
	peer       string
	cmd        *exec.Cmd
	exited     chan struct{}
	logs       *buffer
	clientPort int
}

// Start runs an etcd member for t and returns it once it answers.
func Start(t *testing.T) *Server {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcd not found (%v); %s", err, install)
	}
	var lastErr error
	for range attempts {
		s := &Server{t: t, bin: bin, dir: t.TempDir(), logs: &buffer{}}
		s.clientPort, s.peer = freePort(t), "http://"+loopback(freePort(t))
		s.Endpoint = "http://" + loopback(s.clientPort)
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(func() {
				s.Stop()
				if t.Failed() {
					t.Logf("etcd's output:\n%s", s.logs)
				}
			})
			return s
		}
	}
	t.Fatalf("etcd did not start: %v", lastErr)
	return nil
}

// Stop kills the member and waits for it to exit; a stopped member is
// left alone.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
	s.cmd = nil
}

// Start starts a stopped member again, on its ports and data directory,
// and returns once it answers; a running one is left alone.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	if err := s.start(); err != nil {
		s.t.Fatalf("etcd did not start again: %v", err)
	}
}

// StartAside starts a stopped member on its data directory but another
// client port, one that the clients of Endpoint do not reach, and returns
// its client URL: what is written there meanwhile is in the member's data
// when [Server.Start] serves Endpoint again. Stop stops it.
func (s *Server) StartAside() string {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("etcdtest: StartAside of a running member")
	}
	aside := "http://" + loopback(freePort(s.t))
	if err := s.startAt(aside); err != nil {
		s.t.Fatalf("etcd did not start aside: %v", err)
	}
	return aside
}

// Client returns a client of the member, closed at the test's cleanup.
func (s *Server) Client() *clientv3.Client {
	s.t.Helper()
	return ClientOf(s.t, s.Endpoint)
}

// ClientOf returns a client of endpoint, closed at t's cleanup.
func ClientOf(t *testing.T, endpoint string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, DialTimeout: startTimeout, Logger: zap.NewNop()})
	if err != nil {
		t.Fatalf("etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// start runs the member at Endpoint and waits until it answers a Status.
func (s *Server) start() error { return s.startAt(s.Endpoint) }

// startAt runs the member with its client URL at endpoint and waits until
// it answers a Status.
func (s *Server) startAt(endpoint string) error {
	cmd := exec.Command(s.bin,
		"--name", "default", "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
		"--listen-peer-urls", s.peer, "--initial-advertise-peer-urls", s.peer,
		"--initial-cluster", "default="+s.peer)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, Logger: zap.NewNop()})
	if err != nil {
		s.Stop()
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := c.Status(ctx, endpoint)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.cmd = nil
			return fmt.Errorf("etcd exited (a port taken?): %v\n%s", cmd.ProcessState, s.logs)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("etcd not answering after %v: %v\n%s", startTimeout, err, s.logs)
		}
		time.Sleep(20 * time.Millisecond) // a poll of a process that gives no event when it is ready
	}
}

// freePort returns a port no one listens on now at 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// buffer is a bytes.Buffer for the member's output, read while it runs.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
