package gatewayapi_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/gatewayapi"
)

// selfSigned returns a certificate for name and its key, in PEM.
func selfSigned(t testing.TB, name string) (crt, key []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}

// secretYAML is a kubernetes.io/tls Secret named cert.
func secretYAML(t testing.TB) string {
	crt, key := selfSigned(t, "shop.example")
	return "---\napiVersion: v1\nkind: Secret\nmetadata: {name: cert}\ntype: kubernetes.io/tls\ndata:\n  tls.crt: " +
		base64.StdEncoding.EncodeToString(crt) + "\n  tls.key: " + base64.StdEncoding.EncodeToString(key) + "\n"
}

// TestSecretWritten: an HTTPS listener's Secret in the objects becomes a
// certificate of the document whose files Translate only names, and
// WriteSecrets writes with mode 0600; the HTTPS port is the document's
// httpsPort, and a hostname the HTTP listener only redirects to HTTPS is
// the host's httpsRedirect.
func TestSecretWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "secrets")
	objects := `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: paduraksa
  listeners:
    - {name: http, protocol: HTTP, port: 80}
    - {name: https, protocol: HTTPS, port: 443, hostname: shop.example, tls: {certificateRefs: [{name: cert}]}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: redirect}
spec:
  parentRefs: [{name: gw, sectionName: http}]
  rules:
    - filters: [{type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301}}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop}
spec:
  parentRefs: [{name: gw, sectionName: https}]
  rules:
    - backendRefs: [{name: svc-a, port: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: a, labels: {kubernetes.io/service-name: svc-a}}
addressType: IPv4
ports: [{port: 8080}]
endpoints: [{addresses: [10.0.0.7]}, {addresses: [10.0.0.8], conditions: {ready: false}}]
` + secretYAML(t)
	objs, err := gatewayapi.Decode([]byte(objects))
	if err != nil {
		t.Fatal(err)
	}
	res, err := gatewayapi.Translate(objs, gatewayapi.Options{SecretDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Translate wrote %s (%v)", dir, err)
	}
	doc := &res.Document
	if res.HTTP.Port != 80 || res.HTTPS.Port != 443 || doc.Global.HTTPSPort != 443 {
		t.Errorf("ports %d %d %d", res.HTTP.Port, res.HTTPS.Port, doc.Global.HTTPSPort)
	}
	if len(doc.Certificates) != 1 || doc.Certificates[0].CertFile != filepath.Join(dir, "default.cert.crt") {
		t.Fatalf("certificates %+v", doc.Certificates)
	}
	var shop, any bool
	for _, h := range doc.Hosts {
		switch h.Names[0] {
		case "shop.example":
			shop = h.Certificate == "default.cert" && h.HTTPSRedirect != nil && h.HTTPSRedirect.Status == 301 && len(h.Routes) == 1
		case "*":
			any = h.Kind == "fixed" && h.HTTPSRedirect != nil
		}
	}
	if !shop || !any {
		t.Errorf("hosts %+v", doc.Hosts)
	}
	if u := doc.Upstreams; len(u) != 1 || len(u[0].Destinations) != 1 || u[0].Destinations[0].Address != "http://10.0.0.7:8080" {
		t.Errorf("upstreams %+v: want the ready endpoint only", u)
	}
	if err := res.WriteSecrets(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"default.cert.crt", "default.cert.key"} {
		fi, err := os.Stat(filepath.Join(dir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v %v", f, fi, err)
		}
	}
	if _, err := tls.LoadX509KeyPair(doc.Certificates[0].CertFile, doc.Certificates[0].KeyFile); err != nil {
		t.Error(err)
	}
	if o := res.Origin("hosts[0].routes[0].upstream"); !strings.HasPrefix(o, "HTTPRoute default/") {
		t.Errorf("origin %q", o)
	}

	// A FIFO where a Secret's file goes is replaced, never read (a read
	// would wait for a writer forever).
	key := doc.Certificates[0].KeyFile
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(key, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- res.WriteSecrets() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WriteSecrets hangs on a FIFO in place of a key file")
	}
	if fi, err := os.Lstat(key); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s after WriteSecrets: %v %v", key, fi, err)
	}
}
