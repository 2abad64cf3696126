// Package etcdtest runs a real etcd for the fleet's tests: Debian's
// etcd-server, on free loopback ports with its data in a temporary
// directory.
//
// [Start] runs one member as a child of a test and returns a [Server]
// once the member answers a Status; [Server.Stop] kills it and
// [Server.Start] starts it again on the same ports and data directory,
// so that a test sees a fleet ride out an outage. [StartTLS] runs a
// member that serves its clients over TLS and asks them for a
// certificate, with the files a client needs ([Server.TLS]).
// [StartCluster] runs a cluster of several members, one of which a test
// may kill. Members are killed at the test's cleanup and their output
// logged when the test failed. A machine without the binary fails the
// test with how to install it rather than skipping it.
//
// The package is imported only by tests. A Server's methods are called
// from the test's goroutine.
package etcdtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/paduraksa/paduraksa/internal/testcert"
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
	// Endpoint is the member's client URL, http on 127.0.0.1 (https for
	// [StartTLS]).
	Endpoint string
	// TLS is, for [StartTLS], the files and the configuration of a
	// client; nil otherwise.
	TLS *TLS

	t          testing.TB
	bin, dir   string
	name, peer string
	initial    string // --initial-cluster
	cmd        *exec.Cmd
	exited     chan struct{}
	logs       *buffer
	clientPort int
}

// TLS is what a client of a member served over TLS needs.
type TLS struct {
	// CAFile is the PEM of the CA that signed the member's and the
	// client's certificates; CertFile and KeyFile are the client's
	// certificate and key (PEM).
	CAFile, CertFile, KeyFile string
	// Config is a client TLS configuration with all three.
	Config *tls.Config
}

// Start runs an etcd member for t and returns it once it answers.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := etcdBinary(t)
	var lastErr error
	for range attempts {
		s := newServer(t, bin, "default")
		s.initial = s.name + "=" + s.peer
		if lastErr = s.start(); lastErr == nil {
			t.Cleanup(s.cleanup)
			return s
		}
	}
	t.Fatalf("etcd did not start: %v", lastErr)
	return nil
}

// newServer returns a member named name on free ports, not started.
func newServer(t testing.TB, bin, name string) *Server {
	s := &Server{t: t, bin: bin, dir: t.TempDir(), name: name, logs: &buffer{}}
	s.clientPort, s.peer = freePort(t), "http://"+loopback(freePort(t))
	s.Endpoint = "http://" + loopback(s.clientPort)
	return s
}

// etcdBinary returns the path of etcd, failing t without it.
func etcdBinary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		t.Fatalf("etcd not found (%v); %s", err, install)
	}
	return bin
}

// StartTLS runs an etcd member for t that serves its clients over TLS
// and requires a client certificate signed by its CA, and returns it
// once it answers; [Server.Client] and [Server.TLS] have what a client
// needs.
func StartTLS(t testing.TB) *Server {
	t.Helper()
	bin := etcdBinary(t)
	ca, err := testcert.NewCA("etcdtest CA")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ca.Server("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cli, err := ca.Client("paduraksa")
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t, bin, "default")
	s.initial = s.name + "=" + s.peer
	s.Endpoint = "https://" + loopback(s.clientPort)
	files := filepath.Join(s.dir, "tls")
	if err := os.Mkdir(files, 0o700); err != nil {
		t.Fatal(err)
	}
	s.TLS = &TLS{CAFile: filepath.Join(files, "ca.pem"), CertFile: filepath.Join(files, "client.pem"), KeyFile: filepath.Join(files, "client-key.pem")}
	writePEM(t, s.TLS.CAFile, ca.PEM())
	writePEM(t, s.TLS.CertFile, certPEM(cli))
	writePEM(t, s.TLS.KeyFile, keyPEM(t, cli))
	writePEM(t, filepath.Join(files, "server.pem"), certPEM(srv))
	writePEM(t, filepath.Join(files, "server-key.pem"), keyPEM(t, srv))
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	s.TLS.Config = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cli}, MinVersion: tls.VersionTLS12}
	if err := s.start(); err != nil {
		t.Fatalf("etcd did not start: %v", err)
	}
	t.Cleanup(s.cleanup)
	return s
}

