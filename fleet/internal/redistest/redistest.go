// Package redistest runs a real Redis for the fleet's tests:
// Debian's redis-server as a child of the test, on a free loopback port,
// without persistence, its working directory a temporary one.
//
// [Start] returns a [Server] once Redis answers PING; it is killed at the
// test's cleanup, and its output is logged when the test failed.
// [Server.Stop] and [Server.Start] stop and restart it on the same port,
// for tests of a Redis that goes away and comes back; [Server.Pause] and
// [Server.Resume] freeze it, for a Redis that holds its connections and
// answers nothing. A machine without
// redis-server fails the test with how to install it rather than
// skipping it.
//
// The package is imported only by tests.
package redistest

import (
	"bufio"
	"bytes"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// install is what a machine without redis-server is told.
const install = "the fleet's tests run against a real Redis: install Debian's package " +
	"(apt-get install -y redis-server; .ci/run does), which ships /usr/bin/redis-server"

// startTimeout bounds a start, until PING answers: far more than a
// loaded machine needs.
const startTimeout = 10 * time.Second

// Server is a running redis-server.
type Server struct {
	// Addr is host:port on 127.0.0.1; URL is redis://Addr.
	Addr string
	URL  string

	t    testing.TB
	bin  string
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	logs bytes.Buffer
}

// Start runs a redis-server for t and stops it at t's cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(install)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &Server{Addr: addr, URL: "redis://" + addr, t: t, bin: bin, dir: t.TempDir()}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			s.mu.Lock()
			t.Logf("redis-server output:\n%s", s.logs.String())
			s.mu.Unlock()
		}
	})
	s.Start()
	return s
}

// Start starts the server again (on the same port) after [Server.Stop],
// and returns once PING answers. It is a no-op while it runs.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	cmd := exec.Command(s.bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", s.dir, "--daemonize", "no")
	cmd.Stdout, cmd.Stderr = (*lockedWriter)(s), (*lockedWriter)(s)
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		s.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	deadline := time.Now().Add(startTimeout)
	for {
		err := ping(s.Addr)
		if err == nil {
			return
		}
		select {
		case <-done:
			s.t.Fatalf("redis-server exited before answering PING: %v\n%s", err, s.output())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server did not answer PING within %v: %v\n%s", startTimeout, err, s.output())
		}
		time.Sleep(10 * time.Millisecond) // polling a port: there is no event to wait for
	}
}

// Stop kills the server and waits until it exited. It is a no-op when
// stopped.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGCONT) // a paused server, too
	cmd.Process.Kill()
	select {
	case <-done:
	case <-time.After(startTimeout):
		s.t.Errorf("redis-server (pid %d) did not exit within %v of SIGKILL", cmd.Process.Pid, startTimeout)
	}
}

// Pause stops the server with SIGSTOP: its connections stay open and
// its port accepts, but nothing is answered, as with a Redis stuck or
// unreachable behind a silent network. [Server.Resume] continues it.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatal("redistest: the server is not running")
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}

func (s *Server) output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// lockedWriter appends a process's output to the server's logs.
type lockedWriter Server

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.logs.Write(p)
}

// ping sends PING and wants +PONG, within a second.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return &unexpected{line}
	}
	return nil
}

type unexpected struct{ line string }

func (e *unexpected) Error() string { return "PING answered " + strconv.Quote(e.line) }
