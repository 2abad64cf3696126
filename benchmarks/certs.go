package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certFiles are the PEM files of the one self-signed ECDSA P-256
// certificate every TLS listener serves (the figures in bench-method.md
// are for P-256).
type certFiles struct {
	Cert, Key string
	Both      string // certificate then key, for HAProxy's crt
}

// benchHost is the host every throughput scenario asks for.
const benchHost = "bench.test"

func makeCert(dir string, ips []string) (certFiles, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return certFiles{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: benchHost},
		DNSNames:              []string{benchHost, "localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(ip))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return certFiles{}, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return certFiles{}, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	f := certFiles{
		Cert: filepath.Join(dir, "cert.pem"),
		Key:  filepath.Join(dir, "key.pem"),
		Both: filepath.Join(dir, "certkey.pem"),
	}
	for path, data := range map[string][]byte{f.Cert: certPEM, f.Key: keyPEM, f.Both: append(append([]byte{}, certPEM...), keyPEM...)} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return certFiles{}, err
		}
	}
	return f, nil
}