// Cluster is a running cluster of etcd members.
type Cluster struct {
	// Members are the members, in the order they were named.
	Members []*Server
}

// StartCluster runs a cluster of n members for t and returns it once
// every member answers and the cluster has a leader.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	bin := etcdBinary(t)
	c := &Cluster{}
	var initial []string
	for i := range n {
		s := newServer(t, bin, "m"+strconv.Itoa(i))
		c.Members = append(c.Members, s)
		initial = append(initial, s.name+"="+s.peer)
	}
	for _, s := range c.Members {
		s.initial = strings.Join(initial, ",")
		if err := s.launch(s.Endpoint); err != nil {
			t.Fatalf("etcd member %s did not start: %v", s.name, err)
		}
		t.Cleanup(s.cleanup)
	}
	for _, s := range c.Members {
		if err := s.ready(s.Endpoint); err != nil {
			t.Fatalf("etcd member %s: %v", s.name, err)
		}
	}
	// A linearizable read answers once there is a leader.
	cli := ClientOf(t, c.Endpoints()...)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if _, err := cli.Get(ctx, "etcdtest"); err != nil {
		t.Fatalf("etcd cluster has no leader: %v", err)
	}
	return c
}

// Endpoints returns every member's client URL.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, s := range c.Members {
		out = append(out, s.Endpoint)
	}
	return out
}

// Leader returns the member that leads the cluster now, as the first
// running member that answers a Status says.
func (c *Cluster) Leader() *Server {
	t := c.Members[0].t
	t.Helper()
	cli := c.Client()
	for _, s := range c.Members {
		if s.cmd == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		st, err := cli.Status(ctx, s.Endpoint)
		cancel()
		if err != nil {
			continue
		}
		for _, m := range c.Members {
			ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
			ms, err := cli.Status(ctx, m.Endpoint)
			cancel()
			if err == nil && ms.Header.MemberId == st.Leader {
				return m
			}
		}
	}
	t.Fatal("etcdtest: no member names a running leader")
	return nil
}

// Client returns a client of every member, closed at the test's cleanup.
func (c *Cluster) Client() *clientv3.Client {
	c.Members[0].t.Helper()
	return ClientOf(c.Members[0].t, c.Endpoints()...)
}

// cleanup kills the member and logs its output when the test failed.
func (s *Server) cleanup() {
	s.Stop()
	if s.t.Failed() {
		s.t.Logf("etcd %s's output:\n%s", s.name, s.logs)
	}
}

func writePEM(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func certPEM(c tls.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
}

func keyPEM(t testing.TB, c tls.Certificate) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
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
	if s.TLS != nil {
		return clientOf(s.t, s.TLS.Config, s.Endpoint)
	}
	return ClientOf(s.t, s.Endpoint)
}

// ClientOf returns a client of endpoints, closed at t's cleanup.
func ClientOf(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	return clientOf(t, nil, endpoints...)
}

func clientOf(t testing.TB, tlsc *tls.Config, endpoints ...string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: startTimeout, TLS: tlsc, Logger: zap.NewNop()})
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
	if err := s.launch(endpoint); err != nil {
		return err
	}
	return s.ready(endpoint)
}

// launch starts the member's process with its client URL at endpoint.
func (s *Server) launch(endpoint string) error {
	args := []string{
		"--name", s.name, "--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", endpoint, "--advertise-client-urls", endpoint,
		"--listen-peer-urls", s.peer, "--initial-advertise-peer-urls", s.peer,
		"--initial-cluster", s.initial, "--initial-cluster-state", "new"}
	if s.TLS != nil {
		dir := filepath.Dir(s.TLS.CAFile)
		args = append(args, "--cert-file", filepath.Join(dir, "server.pem"), "--key-file", filepath.Join(dir, "server-key.pem"),
			"--client-cert-auth", "--trusted-ca-file", s.TLS.CAFile)
	}
	cmd := exec.Command(s.bin, args...)
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
	return nil
}

// ready waits until the launched member answers a Status at endpoint.
func (s *Server) ready(endpoint string) error {
	cmd, exited := s.cmd, s.exited
	var tlsc *tls.Config
	if s.TLS != nil {
		tlsc = s.TLS.Config
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{endpoint}, TLS: tlsc, Logger: zap.NewNop()})
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
func freePort(t testing.TB) int {
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
