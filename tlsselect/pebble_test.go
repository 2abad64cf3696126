package tlsselect

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
)

// pebbleInstall is what a machine without pebble is told.
const pebbleInstall = "the ACME tests run against a real pebble: install Debian's package (apt-get install -y pebble), " +
	"which ships /usr/bin/pebble and /usr/bin/pebble-challtestsrv"

// pebbleStart bounds the start of pebble and its DNS server: ten times
// what a loaded machine needs.
const pebbleStart = 30 * time.Second

// pebble is a running pebble ACME server and the pebble-challtestsrv DNS
// server it resolves every name with, to 127.0.0.1.
type pebble struct {
	directory string         // the ACME directory URL
	tlsRoots  *x509.CertPool // verify pebble's own HTTPS (the directory, the management API)
	issuer    *x509.CertPool // pebble's issuing root, which its certificates chain to
	logs      *syncBuffer    // both processes' output
}

// pebbleOpts shape a pebble.
type pebbleOpts struct {
	httpPort int // where pebble validates HTTP-01
}

// syncBuffer is a bytes.Buffer for a child's output, read while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startPebble starts pebble-challtestsrv and pebble as children of the
// test, their state in a temporary directory, and waits until pebble
// serves its directory; both are killed at cleanup. Pebble binds its ports
// itself, so they are chosen free and, when another process takes one
// first, chosen again.
func startPebble(t *testing.T, o pebbleOpts) *pebble {
	t.Helper()
	bins := map[string]string{}
	for _, name := range []string{"pebble", "pebble-challtestsrv"} {
		path, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("%s not found (%v); %s", name, err, pebbleInstall)
		}
		bins[name] = path
	}
	dir := t.TempDir()
	ca := newPKI(t, "pebble's HTTPS root")
	certFile, keyFile := writePEM(t, dir, "pebble-https", httpsCert(t, ca))

	var lastErr error
	for range 3 {
		p, err := tryPebble(t, bins, dir, certFile, keyFile, ca.pool, o)
		if err == nil {
			return p
		}
		lastErr = err
	}
	t.Fatalf("pebble did not start: %v", lastErr)
	return nil
}

// httpsCert issues pebble's HTTPS certificate, for 127.0.0.1: the
// address its clients dial.
func httpsCert(t *testing.T, ca *pki) tls.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		NotAfter:    time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	return sign(t, tmpl, ca)
}

// freePort returns a port no one listens on now, on TCP and UDP.
func freePort(t *testing.T) int {
	t.Helper()
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		ln.Close()
		if err == nil {
			pc.Close()
			return port
		}
	}
}

// tryPebble is one attempt of startPebble.
func tryPebble(t *testing.T, bins map[string]string, dir, certFile, keyFile string, roots *x509.CertPool, o pebbleOpts) (*pebble, error) {
	t.Helper()
	acmePort, mgmtPort, dnsPort, dnsMgmtPort := freePort(t), freePort(t), freePort(t), freePort(t)
	loopback := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":           loopback(acmePort),
		"managementListenAddress": loopback(mgmtPort),
		"certificate":             certFile,
		"privateKey":              keyFile,
		"httpPort":                o.httpPort,
		"tlsPort":                 freePort(t), // TLS-ALPN-01 is not used
		"ocspResponderURL":        "",
		// Certificates last pebble's 5 years: the manager's clock
		// decides when they are near their end.
		"externalAccountBindingRequired": false,
	}}
	b, err := json.Marshal(cfg)
	require.NoError(t, err)
	cfgFile := filepath.Join(dir, "pebble-config.json")
	require.NoError(t, os.WriteFile(cfgFile, b, 0o600))

	p := &pebble{
		directory: "https://" + loopback(acmePort) + "/dir",
		tlsRoots:  roots,
		logs:      &syncBuffer{},
	}
	exited := make(chan error, 2)
	start := func(name string, env []string, args ...string) {
		cmd := exec.Command(bins[name], args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		cmd.Stdout = &prefixWriter{prefix: name + ": ", w: p.logs}
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
	// off: the gate under test answers HTTP-01.
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
			t.Logf("pebble's output:\n%s", p.logs)
		}
	})

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: ioTimeout}
	deadline := time.Now().Add(pebbleStart)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for _, u := range []string{"http://" + loopback(dnsMgmtPort) + "/", p.directory} {
		for {
			res, err := client.Get(u)
			if err == nil {
				res.Body.Close()
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("%s not answering after %v: %v\n%s", u, pebbleStart, err, p.logs)
			}
			select {
			case err := <-exited:
				return nil, fmt.Errorf("%v\n%s", err, p.logs) // a port was taken: try others
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
	p.issuer = x509.NewCertPool()
	p.issuer.AddCert(root)
	return p, nil
}

// newOrders counts the orders pebble was asked for, from its log.
func (p *pebble) newOrders() int {
	return strings.Count(p.logs.String(), "POST /order-plz")
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

// waitFor receives from ch within d or fails the test.
func waitFor[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing after %v", what, d)
		var zero T
		return zero
	}
}
