package tlsselect

import (
	"crypto/x509"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCatchAll: the catch-all "*" adds no name to the table: a handshake
// for a name no other host has gets the fallback, over a real TLS
// connection the default certificate, or the refusal UnknownSNI asks
// for. A catch-all host with a certificate of its own, or asking for
// client certificates, is refused.
func TestCatchAll(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct {
		unknown Fallback
		want    string // the certificate's name, or "" for a refusal
	}{{FallbackDefault, "default.test"}, {FallbackRefuse, ""}} {
		cfg := f.config(tt.unknown, "")
		cfg.Hosts = append(cfg.Hosts, Host{Names: []string{" * ", "extra.test"}, TLS: Policy{HTTP1Only: true}})
		table := mustTable(t, cfg)
		sel := table.Select("anything.test", TCP)
		assert.Equal(t, -1, sel.Host, "no host entry for the catch-all")
		assert.Equal(t, ReasonUnknownSNI, sel.Reason)
		assert.Equal(t, len(cfg.Hosts)-1, table.Select("extra.test", TCP).Host, "the host's other names are its own")

		addr := serveTLS(t, NewSelector(table).TLSConfig())
		cc := clientConfig(f.ca.pool, "anything.test")
		cc.InsecureSkipVerify = true // the default certificate does not name it: look at which one comes
		c, err := dialTLS(t, addr, cc)
		if tt.want == "" {
			assert.ErrorContains(t, err, "unrecognized name")
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tt.want, c.ConnectionState().PeerCertificates[0].DNSNames[0])
	}

	cfg := f.config("", "")
	cfg.Hosts = append(cfg.Hosts,
		Host{Names: []string{"*"}, Certificate: "a", TLS: Policy{ClientAuth: ClientAuthRequired, ClientCAs: []*x509.Certificate{f.ca.cert}}},
		Host{Names: []string{"*"}})
	n := len(cfg.Hosts)
	var got []string
	for _, p := range problemsOf(cfg.Validate()) {
		got = append(got, p.Code+" "+p.Path)
	}
	assert.Equal(t, []string{
		CodeHostCatchAllCertificate + " hosts[" + strconv.Itoa(n-2) + "].certificate",
		CodeHostCatchAllClientAuth + " hosts[" + strconv.Itoa(n-2) + "].tls.clientAuth",
		CodeHostNameDuplicate + " hosts[" + strconv.Itoa(n-1) + "].names[0]",
	}, got)
}
