package tlsselect

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/stretchr/testify/require"
)

// ioTimeout bounds every blocking step of a test: ten times what a loaded
// machine needs, so a regression fails one test instead of hanging.
const ioTimeout = 10 * time.Second

// pki is a throwaway CA that issues ECDSA P-256 certificates.
type pki struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

var serial = struct {
	sync.Mutex
	n int64
}{}

func nextSerial() *big.Int {
	serial.Lock()
	defer serial.Unlock()
	serial.n++
	return big.NewInt(serial.n)
}

func newPKI(t testing.TB, name string) *pki {
	t.Helper()
	c := sign(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, nil)
	pool := x509.NewCertPool()
	pool.AddCert(c.Leaf)
	return &pki{cert: c.Leaf, key: c.PrivateKey.(*ecdsa.PrivateKey), pool: pool}
}

// sign makes a certificate of tmpl with a new key, signed by parent (nil:
// by itself). A zero validity becomes an hour ago to a day ahead.
func sign(t testing.TB, tmpl *x509.Certificate, parent *pki) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl.SerialNumber = nextSerial()
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore = time.Now().Add(-time.Hour)
	}
	if tmpl.NotAfter.IsZero() {
		tmpl.NotAfter = time.Now().Add(24 * time.Hour)
	}
	issuer, issuerKey := tmpl, key
	if parent != nil {
		issuer, issuerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuer, &key.PublicKey, issuerKey)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// leafOpts shapes a certificate the pki issues.
type leafOpts struct {
	names               []string
	notBefore, notAfter time.Time // zero: an hour ago, a day ahead
	client              bool      // for client authentication
	ca                  bool      // an intermediate CA
	aia                 string    // URL put in AIA, CRL and OCSP fields
}

// issue returns a certificate signed by p, its chain [leaf] (the issuer is
// p, the root), Leaf set.
func (p *pki) issue(t testing.TB, o leafOpts) tls.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{
		NotBefore:   o.notBefore,
		NotAfter:    o.notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    o.names,
	}
	if len(o.names) > 0 {
		tmpl.Subject = pkix.Name{CommonName: o.names[0]}
	}
	if o.client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	if o.ca {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
		tmpl.BasicConstraintsValid, tmpl.IsCA = true, true
		tmpl.ExtKeyUsage = nil
	}
	if o.aia != "" {
		tmpl.IssuingCertificateURL = []string{o.aia + "/issuer.crt"}
		tmpl.OCSPServer = []string{o.aia + "/ocsp"}
		tmpl.CRLDistributionPoints = []string{o.aia + "/crl"}
	}
	return sign(t, tmpl, p)
}

// sub returns an intermediate CA issued by p.
func (p *pki) sub(t testing.TB, name string) *pki {
	t.Helper()
	c := p.issue(t, leafOpts{names: []string{name}, ca: true})
	return &pki{cert: c.Leaf, key: c.PrivateKey.(*ecdsa.PrivateKey)}
}

// writePEM writes c's chain and key as PEM files in dir, under name.
func writePEM(t testing.TB, dir, name string, c tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	certFile = filepath.Join(dir, name+".crt")
	keyFile = filepath.Join(dir, name+".key")
	var chain []byte
	for _, der := range c.Certificate {
		chain = append(chain, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	require.NoError(t, err)
	// Written to a temporary name and renamed, as deployment tools do, so
	// a reader sees the old file or the new one.
	for _, f := range []struct {
		path string
		data []byte
	}{{certFile, chain}, {keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})}} {
		require.NoError(t, os.WriteFile(f.path+".tmp", f.data, 0o600))
		require.NoError(t, os.Rename(f.path+".tmp", f.path))
	}
	return certFile, keyFile
}

// staticSource is a Source that returns one certificate or error.
type staticSource struct {
	cert *tls.Certificate
	err  error
	got  []SourceRequest
}

func (s *staticSource) Certificate(r SourceRequest) (*tls.Certificate, error) {
	s.got = append(s.got, r)
	return s.cert, s.err
}

