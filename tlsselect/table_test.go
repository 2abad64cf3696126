package tlsselect

import (
	"crypto/tls"
	"crypto/x509"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestValidate: every shape problem at once, each with its code and path.
func TestValidate(t *testing.T) {
	assert.NoError(t, Config{}.Validate(), "the zero Config is valid")
	ca := &x509.Certificate{}
	cfg := Config{
		Certificates: []Certificate{
			{ID: "a", CertFile: "a.crt", KeyFile: "a.key"},
			{ID: "a", CertFile: "b.crt", KeyFile: "b.key"},
			{CertFile: "c.crt"},
		},
		Hosts: []Host{
			{Names: []string{"ok.test", "a..test", "*.*.test"}, Certificate: "nope"},
			{},
			{Names: []string{"x.test"}, TLS: Policy{MinVersion: "1.1", ClientAuth: ClientAuthRequired}},
			{Names: []string{"y.test"}, Certificate: "a", TLS: Policy{ClientAuth: "maybe", ClientCAs: []*x509.Certificate{nil}}},
			{Names: []string{"z.test"}, Certificate: "a", TLS: Policy{ClientCAs: []*x509.Certificate{ca}}},
		},
		DefaultCertificate: "gone",
		DefaultTLS:         Policy{MinVersion: "tls1.3"},
		UnknownSNI:         "drop",
		NoSNI:              "DEFAULT",
		TicketSecret:       []byte("short"),
		TicketKeyPeriod:    time.Second,
	}
	var got []string
	for _, p := range problemsOf(cfg.Validate()) {
		got = append(got, p.Code+" "+p.Path)
	}
	assert.Equal(t, []string{
		CodeCertificateIDDuplicate + " certificates[1].id",
		CodeCertificateIDMissing + " certificates[2].id",
		CodeCertificateFileMissing + " certificates[2].keyFile",
		CodeDefaultCertificateUnknown + " defaultCertificate",
		CodeMinVersionInvalid + " defaultTLS.minVersion",
		CodeFallbackInvalid + " unknownSni",
		CodeFallbackInvalid + " noSni",
		CodeTicketSecretShort + " ticketSecret",
		CodeTicketKeyPeriodInvalid + " ticketKeyPeriod",
		CodeHostNameInvalid + " hosts[0].names[1]",
		CodeHostNameInvalid + " hosts[0].names[2]",
		CodeHostCertificateUnknown + " hosts[0].certificate",
		CodeHostNamesMissing + " hosts[1].names",
		CodeMinVersionInvalid + " hosts[2].tls.minVersion",
		CodeClientCAsMissing + " hosts[2].tls.clientCAs",
		CodeClientAuthInvalid + " hosts[3].tls.clientAuth",
		CodeClientCAsMissing + " hosts[3].tls.clientCAs[0]",
		CodeClientCAsUnused + " hosts[4].tls.clientCAs",
	}, got)

	// New reports the same, and what loading the certificates whose
	// entries are right finds: every problem at once.
	_, err := New(cfg)
	var all []string
	for _, p := range problemsOf(err) {
		all = append(all, p.Code+" "+p.Path)
	}
	assert.Equal(t, append(got, CodeCertificateFileMissing+" certificates[0].certFile", CodeCertificateFileMissing+" certificates[0].keyFile"), all)

	// Without a default certificate, a host must name its own.
	err = Config{Hosts: []Host{{Names: []string{"a.test"}}}}.Validate()
	require.Len(t, problemsOf(err), 1)
	assert.Equal(t, CodeHostCertificateMissing, problemsOf(err)[0].Code)
	assert.Equal(t, "hosts[0].certificate: the host names no certificate and there is no default certificate (tlsselect.host.certificate.missing)", err.Error())
}

// TestDuplicateNames: a name two hosts claim is refused, whatever its
// spelling, by Validate and New alike.
func TestDuplicateNames(t *testing.T) {
	f := newFixture(t)
	cfg := f.config("", "")
	cfg.Hosts = append(cfg.Hosts, Host{Names: []string{"A.test.", "*.WILD.test", "xn--bcher-kva.test"}, Certificate: "a"})
	_, err := New(cfg)
	assert.Equal(t, cfg.Validate().Error(), err.Error())
	var got []string
	for _, p := range problemsOf(err) {
		got = append(got, p.Code+" "+p.Path)
	}
	n := len(cfg.Hosts) - 1
	assert.Equal(t, []string{
		CodeHostNameDuplicate + " hosts[" + strconv.Itoa(n) + "].names[0]",
		CodeHostNameDuplicate + " hosts[" + strconv.Itoa(n) + "].names[1]",
		CodeHostNameDuplicate + " hosts[" + strconv.Itoa(n) + "].names[2]",
	}, got)
}

// TestSelect: the lookup rules without a network.
func TestSelect(t *testing.T) {
	f := newFixture(t)
	tbl := mustTable(t, f.config("", FallbackRefuse))
	for _, tc := range []struct {
		name   string
		tr     Transport
		host   int
		match  Match
		reason Reason
	}{
		{"a.test", TCP, 0, MatchExact, ReasonNone},
		{"a.test.", TCP, 0, MatchExact, ReasonNone},
		{"A.Test", TCP, 0, MatchExact, ReasonNone},
		{"b.test", TCP, 1, MatchExact, ReasonNone},
		{"x.wild.test", TCP, 2, MatchWildcard, ReasonNone},
		{"-.wild.test", TCP, 2, MatchWildcard, ReasonNone},
		{".wild.test", TCP, -1, MatchDefault, ReasonUnknownSNI},
		{"wild.test", TCP, -1, MatchDefault, ReasonUnknownSNI},
		{"a.b.wild.test", TCP, -1, MatchDefault, ReasonUnknownSNI},
		{"xn--bcher-kva.test", TCP, 3, MatchExact, ReasonNone},
		{"bücher.test", TCP, -1, MatchDefault, ReasonUnknownSNI}, // SNI carries A-labels
		{"a.test..", TCP, -1, MatchDefault, ReasonUnknownSNI},
		{strings.Repeat("a", 300), TCP, -1, MatchDefault, ReasonUnknownSNI},
		{"", TCP, -1, MatchRefused, ReasonNoSNI},
		{"h3.test", QUIC, 6, MatchExact, ReasonNone},
		{"h3b.test", QUIC, 7, MatchRefused, ReasonNoHTTP3},
		{"a.test", QUIC, 0, MatchRefused, ReasonNoHTTP3},
		{"nobody.test", QUIC, -1, MatchRefused, ReasonUnknownSNI},
	} {
		s := tbl.Select(tc.name, tc.tr)
		assert.Equal(t, tc.host, s.Host, "%q %v", tc.name, tc.tr)
		assert.Equal(t, tc.match, s.Match, "%q %v", tc.name, tc.tr)
		assert.Equal(t, tc.reason, s.Reason, "%q %v", tc.name, tc.tr)
		require.NotNil(t, s.Config)
		assert.Equal(t, s.Match == MatchRefused, len(s.Config.Certificates) == 0, "refused configs, and only they, have no certificate")
	}
}

// TestConfigsExplicit: every prebuilt config lists its ALPN, TCP and QUIC
// never share one, QUIC's are TLS 1.3 with h3 alone, and a certificate and
// policy shared by hosts share a config.
func TestConfigsExplicit(t *testing.T) {
	f := newFixture(t)
	cfg := f.config("", "")
	cfg.DefaultTLS.HTTP3 = true
	tbl := mustTable(t, cfg)
	seen := map[*tls.Config]Transport{}
	for _, pb := range tbl.configs {
		require.NotEmpty(t, pb.config.NextProtos)
		require.Len(t, pb.config.Certificates, 1)
	}
	names := []string{"a.test", "b.test", "x.wild.test", "xn--bcher-kva.test", "tls13.test", "h1.test", "h3.test", "h3b.test", "nobody.test", ""}
	for _, n := range names {
		for tr := range numTransports {
			s := tbl.Select(n, tr)
			if s.Match == MatchRefused {
				continue
			}
			if prev, ok := seen[s.Config]; ok {
				require.Equal(t, tr, prev, "%q: a config serves TCP and QUIC", n)
			}
			seen[s.Config] = tr
			if tr == QUIC {
				assert.Equal(t, []string{"h3"}, s.Config.NextProtos, n)
				assert.Equal(t, uint16(tls.VersionTLS13), s.Config.MinVersion, n)
			} else {
				assert.NotContains(t, s.Config.NextProtos, "h3", n)
			}
		}
	}
	assert.Equal(t, []string{"http/1.1"}, tbl.Select("h1.test", TCP).Config.NextProtos)
	assert.Equal(t, []string{"h2", "http/1.1"}, tbl.Select("a.test", TCP).Config.NextProtos)
	assert.Same(t, tbl.Select("h3.test", TCP).Config, tbl.Select("h3b.test", TCP).Config, "same certificate and TCP policy")
	assert.Same(t, tbl.Select("nobody.test", TCP).Config, tbl.Select("", TCP).Config, "both fallbacks")
}

// TestSelectAllocations: a lookup and a whole GetConfigForClient allocate
// nothing, whatever the name.
func TestSelectAllocations(t *testing.T) {
	f := newFixture(t)
	tbl := mustTable(t, f.config("", ""))
	sel := NewSelector(tbl)
	for _, n := range []string{"a.test", "X.WILD.TEST", "nobody.test", "", "h3.test"} {
		hello := &tls.ClientHelloInfo{ServerName: n}
		allocs := testing.AllocsPerRun(100, func() {
			tbl.Select(n, TCP)
			tbl.Select(n, QUIC)
			sel.GetConfigForClient(hello)
			sel.GetQUICConfigForClient(hello)
		})
		assert.Zero(t, allocs, n)
	}
}
