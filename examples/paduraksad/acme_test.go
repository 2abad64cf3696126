package main

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/internal/pebbletest"
)

// TestACMEFromTheDocument: a certificate the document marks acme is
// obtained from a real ACME server over HTTP-01, answered by the daemon's
// plain HTTP listener, and served by -https; until it is there the host
// gets the default certificate; a restart on the same cache serves it
// without a new order.
func TestACMEFromTheDocument(t *testing.T) {
	names := []string{"shop.acme.test", "www.shop.acme.test"}
	// Pebble validates on the relay's port, which forwards to the
	// daemon's plain HTTP once the test has looked at the certificate
	// served before the order could complete.
	front := startRelay(t)
	pebble := pebbletest.Start(t, pebbletest.Options{HTTPPort: front.port})

	dir := t.TempDir()
	doc, fallback := acmeShopDocument(t, dir, names)
	cfg := filepath.Join(dir, "paduraksa.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(doc), 0o600))
	cache := t.TempDir()
	args := []string{"-config", cfg, "-https", "127.0.0.1:0",
		"-acme-directory", pebble.Directory, "-acme-ca", pebble.TLSRootsFile,
		"-acme-cache", cache, "-acme-email", "hostmaster@acme.test"}

	// startDaemon serves plain HTTP on a port of its own (-listen
	// 127.0.0.1:0), which the relay forwards to.
	d := startDaemon(t, args...)
	waitFor(t, "the order", func() bool { return pebble.NewOrders() == 1 })
	// Not verified: the default certificate does not name the host, and
	// is compared byte for byte.
	leaf, err := handshake(d.tlsAddr, &tls.Config{ServerName: names[0], InsecureSkipVerify: true})
	require.NoError(t, err, "while the order waits for validation: the default certificate")
	assert.True(t, leaf.Equal(fallback.Leaf))
	assert.NotContains(t, d.logs.String(), "acme certificate ready", "pebble cannot have validated yet")

	front.forward(d.addr)
	// The certificate is served once the table is rebuilt: the config
	// applied after the manager said it was ready.
	served := regexp.MustCompile(`(?s)msg="acme certificate ready" certificate=shop.*msg="config applied"`)
	waitFor(t, "the acme certificate served", func() bool { return served.MatchString(d.logs.String()) })
	var acme *x509.Certificate
	for _, name := range names {
		leaf, err := handshake(d.tlsAddr, &tls.Config{ServerName: name, RootCAs: pebble.Issuer})
		require.NoError(t, err, "%s: a client that trusts pebble's root", name)
		assert.Equal(t, names, leaf.DNSNames, name)
		if acme == nil {
			acme = leaf
		}
		assert.True(t, leaf.Equal(acme), "one certificate for the host's names")
	}
	assert.Equal(t, 1, pebble.NewOrders())

	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pebble.Issuer}, ForceAttemptHTTP2: true, DialContext: dialAlways(d.tlsAddr)}
	t.Cleanup(tr.CloseIdleConnections)
	res, body := fetch(t, tr, "https://"+names[1]+"/")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "HTTP/2.0", res.Proto)
	assert.Equal(t, "shop upstream", body)

	// A restart reads the certificate from the cache: served at once,
	// and pebble is asked for nothing (an order would fail besides:
	// the relay forwards to the stopped daemon).
	stopDaemon(t, d)
	d = startDaemon(t, args...)
	leaf, err = handshake(d.tlsAddr, &tls.Config{ServerName: names[0], RootCAs: pebble.Issuer})
	require.NoError(t, err, "after a restart")
	assert.True(t, leaf.Equal(acme), "the cached certificate")
	stopDaemon(t, d)
	assert.Equal(t, 1, pebble.NewOrders(), "no order after the restart")
	assert.NotContains(t, d.logs.String(), "acme certificate ready")
}

// handshake completes a TLS handshake with addr and returns the
// certificate the server sent.
func handshake(addr string, cfg *tls.Config) (*x509.Certificate, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0], nil
}

// stopDaemon shuts d down and waits for it, leaving its result for the
// cleanup startDaemon registered.
func stopDaemon(t *testing.T, d *daemon) {
	t.Helper()
	d.cancel()
	select {
	case err := <-d.done:
		require.NoError(t, err)
		d.done <- err
	case <-time.After(15 * time.Second):
		t.Fatal("daemon did not shut down")
	}
}

// relay forwards the TCP connections it accepts on a loopback port to
// an address set later: connections wait until forward is called.
type relay struct {
	port int
	to   string        // set before open is closed
	open chan struct{} // closed by forward
}

// startRelay listens on a loopback port until the test ends.
func startRelay(t *testing.T) *relay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &relay{port: ln.Addr().(*net.TCPAddr).Port, open: make(chan struct{})}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		close(stop)
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { r.serve(c, stop) })
		}
	})
	return r
}

// forward sends every connection, held and future, to addr.
func (r *relay) forward(addr string) {
	r.to = addr
	close(r.open)
}

func (r *relay) serve(c net.Conn, stop <-chan struct{}) {
	defer c.Close()
	select {
	case <-r.open:
	case <-stop:
		return
	}
	u, err := net.DialTimeout("tcp", r.to, 10*time.Second)
	if err != nil {
		return
	}
	defer u.Close()
	// A deadline on both sides bounds the copies; stop ends them sooner.
	deadline := time.Now().Add(30 * time.Second)
	c.SetDeadline(deadline)
	u.SetDeadline(deadline)
	var copies sync.WaitGroup
	for _, p := range [][2]net.Conn{{u, c}, {c, u}} {
		copies.Go(func() {
			io.Copy(p[0], p[1])
			p[0].(*net.TCPConn).CloseWrite()
		})
	}
	copied := make(chan struct{})
	go func() {
		copies.Wait()
		close(copied)
	}()
	select {
	case <-copied:
	case <-stop:
		c.Close()
		u.Close()
		<-copied
	}
}
