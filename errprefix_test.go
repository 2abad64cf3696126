package paduraksa_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/paduraksa/paduraksa/admin"
	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/listenlimits"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/proxyproto"
	"github.com/paduraksa/paduraksa/secrets"
	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/paduraksa/paduraksa/upstream"
)

// prefixes finds the "name: " prefixes of a message's segments: at its
// start and after every ": ".
var prefixes = regexp.MustCompile(`(?:^|: )([a-z][a-z0-9]*): `)

// assertPrefixOnce fails when a line of msg names a prefix twice
// ("simulate: simulate: ...", "acme: the order failed: acme: ...").
func assertPrefixOnce(t *testing.T, msg string) {
	t.Helper()
	if p := prefixTwice(msg); p != "" {
		t.Errorf("%q says %q twice", msg, p+":")
	}
}

// prefixTwice returns a prefix a line of msg names twice, or "".
func prefixTwice(msg string) string {
	for line := range strings.Lines(msg) {
		seen := map[string]bool{}
		for i := 0; i < len(line); {
			m := prefixes.FindStringSubmatchIndex(line[i:])
			if m == nil {
				break
			}
			p := line[i+m[2] : i+m[3]]
			if seen[p] {
				return p
			}
			seen[p] = true
			i += m[3] // the ": " after the name may start the next segment
		}
	}
	return ""
}

// fatalT records what a simulate.Tester reports.
type fatalT struct{ msgs []string }

func (*fatalT) Helper() {}
func (f *fatalT) Errorf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

var tlsHello = tls.ClientHelloInfo{ServerName: "a.test"}

