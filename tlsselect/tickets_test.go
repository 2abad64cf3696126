package tlsselect

import (
	"bytes"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneSlotCache is a hostile client's session cache: it offers the last
// ticket it got to every server name. (A well-behaved Go client keys
// tickets by server name and checks the name against the session's
// certificate, so it never presents one host's ticket to another.)
type oneSlotCache struct {
	mu   sync.Mutex
	cs   *tls.ClientSessionState
	put  chan struct{} // signalled on every ticket stored, if not nil
	keep bool          // ignore new tickets: always offer the first
}

func (c *oneSlotCache) Get(string) (*tls.ClientSessionState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cs, c.cs != nil
}

func (c *oneSlotCache) Put(_ string, cs *tls.ClientSessionState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs == nil || (c.keep && c.cs != nil) {
		return
	}
	c.cs = cs
	if c.put != nil {
		select {
		case c.put <- struct{}{}:
		default:
		}
	}
}

// hostile is a client config that presents whatever ticket cache holds to
// name, accepting any certificate.
func hostile(cache tls.ClientSessionCache, name string, protos ...string) *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, ServerName: name, ClientSessionCache: cache, NextProtos: protos}
}

// ticketConfig has hosts x1 and x3 on one certificate and policy, x2 on the
// same certificate with another policy, and y on a certificate of its own
// with x1's policy; all with HTTP/3.
func ticketConfig(t testing.TB, ca *pki, secret []byte) (Config, tls.Certificate, tls.Certificate) {
	t.Helper()
	x := ca.issue(t, leafOpts{names: []string{"x1.test", "x2.test", "x3.test"}})
	y := ca.issue(t, leafOpts{names: []string{"y.test"}})
	return Config{
		Certificates: []Certificate{{ID: "x", Source: source(x)}, {ID: "y", Source: source(y)}},
		Hosts: []Host{
			{Names: []string{"x1.test", "x3.test"}, Certificate: "x", TLS: Policy{HTTP3: true}},
			{Names: []string{"x2.test"}, Certificate: "x", TLS: Policy{HTTP3: true, HTTP1Only: true}},
			{Names: []string{"y.test"}, Certificate: "y", TLS: Policy{HTTP3: true}},
		},
		TicketSecret: secret,
	}, x, y
}

var testSecret = bytes.Repeat([]byte{7}, 32)

// TestTicketsStayWithTheirPolicy: over TCP, a ticket resumes on the host
// that issued it and on hosts of the same certificate and policy (they
// share one config), and never on a host of another certificate or
// policy, even presented by a hostile client; a Table built from the same
// secret resumes it, one with a fresh secret does not.
func TestTicketsStayWithTheirPolicy(t *testing.T) {
	ca := newPKI(t, "root")
	cfg, _, y := ticketConfig(t, ca, testSecret)
	sel := NewSelector(mustTable(t, cfg))
	addr := serveTLS(t, sel.TLSConfig())

	resumes := func(cache *oneSlotCache, name string) (bool, *tls.Conn) {
		t.Helper()
		c, err := dialTLS(t, addr, hostile(cache, name))
		require.NoError(t, err)
		return c.ConnectionState().DidResume, c
	}
	issue := func() *oneSlotCache {
		t.Helper()
		cache := &oneSlotCache{keep: true}
		did, _ := resumes(cache, "x1.test")
		require.False(t, did)
		require.NotNil(t, cache.cs, "no ticket issued")
		return cache
	}
	cache := issue()
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"x1.test", true},  // the same host
		{"x3.test", true},  // the same config
		{"x2.test", false}, // the same certificate, another policy
		{"y.test", false},  // another certificate
	} {
		did, c := resumes(cache, tc.name)
		assert.Equal(t, tc.want, did, tc.name)
		if tc.name == "y.test" {
			assert.True(t, leafOf(c).Equal(y.Leaf), "a refused ticket gets a full handshake with the host's own certificate")
		}
	}

	sel.Swap(mustTable(t, cfg))
	did, _ := resumes(cache, "x1.test")
	assert.True(t, did, "a table built from the same secret opens the ticket")

	cfg.TicketSecret = nil
	sel.Swap(mustTable(t, cfg))
	did, _ = resumes(cache, "x1.test")
	assert.False(t, did, "a table with a random secret does not")
}

// TestHostileClientResumesWithoutPerConfigKeys shows that the hostile
// client above does present its ticket to another host: with two
// distinct configs that keep crypto/tls's default keys, the ticket of one
// host resumes on the other. This is what per-config keys prevent.
func TestHostileClientResumesWithoutPerConfigKeys(t *testing.T) {
	ca := newPKI(t, "root")
	a := &tls.Config{Certificates: []tls.Certificate{ca.issue(t, leafOpts{names: []string{"a.test"}})}}
	b := &tls.Config{Certificates: []tls.Certificate{ca.issue(t, leafOpts{names: []string{"b.test"}})}}
	addr := serveTLS(t, &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		if h.ServerName == "a.test" {
			return a, nil
		}
		return b, nil
	}})
	cache := &oneSlotCache{keep: true}
	_, err := dialTLS(t, addr, hostile(cache, "a.test"))
	require.NoError(t, err)
	c, err := dialTLS(t, addr, hostile(cache, "b.test"))
	require.NoError(t, err)
	assert.True(t, c.ConnectionState().DidResume)
}