func source(c tls.Certificate) *staticSource { return &staticSource{cert: &c} }

// mustTable builds a Table or fails the test.
func mustTable(t testing.TB, cfg Config) *Table {
	t.Helper()
	tbl, err := New(cfg)
	require.NoError(t, err)
	return tbl
}

// problemsOf returns the *ValidationErrors joined in err.
func problemsOf(err error) []*ValidationError {
	var out []*ValidationError
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			out = append(out, problemsOf(e)...)
		}
		return out
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		out = append(out, ve)
	}
	return out
}

// serveTLS serves TLS on a loopback listener with base, echoing what each
// connection sends. It returns the address; everything stops at cleanup.
func serveTLS(t testing.TB, base *tls.Config) string {
	t.Helper()
	addr, _ := serveTLSStates(t, base)
	return addr
}

// serveTLSStates is serveTLS that also sends the state of each completed
// server handshake on a channel (dropped when 64 are waiting).
func serveTLSStates(t testing.TB, base *tls.Config) (string, <-chan tls.ConnectionState) {
	t.Helper()
	states := make(chan tls.ConnectionState, 64)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				tc := tls.Server(c, base)
				tc.SetDeadline(time.Now().Add(ioTimeout))
				if tc.Handshake() != nil {
					return
				}
				tc.SetDeadline(time.Time{})
				// In TLS 1.3 the client's certificate is judged on the
				// first read.
				buf := make([]byte, 512)
				n, err := tc.Read(buf)
				if err != nil {
					return
				}
				select {
				case states <- tc.ConnectionState():
				default:
				}
				if _, err := tc.Write(buf[:n]); err == nil {
					io.Copy(tc, tc)
				}
			}()
		}
	}()
	return ln.Addr().String(), states
}

// dialTLS connects to addr with cfg, completes the handshake and one echo
// round trip (in TLS 1.3 the server judges a client certificate after the
// client's handshake returns, so only a round trip shows the verdict).
func dialTLS(t testing.TB, addr string, cfg *tls.Config) (*tls.Conn, error) {
	t.Helper()
	raw, err := net.DialTimeout("tcp", addr, ioTimeout)
	require.NoError(t, err)
	c := tls.Client(raw, cfg)
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(ioTimeout)); err != nil {
		return nil, err
	}
	if err := c.Handshake(); err != nil {
		return nil, err
	}
	if err := echo(c); err != nil {
		return nil, err
	}
	return c, nil
}

// echo writes a line on c and reads it back.
func echo(c net.Conn) error {
	msg := []byte("ping\n")
	if _, err := c.Write(msg); err != nil {
		return err
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		return err
	}
	if string(buf) != string(msg) {
		return errors.New("echo mismatch")
	}
	return nil
}

// clientConfig is a client config trusting roots for server name name.
func clientConfig(roots *x509.CertPool, name string, protos ...string) *tls.Config {
	return &tls.Config{RootCAs: roots, ServerName: name, NextProtos: protos}
}

// serveQUIC serves QUIC on a loopback UDP socket with base, accepting
// connections and holding them until cleanup. It returns the address.
func serveQUIC(t testing.TB, base *tls.Config) string {
	t.Helper()
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	require.NoError(t, err)
	tr := &quic.Transport{Conn: udp}
	ln, err := tr.ListenEarly(base, &quic.Config{})
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		ln.Close()
		<-done
		tr.Close()
		udp.Close()
	})
	go func() {
		defer close(done)
		for {
			// The transport holds accepted connections until the client
			// or cleanup closes them.
			if _, err := ln.Accept(context.Background()); err != nil {
				return
			}
		}
	}()
	return udp.LocalAddr().String()
}

// dialQUIC completes a QUIC handshake with cfg.
func dialQUIC(t testing.TB, addr string, cfg *tls.Config) (*quic.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	c, err := quic.DialAddr(ctx, addr, cfg, &quic.Config{HandshakeIdleTimeout: ioTimeout})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.CloseWithError(0, "") })
	return c, nil
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
