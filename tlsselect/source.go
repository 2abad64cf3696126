package tlsselect

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"strings"
	"time"
)

// ErrPending is the error, wrapped or as it is, of a Source that has no
// certificate yet but expects one (an ACME order under way). It does not
// refuse the Config: New builds the Table without the certificate and
// warns (CodeCertificatePending), and the hosts that use it get the
// default certificate under their own policy, or a refusal when
// Config.UnknownSNI is FallbackRefuse or there is no default certificate
// to serve; Selection.Reason is ReasonPending either way. The Source tells
// its embedder when the certificate has come (ACMEConfig.OnReady), who
// then builds and publishes the next Table.
var ErrPending = errors.New("tlsselect: certificate pending")

// Source supplies a certificate when a Table is built: the embedder's own
// store, an ACME client, a vault. New calls it once per Table, from the
// goroutine that calls New, and checks what it returns as it checks PEM
// files (a key that matches the leaf, the validity period). An error
// refuses the Config, but for ErrPending.
type Source interface {
	// Certificate returns the chain (leaf first, no root) and private
	// key. The Table keeps a copy of the struct (with Leaf filled in when
	// nil) and does not modify it; the caller must not modify it either
	// while any Table built from it is in use.
	Certificate(SourceRequest) (*tls.Certificate, error)
}

// SourceRequest is what New tells a Source about the certificate it wants.
type SourceRequest struct {
	// ID is the certificate's Config ID.
	ID string
	// Names are the canonical names ("a.example", "*.example") of the
	// hosts that use the certificate, in Config order; empty when only
	// the fallbacks do.
	Names []string
}

// loaded is a certificate loaded from files, and what the files held.
type loaded struct {
	certPEM, keyPEM []byte
	cert            *tls.Certificate
}

// loadCertificate loads and checks certificates[i], adding its problems to
// p; it returns nil when the certificate cannot be served, which is a
// refusal unless the Source said it is pending. A certificate from files
// comes with what they held (else nil); when that is what old held, it
// is old's certificate, its validity checked again.
func loadCertificate(p *problems, i int, ct *Certificate, names []string, now time.Time, read func(string) ([]byte, error), old *loaded) (*tls.Certificate, *loaded) {
	path := index("certificates", i)
	if ct.Source != nil {
		cert, err := ct.Source.Certificate(SourceRequest{ID: ct.ID, Names: names})
		if errors.Is(err, ErrPending) {
			p.warn(CodeCertificatePending, path+".source", "%v", err)
			return nil, nil
		}
		if err != nil {
			p.add(CodeCertificateSourceFailed, path+".source", "%v", err)
			return nil, nil
		}
		if cert == nil || len(cert.Certificate) == 0 {
			p.add(CodeCertificateInvalid, path+".source", "the source returned no certificate")
			return nil, nil
		}
		c := *cert
		if c.Leaf == nil {
			leaf, err := x509.ParseCertificate(c.Certificate[0])
			if err != nil {
				p.add(CodeCertificateInvalid, path+".source", "leaf: %v", err)
				return nil, nil
			}
			c.Leaf = leaf
		}
		if !checkKey(p, path+".source", "", c.Leaf, c.PrivateKey) || !checkValidity(p, path+".source", c.Leaf, now) {
			return nil, nil
		}
		return &c, nil
	}
	certPEM, ok := readFile(p, path+".certFile", ct.CertFile, read)
	keyPEM, keyOK := readFile(p, path+".keyFile", ct.KeyFile, read)
	if !ok || !keyOK {
		return nil, nil
	}
	if old != nil && bytes.Equal(old.certPEM, certPEM) && bytes.Equal(old.keyPEM, keyPEM) {
		// What parsed and matched then does now; only time has passed.
		if !checkValidity(p, path+".certFile", old.cert.Leaf, now) {
			return nil, nil
		}
		return old.cert, old
	}
	chain, leaf, err := parseChain(certPEM)
	if err != nil {
		p.add(CodeCertificateInvalid, path+".certFile", "%s: %v", ct.CertFile, err)
	}
	key, keyErr := parseKey(keyPEM)
	if keyErr != nil {
		p.add(CodeCertificateKeyInvalid, path+".keyFile", "%s: %v", ct.KeyFile, keyErr)
	}
	if err != nil || keyErr != nil {
		return nil, nil
	}
	if !checkKey(p, path+".keyFile", ct.KeyFile+": ", leaf, key) || !checkValidity(p, path+".certFile", leaf, now) {
		return nil, nil
	}
	cert := &tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}
	return cert, &loaded{certPEM: bytes.Clone(certPEM), keyPEM: bytes.Clone(keyPEM), cert: cert}
}