// TestRefusalsSayTheirPrefixOnce runs the library's refusals, of every
// package, and requires of each message that it names a prefix once: a
// package's error around another of its own, or around a library's that
// says its name (golang.org/x/crypto/acme's), does not repeat it.
func TestRefusalsSayTheirPrefixOnce(t *testing.T) {
	bad := &config.Document{
		Global: config.Global{TrustedProxies: []string{"10.0.0.1/8"}, HTTPSPort: -1},
		Hosts: []config.Host{{Names: []string{"a..test"}, Routes: []config.Route{{Upstream: "none", Path: "x"}}},
			{Names: []string{"*"}, Certificate: "gone", Kind: "fixed", Fixed: &config.FixedAnswer{Status: 1}}},
		Upstreams:    []config.Upstream{{ID: "u", Destinations: []config.Destination{{ID: "d", Address: "ftp://x"}}}},
		RateLimits:   []config.RateLimit{{ID: "rl"}},
		Certificates: []config.Certificate{{ID: "c", CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/c.key"}},
	}
	badData := []byte("hosts: [{names: [a.test], bogus: 1}]\nupstreams: 3\n")

	msgs := map[string]string{}
	add := func(name string, err error) {
		t.Helper()
		require.Error(t, err, name)
		msgs[name] = err.Error()
	}
	ctx := context.Background()

	// config and snapshot
	_, _, err := config.ParseAddress("ftp://x")
	add("config.ParseAddress", err)
	_, err = config.ParseDuration("soon", 0)
	add("config.ParseDuration", err)
	_, err = config.Decode(badData)
	add("config.Decode", err)
	add("config.Check", joined(config.Check(bad)))
	add("snapshot.Validate", joined(snapshot.Validate(bad)))
	_, err = snapshot.ReadDocument("/nonexistent/paduraksa.yaml", 0)
	add("snapshot.ReadDocument", err)
	pub := snapshot.NewPublisher(snapshot.PublisherConfig{})
	defer pub.Close()
	_, err = pub.Apply(ctx, bad)
	add("snapshot.Publisher.Apply", err)
	_, err = new(snapshot.Compiler).DraftData(badData)
	add("snapshot.Compiler.DraftData", err)
	_, err = new(snapshot.Publisher).Apply(ctx, &config.Document{})
	add("snapshot.Publisher zero", err)

	// simulate
	_, err = simulate.Run(simulate.DraftTarget(bad), simulate.Probe{URL: "http://a.test/"})
	add("simulate.Run draft", err)
	_, err = simulate.Run(simulate.Target{DraftData: badData, TestCertificates: true}, simulate.Probe{URL: "http://a.test/"})
	add("simulate.Run test certificates", err)
	_, err = simulate.Run(simulate.Target{}, simulate.Probe{URL: "ftp://a.test/", HTTPVersion: 9})
	add("simulate.Run probe", err)
	_, err = simulate.Diff(simulate.Target{}, simulate.Target{}, nil)
	add("simulate.Diff", err)
	var ft fatalT
	simulate.NewTester(&ft, simulate.DraftTarget(bad))
	simulate.NewTester(&ft, simulate.Target{})
	require.Len(t, ft.msgs, 2)
	for i, m := range ft.msgs {
		msgs[fmt.Sprint("simulate.NewTester ", i)] = m
	}

	// gate
	add("gate.CheckRedirectTarget", gate.CheckRedirectTarget("ftp://x", false))
	add("gate.CheckPrefix", gate.CheckPrefix("a"))
	_, err = gate.New(gate.Config{HTTPSPort: -1, Hosts: []gate.Host{{Names: []string{"*", "*"}}}})
	add("gate.New", err)
	_, err = gate.NewForwardAuth(gate.ForwardAuthConfig{URL: "ftp://x", Timeout: -1})
	add("gate.NewForwardAuth", err)

	// upstream, health, balance, proxy
	_, err = upstream.NewCluster("c", []upstream.DestinationConfig{{ID: "a", Scheme: "ftp", Host: "http://x"}})
	add("upstream.NewCluster", err)
	m := health.New(health.Options{Logger: discardLogger()})
	add("health.Monitor.Update", m.Update(health.ClusterHealth{Cluster: cluster(t), Config: health.Config{Active: health.ActiveConfig{Interval: -1}}}))
	require.NoError(t, m.Start(ctx))
	add("health.Monitor.Start twice", m.Start(ctx))
	m.Close()
	_, err = new(balance.Policies).New(balance.Config{Policy: "nope"})
	add("balance.Policies.New", err)
	add("balance.Policies.Register", new(balance.Policies).Register("", nil))
	_, err = proxy.NewRoute(proxy.RouteConfig{Cluster: &proxy.Cluster{Upstream: &upstream.Cluster{}}, HostName: "a b"})
	add("proxy.NewRoute", err)
	_, err = proxy.NewSite(proxy.SiteConfig{RequestHeaders: []proxy.HeaderRule{{Name: "Host", Value: "x"}}})
	add("proxy.NewSite", err)

	// the edge
	_, err = tlsselect.New(tlsselect.Config{Certificates: []tlsselect.Certificate{{ID: "c", CertFile: "/nonexistent"}}, Hosts: []tlsselect.Host{{Names: []string{"*"}, Certificate: "c"}}})
	add("tlsselect.New", err)
	_, err = tlsselect.NewACME(tlsselect.ACMEConfig{DirectoryURL: "http://ca.test"})
	add("tlsselect.NewACME", err)
	_, err = connlimit.New(connlimit.Config{PerAddress: connlimit.MaxPerAddress + 1, TableSize: 3})
	add("connlimit.New", err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, err = proxyproto.NewListener(ln, proxyproto.Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.1/8")}, MaxPending: -1})
	add("proxyproto.NewListener", err)
	c1, c2 := net.Pipe()
	go func() { io.WriteString(c1, "GET / HTTP/1.1\r\n\r\n"); c1.Close() }()
	_, err = proxyproto.ReadConn(c2, time.Now().Add(10*time.Second), 0)
	add("proxyproto.ReadConn", err)
	add("listenlimits.Limits.Validate", listenlimits.Limits{MaxHeaderBytes: 32 << 20}.Validate())
	_, err = edge.Start(edge.Config{Handler: http.NotFoundHandler(), HTTP: "127.0.0.1:0", HTTPS: "127.0.0.1:0"})
	add("edge.Start", err)

	// sources and the admin API
	_, err = source.NewFile(source.FileConfig{MaxBytes: -1})
	add("source.NewFile", err)
	f, err := source.NewFile(source.FileConfig{Path: "/nonexistent/paduraksa.yaml"})
	require.NoError(t, err)
	_, err = f.Load(ctx)
	add("source.File.Load", err)
	_, err = admin.New(admin.Config{MaxDocumentBytes: -1})
	add("admin.New", err)

	// the secrets file
	_, err = secrets.Parse([]byte(`{"version":2}`))
	add("secrets.Parse", err)
	_, err = secrets.Open(filepath.Join(t.TempDir(), "nodir", "secrets.json"))
	add("secrets.Open", err)

	for name, msg := range msgs {
		t.Run(name, func(t *testing.T) { assertPrefixOnce(t, msg) })
	}
}

// TestPrefixTwice: the check above finds what it is for.
func TestPrefixTwice(t *testing.T) {
	for msg, want := range map[string]string{
		"simulate: simulate: the draft would be refused:":                           "simulate",
		"acme: the order failed: acme: order x status: invalid":                     "acme",
		"simulate: the draft would be refused:\n\tcertificates[0].certFile: gone":   "",
		"requests: requests must be positive (gate.rateLimit.rate.invalid)":         "",
		"tlsselect: certificate pending: acme: no valid certificate for a.test yet": "",
	} {
		assert.Equal(t, want, prefixTwice(msg), "%q", msg)
	}
}

func joined(ps []*snapshot.ValidationError) error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errors.Join(errs...)
}