// TestQUICTicketsStayWithTheirPolicy: the same over QUIC with quic-go.
func TestQUICTicketsStayWithTheirPolicy(t *testing.T) {
	ca := newPKI(t, "root")
	cfg, _, _ := ticketConfig(t, ca, testSecret)
	sel := NewSelector(mustTable(t, cfg))
	addr := serveQUIC(t, sel.QUICConfig())

	cache := &oneSlotCache{keep: true, put: make(chan struct{}, 1)}
	c, err := dialQUIC(t, addr, hostile(cache, "x1.test", "h3"))
	require.NoError(t, err)
	require.False(t, c.ConnectionState().TLS.DidResume)
	select {
	case <-cache.put:
	case <-time.After(ioTimeout):
		t.Fatal("no session ticket")
	}
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"x1.test", true},
		{"x3.test", true},
		{"y.test", false},
	} {
		c, err := dialQUIC(t, addr, hostile(cache, tc.name, "h3"))
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, c.ConnectionState().TLS.DidResume, tc.name)
	}
}

// TestTicketKeysRotate: under a fake clock, a ticket resumes in its own
// key period and the next, and not after; the handshakes run over
// net.Pipe in a synctest bubble, so the clock is the bubble's.
func TestTicketKeysRotate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ca := newPKI(t, "root") // valid from the bubble's now
		x := ca.issue(t, leafOpts{names: []string{"x.test"}})
		sel := NewSelector(mustTable(t, Config{
			Certificates:    []Certificate{{ID: "x", Source: source(x)}},
			Hosts:           []Host{{Names: []string{"x.test"}, Certificate: "x"}},
			TicketSecret:    testSecret,
			TicketKeyPeriod: time.Hour,
		}))
		handshake := func(cache *oneSlotCache) bool {
			t.Helper()
			cc, sc := net.Pipe()
			defer cc.Close()
			go func() {
				defer sc.Close()
				s := tls.Server(sc, sel.TLSConfig())
				if s.Handshake() == nil {
					buf := make([]byte, 5)
					if _, err := s.Read(buf); err == nil {
						s.Write(buf)
					}
				}
			}()
			c := tls.Client(cc, &tls.Config{RootCAs: ca.pool, ServerName: "x.test", ClientSessionCache: cache})
			require.NoError(t, c.Handshake())
			require.NoError(t, echo(c))
			return c.ConnectionState().DidResume
		}
		// The bubble starts on a period boundary (midnight, 2000-01-01).
		first := &oneSlotCache{keep: true}
		require.False(t, handshake(first))
		require.NotNil(t, first.cs)
		again := func() bool { return handshake(&oneSlotCache{cs: first.cs, keep: true}) }

		time.Sleep(59 * time.Minute)
		assert.True(t, again(), "in its own period")
		time.Sleep(2 * time.Minute)
		assert.True(t, again(), "in the next period, opened with the previous key")
		time.Sleep(time.Hour)
		assert.False(t, again(), "two periods on, its key is gone")
	})
}

// TestTicketSecretsRotate: a Table built with TicketSecrets installs each
// Set on its next handshake, without a new Table: a ticket sealed before a
// rotation of the master secret resumes after it (the previous secret
// opens), the new secret seals (a Table of that secret alone opens what is
// sealed after the rotation), and a ticket two rotations old does not
// resume.
func TestTicketSecretsRotate(t *testing.T) {
	s0, s1, s2 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	secrets, err := NewTicketSecrets(s0, nil)
	require.NoError(t, err)
	ca := newPKI(t, "root")
	cfg, _, _ := ticketConfig(t, ca, nil)
	cfg.TicketSecrets = secrets
	sel := NewSelector(mustTable(t, cfg))
	addr := serveTLS(t, sel.TLSConfig())
	resumes := func(cache *oneSlotCache) bool {
		t.Helper()
		c, err := dialTLS(t, addr, hostile(cache, "x1.test"))
		require.NoError(t, err)
		return c.ConnectionState().DidResume
	}
	issue := func() *oneSlotCache {
		t.Helper()
		cache := &oneSlotCache{keep: true}
		require.False(t, resumes(cache))
		require.NotNil(t, cache.cs, "no ticket issued")
		return cache
	}

	before := issue()
	require.NoError(t, secrets.Set(s1, s0))
	assert.True(t, resumes(before), "the previous secret opens a ticket sealed before the rotation")
	after := issue()

	fixed := cfg
	fixed.TicketSecrets, fixed.TicketSecret = nil, s1
	sel.Swap(mustTable(t, fixed))
	assert.True(t, resumes(after), "the new secret seals")
	sel.Swap(mustTable(t, cfg))

	require.NoError(t, secrets.Set(s2, s1))
	assert.False(t, resumes(before), "a ticket two rotations old does not resume")
	assert.True(t, resumes(after), "one rotation old does")
}

// TestTicketSecretsRefused: short secrets change nothing, and a Config
// with both master secrets or with a zero TicketSecrets is refused.
func TestTicketSecretsRefused(t *testing.T) {
	codes := func(err error) []string {
		var got []string
		for _, p := range problemsOf(err) {
			got = append(got, p.Code+" "+p.Path)
		}
		return got
	}
	_, err := NewTicketSecrets(make([]byte, 31), nil)
	assert.Equal(t, []string{CodeTicketSecretShort + " ticketSecret"}, codes(err))
	secrets, err := NewTicketSecrets(testSecret, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{CodeTicketSecretShort + " previousTicketSecret"}, codes(secrets.Set(testSecret, make([]byte, 8))))
	assert.Equal(t, testSecret, secrets.set.Load().current, "a refused Set changes nothing")

	ca := newPKI(t, "root")
	cfg, _, _ := ticketConfig(t, ca, testSecret)
	cfg.TicketSecrets = secrets
	_, err = New(cfg)
	assert.Equal(t, []string{CodeTicketSecretsConflict + " ticketSecrets"}, codes(err))
	cfg.TicketSecret, cfg.TicketSecrets = nil, new(TicketSecrets)
	_, err = New(cfg)
	assert.Equal(t, []string{CodeTicketSecretsEmpty + " ticketSecrets"}, codes(err))
}