// parseChain returns the DER of every CERTIFICATE block of a PEM file and
// the parsed first one.
func parseChain(b []byte) ([][]byte, *x509.Certificate, error) {
	var chain [][]byte
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			chain = append(chain, block.Bytes)
		}
	}
	if len(chain) == 0 {
		return nil, nil, errors.New("no CERTIFICATE block")
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return nil, nil, err
	}
	return chain, leaf, nil
}

// parseKey returns the first private key of a PEM file.
func parseKey(b []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return nil, errors.New("no PRIVATE KEY block")
		}
		if !strings.HasSuffix(block.Type, "PRIVATE KEY") {
			continue
		}
		var key any
		var err error
		switch block.Type {
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		}
		if err != nil {
			return nil, err
		}
		s, ok := key.(crypto.Signer)
		if !ok {
			return nil, errors.New("the key cannot sign")
		}
		return s, nil
	}
}

// checkKey reports whether key is a signer for leaf's public key.
func checkKey(p *problems, path, prefix string, leaf *x509.Certificate, key crypto.PrivateKey) bool {
	s, ok := key.(crypto.Signer)
	if !ok {
		p.add(CodeCertificateKeyInvalid, path, "%sno private key that can sign", prefix)
		return false
	}
	if !keyMatches(s, leaf) {
		p.add(CodeCertificateKeyMismatch, path, "%sthe private key does not match the certificate's public key", prefix)
		return false
	}
	return true
}

// keyMatches reports whether key is the private key of leaf.
func keyMatches(key crypto.Signer, leaf *x509.Certificate) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(leaf.PublicKey)
}

// checkValidity reports whether leaf is valid at now, and warns when it
// ends within ExpiryWarning.
func checkValidity(p *problems, path string, leaf *x509.Certificate, now time.Time) bool {
	const layout = time.RFC3339
	switch {
	case now.Before(leaf.NotBefore):
		p.add(CodeCertificateNotYetValid, path, "%q is valid from %s", leaf.Subject.CommonName, leaf.NotBefore.UTC().Format(layout))
		return false
	case now.After(leaf.NotAfter):
		p.add(CodeCertificateExpired, path, "%q expired at %s", leaf.Subject.CommonName, leaf.NotAfter.UTC().Format(layout))
		return false
	case leaf.NotAfter.Sub(now) < ExpiryWarning:
		p.warn(CodeCertificateExpiring, path, "%q expires at %s", leaf.Subject.CommonName, leaf.NotAfter.UTC().Format(layout))
	}
	return true
}

// Static returns a Source that always supplies c: a certificate the
// embedder made or loaded itself.
func Static(c tls.Certificate) Source { return fixedSource{c} }

type fixedSource struct{ c tls.Certificate }

func (s fixedSource) Certificate(SourceRequest) (*tls.Certificate, error) { return &s.c, nil }

// SelfSigned makes a self-signed ECDSA P-256 certificate for names (DNS
// names or IP literals), valid from an hour ago for lifetime: for
// development and demos, where no client trusts anything else anyway.
func SelfSigned(lifetime time.Duration, names ...string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 63))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	if len(names) > 0 {
		tmpl.Subject = pkix.Name{CommonName: names[0]}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
