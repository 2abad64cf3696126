package pebbletest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/testcert"
)

// install is what a machine without pebble is told.
const install = "the ACME tests run against a real pebble: install Debian's package (apt-get install -y pebble), " +
	"which ships /usr/bin/pebble and /usr/bin/pebble-challtestsrv"

// startTimeout bounds the start of pebble and its DNS server, and
// ioTimeout each request to them: ten times what a loaded machine needs.
const (
	startTimeout = 30 * time.Second
	ioTimeout    = 10 * time.Second
)

// attempts is how often Start chooses ports again when another process
// took one first.
const attempts = 3

// Options shape a pebble.
type Options struct {
	// HTTPPort is the port pebble validates HTTP-01 challenges on, at
	// 127.0.0.1: where the gateway under test serves plain HTTP. It must
	// be set.
	HTTPPort int
}

// Server is a running pebble and the DNS server it resolves with.
type Server struct {
	// Directory is the ACME directory URL, https on 127.0.0.1.
	Directory string
	// TLSRoots verifies pebble's own HTTPS (the directory, the
	// management API); TLSRootsFile holds it as a PEM file, for a client
	// configured by file.
	TLSRoots     *x509.CertPool
	TLSRootsFile string
	// Issuer holds pebble's issuing root, which the certificates it
	// issues chain to. Pebble makes a new one each start.
	Issuer *x509.CertPool

	logs *buffer // both processes' output
}

// Logs returns what pebble and pebble-challtestsrv have written so far,
// each line after the name of the process.
func (s *Server) Logs() string { return s.logs.String() }

// NewOrders counts the orders pebble was asked for, from its log.
func (s *Server) NewOrders() int {
	return strings.Count(s.logs.String(), "POST /order-plz")
}

// Start starts pebble-challtestsrv and pebble as children of t, waits
// until pebble serves its directory, and kills both at t's cleanup. Pebble
// binds its ports itself, so they are chosen free and, when another
// process takes one first, chosen again. The binaries missing, or pebble
// not starting, fails t.
func Start(t *testing.T, o Options) *Server {
	t.Helper()
	if o.HTTPPort <= 0 {
		t.Fatalf("pebbletest: Options.HTTPPort is %d: pebble needs the port it validates HTTP-01 on", o.HTTPPort)
	}
	bins := map[string]string{}
	for _, name := range []string{"pebble", "pebble-challtestsrv"} {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s not found (%v); %s", name, err, install)
		}
		bins[name] = path
	}
	dir := t.TempDir()
	// Pebble's HTTPS certificate is its own root: its file is the roots
	// file.
	cert, err := testcert.New("localhost", "127.0.0.1")
	require.NoError(t, err)
	certFile, keyFile := writeKeyPair(t, dir, cert)
	roots := x509.NewCertPool()
	roots.AddCert(cert.Leaf)

	var lastErr error
	for range attempts {
		s, err := try(t, bins, dir, certFile, keyFile, roots, o)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("pebble did not start: %v", lastErr)
	return nil
}

// writeKeyPair writes c's certificate and key as PEM files in dir.
func writeKeyPair(t *testing.T, dir string, c tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	key, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "pebble-https.crt"), filepath.Join(dir, "pebble-https.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600))
	return certFile, keyFile
}

// FreePort returns a port no one listens on now at 127.0.0.1, on TCP and
// UDP. Someone may take it before the caller binds it: what binds it
// should be ready to choose again.
func FreePort(t *testing.T) int {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", loopback(port))
		ln.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// try is one attempt of Start.
func try(t *testing.T, bins map[string]string, dir, certFile, keyFile string, roots *x509.CertPool, o Options) (*Server, error) {
	t.Helper()
	acmePort, mgmtPort, dnsPort, dnsMgmtPort := FreePort(t), FreePort(t), FreePort(t), FreePort(t)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":           loopback(acmePort),
		"managementListenAddress": loopback(mgmtPort),
		"certificate":             certFile,
		"privateKey":              keyFile,
		"httpPort":                o.HTTPPort,
		"tlsPort":                 FreePort(t), // TLS-ALPN-01 is not used
		"ocspResponderURL":        "",
		// Certificates last pebble's 5 years: the manager's clock
		// decides when they are near their end.
		"externalAccountBindingRequired": false,
	}}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	cfgFile := filepath.Join(dir, "pebble-config.json")
	require.NoError(t, os.WriteFile(cfgFile, b, 0o600))

	s := &Server{
		Directory:    "https://" + loopback(acmePort) + "/dir",
		TLSRoots:     roots,
		TLSRootsFile: certFile,
		logs:         &buffer{},
	}
	exited := make(chan error, 2)
	start := func(name string, env []string, args ...string) {
		cmd := exec.Command(bins[name], args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout = &prefixWriter{prefix: name + ": ", w: s.logs}
		cmd.Stderr = cmd.Stdout
		require.NoError(t, cmd.Start())
		done := make(chan struct{})
		go func() {
			err := cmd.Wait()
			close(done)
			exited <- fmt.Errorf("%s exited: %v", name, err)
		}()
		t.Cleanup(func() {
			cmd.Process.Kill()
			<-done
		})
	}
	// challtestsrv answers every A query with 127.0.0.1 and no AAAA query
	// (pebble would dial an IPv6 answer first); its challenge servers are
	// off: the gateway under test answers HTTP-01.
	start("pebble-challtestsrv", nil,
		"-dns01", loopback(dnsPort), "-management", loopback(dnsMgmtPort),
		"-http01", "", "-https01", "", "-tlsalpn01", "",
		"-defaultIPv4", "127.0.0.1", "-defaultIPv6", "")
	start("pebble", []string{
		"PEBBLE_VA_NOSLEEP=1",      // validate at once, not after up to 15 s
		"PEBBLE_WFE_NONCEREJECT=0", // no bad-nonce retries to make timings vary
		"PEBBLE_AUTHZREUSE=0",      // every order validates its challenges
	}, "-config", cfgFile, "-dnsserver", loopback(dnsPort), "-strict=false")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("pebble's output:\n%s", s.logs)
		}
	})

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: ioTimeout}
	deadline := time.Now().Add(startTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, u := range []string{"http://" + loopback(dnsMgmtPort) + "/", s.Directory} {
		for {
			res, err := client.Get(u)
			if err == nil {
				res.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s not answering after %v: %v\n%s", u, startTimeout, err, s.logs)
			}
			select {
			case err := <-exited:
				return nil, fmt.Errorf("%v\n%s", err, s.logs) // a port was taken: try others
			case <-tick.C:
			}
		}
	}

	res, err := client.Get("https://" + loopback(mgmtPort) + "/roots/0")
	require.NoError(t, err)
	defer res.Body.Close()
	rootPEM, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", rootPEM)
	block, _ := pem.Decode(rootPEM)
	require.NotNil(t, block, "pebble's root: %q", rootPEM)
	root, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	s.Issuer = x509.NewCertPool()
	s.Issuer.AddCert(root)
	return s, nil
}

// buffer is a bytes.Buffer for a child's output, read while it runs.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// prefixWriter writes each line after a prefix.
type prefixWriter struct {
	prefix string
	w      io.Writer
	mid    bool // within a line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	var out []byte
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		if !p.mid {
			out = append(out, p.prefix...)
		}
		out = append(out, line...)
		p.mid = line[len(line)-1] != '\n'
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
