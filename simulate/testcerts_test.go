package simulate

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// fatalT records what a Tester reports.
type fatalT struct{ fatal, errs []string }

func (*fatalT) Helper() {}
func (f *fatalT) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.fatal = append(f.fatal, fmt.Sprintf(format, args...))
}
func (f *fatalT) all() string                         { return strings.Join(append(f.fatal, f.errs...), "\n") }
func (f *fatalT) failed() bool                        { return len(f.fatal)+len(f.errs) > 0 }
func (f *fatalT) report(t *testing.T)                 { t.Helper(); assert.False(t, f.failed(), f.all()) }
func (f *fatalT) wantFatal(t *testing.T, code string) { t.Helper(); assert.Contains(t, f.all(), code) }
func (f *fatalT) noPrefixTwice(t *testing.T, p string) {
	t.Helper()
	assert.NotContains(t, f.all(), p+p)
}

// TestTestCertificates: a production document whose certificate files
// are not on this machine is refused as a draft, and with
// TestCertificates it is served over HTTPS by self-signed certificates
// for its hosts' names, through the real handshake, with the document's
// TLS policies and answers.
func TestTestCertificates(t *testing.T) {
	data, err := os.ReadFile("testdata/gateway.yaml")
	require.NoError(t, err)
	_, statErr := os.Stat("/etc/paduraksa/example.pem")
	require.True(t, os.IsNotExist(statErr), "the test needs the document's files to be absent")

	var plain fatalT
	NewTester(&plain, Target{DraftData: data})
	plain.wantFatal(t, tlsselect.CodeCertificateFileMissing)
	plain.noPrefixTwice(t, "simulate: ")

	var ft fatalT
	gw := NewTester(&ft, Target{DraftData: data, TestCertificates: true})
	require.NotNil(t, gw, ft.all())
	res := gw.Expect(Probe{URL: "https://api.example.com/v2/users", HTTPVersion: 2}, Want{Upstream: "v2", Status: 0, Kind: Forwarded})
	require.NotNil(t, res)
	gw.Expect(Probe{URL: "https://app.example.com/admin", Peer: MustPeer("192.0.2.10")}, Want{Status: 403, Policy: "office"})
	gw.Expect(Probe{URL: "http://app.example.com/login?x=1"}, Want{Status: 308, Location: "https://app.example.com/login?x=1"})
	gw.Expect(Probe{URL: "https://api.example.com/", TLS: &TLS{Version: 0x0303}}, Want{Upstream: "v1"})
	ft.report(t)
	assert.Contains(t, res.Describe(), "TLS 1.3", "a real handshake: %s", res.Describe())

	// The document is not changed, and neither is the compiler.
	c := &snapshot.Compiler{Certificates: map[string]tlsselect.Source{"other": tlsselect.Static(testCert(t))}}
	doc := decode(t, string(data))
	_, err = Run(Target{Draft: doc, Compiler: c, TestCertificates: true}, Probe{URL: "https://api.example.com/"})
	require.NoError(t, err)
	assert.Equal(t, "/etc/paduraksa/example.pem", doc.Certificates[0].CertFile)
	assert.Len(t, c.Certificates, 1)
}

// TestTestCertificatesKeepRefusals: TestCertificates replaces where a
// well-formed certificate comes from, nothing else: an entry wrong as
// written and a field that does not decode are refused as a publish
// would refuse them, with no file problem of a certificate it replaced.
func TestTestCertificatesKeepRefusals(t *testing.T) {
	data := []byte(`
global: {tls: {defaultCertificate: main}}
certificates:
  - {id: main, certFile: /nonexistent/a.pem, keyFile: /nonexistent/a.key}
  - {id: both, certFile: /nonexistent/b.pem, keyFile: /nonexistent/b.key, acme: true}
  - {id: half, certFile: /nonexistent/c.pem}
hosts:
  - {names: [a.test], bogus: 1, kind: fixed, fixed: {}}
`)
	_, err := Run(Target{DraftData: data, TestCertificates: true}, Probe{URL: "https://a.test/"})
	var dr *DraftRefused
	require.ErrorAs(t, err, &dr)
	var got []string
	for _, p := range dr.Errors {
		got = append(got, p.Code+" "+p.Path)
	}
	assert.Contains(t, got, "document.field.unknown hosts[0].bogus")
	assert.Contains(t, got, snapshot.CodeCertificateSourceMissing+" certificates[1].acme")
	for _, g := range got {
		assert.NotContains(t, g, "certificates[0]", "the replaced certificate has no file problem: %v", got)
	}
	assert.NotContains(t, err.Error(), "simulate: simulate:")
}
