package tlsselect

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigsDifferByEveryPolicyField: two hosts on one certificate share
// a prebuilt config, and with it ticket keys, only when their policies
// are the same in every field the config applies. A pair that differs in
// one field gets two configs, each applying its own host's policy, with
// ticket keys of their own: a hostile client's ticket from one does not
// resume on the other.
func TestConfigsDifferByEveryPolicyField(t *testing.T) {
	servers := newPKI(t, "server root")
	x, y := newPKI(t, "client CA X"), newPKI(t, "client CA Y")
	cert := servers.issue(t, leafOpts{names: []string{"one.test", "two.test"}})
	client := x.issue(t, leafOpts{names: []string{"alice"}, client: true})
	onlyX, xAndY := []*x509.Certificate{x.cert}, []*x509.Certificate{x.cert, y.cert}
	optional := func(cas []*x509.Certificate) Policy { return Policy{ClientAuth: ClientAuthOptional, ClientCAs: cas} }

	for _, tc := range []struct {
		name     string
		one, two Policy
		same     bool
	}{
		{"the same policy", optional(onlyX), optional(onlyX), true},
		{"minimum versions", Policy{MinVersion: VersionTLS12}, Policy{MinVersion: VersionTLS13}, false},
		{"ALPN", Policy{}, Policy{HTTP1Only: true}, false},
		{"client CA pools", optional(onlyX), optional(xAndY), false},
		{"clientAuth optional and required", optional(onlyX), Policy{ClientAuth: ClientAuthRequired, ClientCAs: onlyX}, false},
		{"clientAuth off and optional", Policy{}, optional(onlyX), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tbl := mustTable(t, Config{
				Certificates: []Certificate{{ID: "c", Source: source(cert)}},
				Hosts: []Host{
					{Names: []string{"one.test"}, Certificate: "c", TLS: tc.one},
					{Names: []string{"two.test"}, Certificate: "c", TLS: tc.two},
				},
				TicketSecret: testSecret,
			})
			one, two := tbl.Select("one.test", TCP), tbl.Select("two.test", TCP)
			for _, s := range []struct {
				sel Selection
				pol Policy
			}{{one, tc.one}, {two, tc.two}} {
				want := s.pol.resolve()
				c := s.sel.Config
				assert.Equal(t, want.minVersion, c.MinVersion, "minimum version")
				assert.Equal(t, want.clientAuth, c.ClientAuth, "client auth")
				assert.Equal(t, want.http1Only, len(c.NextProtos) == 1, "ALPN %v", c.NextProtos)
				assert.Equal(t, len(want.clientCAs) > 0, c.ClientCAs != nil, "client CA pool")
				if c.ClientCAs != nil {
					pool := x509.NewCertPool()
					for _, ca := range want.clientCAs {
						pool.AddCert(ca)
					}
					assert.True(t, pool.Equal(c.ClientCAs), "the host's own client CA pool")
				}
			}
			epoch := one.built.keys.epoch(time.Now())
			oneKey, twoKey := one.built.keys.key(&one.built.id, epoch), two.built.keys.key(&two.built.id, epoch)
			if tc.same {
				assert.True(t, one.Config == two.Config, "one config for both hosts")
				assert.Equal(t, oneKey, twoKey)
			} else {
				assert.False(t, one.Config == two.Config, "one config for both hosts")
				assert.NotEqual(t, one.built.id, two.built.id, "identities")
				assert.NotEqual(t, oneKey, twoKey, "ticket keys")
			}

			// Over a real socket: a ticket one.test issued, offered to
			// two.test by a client that presents a certificate both
			// accept.
			addr := serveTLS(t, NewSelector(tbl).TLSConfig())
			cache := &oneSlotCache{keep: true}
			dial := func(name string) bool {
				t.Helper()
				cfg := hostile(cache, name)
				cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &client, nil }
				c, err := dialTLS(t, addr, cfg)
				require.NoError(t, err, name)
				return c.ConnectionState().DidResume
			}
			require.False(t, dial("one.test"))
			require.NotNil(t, cache.cs, "no ticket issued")
			assert.Equal(t, tc.same, dial("two.test"), "the ticket resumes on the other host")
		})
	}
}

// TestClockDecidesCertificateValidity: New judges a certificate's
// validity by Config.Clock, not by the machine's time: a certificate
// valid now is refused as expired or not yet valid when the Clock says
// so, and warned about when the Clock puts its end within ExpiryWarning.
func TestClockDecidesCertificateValidity(t *testing.T) {
	ca := newPKI(t, "root")
	now := time.Now()
	notBefore, notAfter := now.Add(-time.Hour), now.Add(3*ExpiryWarning)
	cert := ca.issue(t, leafOpts{names: []string{"a.test"}, notBefore: notBefore, notAfter: notAfter})
	certFile, keyFile := writePEM(t, t.TempDir(), "a", cert)

	for _, tc := range []struct {
		name string
		at   time.Time
		code string // the refusal, or the warning when warn is set
		warn bool
	}{
		{"valid", now, "", false},
		{"not yet valid", notBefore.Add(-time.Minute), CodeCertificateNotYetValid, false},
		{"expired", notAfter.Add(time.Minute), CodeCertificateExpired, false},
		{"expiring", notAfter.Add(-ExpiryWarning + time.Hour), CodeCertificateExpiring, true},
	} {
		for _, src := range []struct {
			name string
			cert Certificate
			path string
		}{
			{"files", Certificate{CertFile: certFile, KeyFile: keyFile}, "certificates[0].certFile"},
			{"source", Certificate{Source: source(cert)}, "certificates[0].source"},
		} {
			t.Run(tc.name+"/"+src.name, func(t *testing.T) {
				cfg := oneCert(src.cert)
				cfg.Clock = func() time.Time { return tc.at }
				tbl, err := New(cfg)
				if tc.code == "" || tc.warn {
					require.NoError(t, err)
					var warns []string
					for _, w := range tbl.Warnings() {
						warns = append(warns, w.Code+" "+w.Path)
					}
					if tc.warn {
						assert.Equal(t, []string{tc.code + " " + src.path}, warns)
					} else {
						assert.Empty(t, warns)
					}
					return
				}
				ps := problemsOf(err)
				require.Len(t, ps, 1, "%v", err)
				assert.Equal(t, tc.code, ps[0].Code)
				assert.Equal(t, src.path, ps[0].Path)
			})
		}
	}
}
