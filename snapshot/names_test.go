package snapshot

import (
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/testcert"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// builtin is one built-in name a package exports and how a document uses
// it: set puts the name in a document whose one host app.test routes /api
// to the backend; want is the status a GET /api/x then gets (0: 200 from
// the backend); tls routes to a TLS backend instead.
type builtin struct {
	set  func(d *config.Document, name string)
	want func(name string) int
	tls  bool
}

// builtinNames are every list of built-in names the owning packages
// export, with how a document takes each.
func builtinNames() map[string]struct {
	names []string
	use   builtin
} {
	type entry = struct {
		names []string
		use   builtin
	}
	up := func(d *config.Document) *config.Upstream { return &d.Upstreams[0] }
	return map[string]entry{
		"balance.PolicyNames": {balance.PolicyNames(), builtin{set: func(d *config.Document, n string) {
			up(d).LoadBalancing = n
			d.Global.Zone = "eu-1"
		}}},
		"balance.AffinityModeNames": {balance.AffinityModeNames(), builtin{set: func(d *config.Document, n string) {
			up(d).Affinity = config.Affinity{Enabled: true, Mode: n}
		}}},
		"balance.AffinityFailurePolicyNames": {balance.AffinityFailurePolicyNames(), builtin{set: func(d *config.Document, n string) {
			up(d).Affinity = config.Affinity{Enabled: true, FailurePolicy: n}
		}}},
		"balance.CookieSecureNames": {balance.CookieSecureNames(), builtin{set: func(d *config.Document, n string) {
			up(d).Affinity = config.Affinity{Enabled: true, Cookie: config.AffinityCookie{Secure: n}}
		}}},
		"balance.CookieSameSiteNames": {balance.CookieSameSiteNames(), builtin{set: func(d *config.Document, n string) {
			up(d).Affinity = config.Affinity{Enabled: true, Cookie: config.AffinityCookie{SameSite: n, Secure: "Always"}}
		}}},
		"health.ActivePolicyNames": {health.ActivePolicyNames(), builtin{set: func(d *config.Document, n string) {
			up(d).Health.Active = config.ActiveHealth{Enabled: true, Policy: n, Interval: "1h"}
		}}},
		"health.PassivePolicyNames": {health.PassivePolicyNames(), builtin{set: func(d *config.Document, n string) {
			up(d).Health.Passive = config.PassiveHealth{Enabled: true, Policy: n}
		}}},
		"health.AvailabilityNames": {health.AvailabilityNames(), builtin{set: func(d *config.Document, n string) {
			up(d).Health.Availability = n
		}}},
		"gate.HostKindNames": {gate.HostKindNames(), builtin{set: func(d *config.Document, n string) {
			h := &d.Hosts[0]
			switch h.Kind = n; n {
			case "redirect":
				h.Routes, h.Redirect = nil, &config.Redirect{To: "https://elsewhere.test"}
			case "fixed":
				h.Routes, h.Fixed = nil, &config.FixedAnswer{Body: "fixed"}
			}
		}, want: func(n string) int {
			if n == "redirect" {
				return 308
			}
			return 0
		}}},
		"gate.ModeNames": {gate.ModeNames(), builtin{set: func(d *config.Document, n string) {
			d.RuleSets = []config.RuleSet{{ID: "waf", Mode: n, Rules: []config.Rule{{PathPrefix: "/api"}}}}
			d.Hosts[0].Policies = []string{"waf"}
		}, want: func(n string) int {
			if n == "enforce" {
				return 403
			}
			return 0
		}}},
		"gate.RuleActionNames": {gate.RuleActionNames(), builtin{set: func(d *config.Document, n string) {
			r := config.Rule{PathPrefix: "/api", Action: n}
			if n == "respond" {
				r.Respond = &config.FixedAnswer{Status: 418}
			}
			d.RuleSets = []config.RuleSet{{ID: "waf", Rules: []config.Rule{r}}}
			d.Hosts[0].Policies = []string{"waf"}
		}, want: func(n string) int {
			return map[string]int{"deny": 403, "respond": 418}[n]
		}}},
		"gate.RateLimitScopeNames": {gate.RateLimitScopeNames(), builtin{set: func(d *config.Document, n string) {
			d.RateLimits = []config.RateLimit{{ID: "rl", Requests: 100, Period: "1s", Scope: n}}
			d.Hosts[0].Routes[0].Policies = []string{"rl"}
		}}},
		"gate.TLSVersionNames": {gate.TLSVersionNames(), builtin{set: func(d *config.Document, n string) {
			withHostCertificate(d)
			d.Hosts[0].TLS = &config.HostTLS{MinVersion: n}
		}}},
		"gate.PathAllowNames": {gate.PathAllowNames(), builtin{set: func(d *config.Document, n string) {
			d.Hosts[0].Routes[0].AllowInPath = []string{n}
		}}},
		"gate.PathTypeNames": {gate.PathTypeNames(), builtin{set: func(d *config.Document, n string) {
			r := &d.Hosts[0].Routes[0]
			r.PathType = n
			r.Path = map[string]string{"prefix": "/api", "exact": "/API/x", "template": "/api/{x}", "regex": "/api/[a-z]+"}[n]
		}}},
		"gate.HeaderMatchTypeNames": {gate.HeaderMatchTypeNames(), builtin{set: func(d *config.Document, n string) {
			// Go's client sends User-Agent: Go-http-client/1.1.
			hm := config.HeaderMatch{Name: "user-agent", Type: n}
			switch n {
			case "exact":
				hm.Value = "Go-http-client/1.1"
			case "prefix":
				hm.Value = "Go-http"
			case "regex":
				hm.Value = `Go-http-client/1\.[01]`
			case "absent":
				hm.Name = "X-Debug"
			}
			d.Hosts[0].Routes[0].Match.Headers = []config.HeaderMatch{hm}
		}}},
		"gate.QueryMatchTypeNames": {gate.QueryMatchTypeNames(), builtin{set: func(d *config.Document, n string) {
			qm := config.QueryMatch{Name: "debug", Type: n}
			if n != "present" {
				qm.Value = "1"
			}
			d.Hosts[0].Routes[0].Match.Query = []config.QueryMatch{qm}
		}, want: func(string) int { return 404 }}}, // the request has no query: the match is applied
		"proxy.HostHeaderNames": {proxy.HostHeaderNames(), builtin{set: func(d *config.Document, n string) {
			r := &d.Hosts[0].Routes[0]
			if r.HostHeader = n; n == "custom" {
				r.HostName = "internal.test"
			}
		}}},
		"proxy.RequestIDModeNames": {proxy.RequestIDModeNames(), builtin{set: func(d *config.Document, n string) {
			d.Hosts[0].RequestID = n
		}}},
		"proxy.HeaderOpNames": {proxy.HeaderOpNames(), builtin{set: func(d *config.Document, n string) {
			rule := config.HeaderRule{Name: "X-Env", Operation: n, Value: "prod"}
			if n == "remove" {
				rule.Value = ""
			}
			d.Hosts[0].Headers.Request = []config.HeaderRule{rule}
		}}},
		"proxy.EncodingNames": {proxy.EncodingNames(), builtin{set: func(d *config.Document, n string) {
			d.Hosts[0].Compression = config.Compression{Enabled: true, Encodings: []string{n}}
		}}},
		"proxy.HTTPVersionNames": {proxy.HTTPVersionNames(), builtin{tls: true, set: func(d *config.Document, n string) {
			up(d).HTTP.Version = n
			up(d).HTTP.TLS.Trust = "any"
		}}},
		"proxy.VersionPolicyNames": {proxy.VersionPolicyNames(), builtin{tls: true, set: func(d *config.Document, n string) {
			up(d).HTTP.Version, up(d).HTTP.VersionPolicy = "2", n
			up(d).HTTP.TLS.Trust = "any"
		}}},
		"proxy.HTTP1ClientNames": {proxy.HTTP1ClientNames(), builtin{set: func(d *config.Document, n string) {
			up(d).HTTP.HTTP1Client = n
		}}},
		"proxy.TrustNames": {proxy.TrustNames(), builtin{tls: true, set: func(d *config.Document, n string) {
			up(d).HTTP.TLS.Trust = n
			if n == "pinned" {
				up(d).HTTP.TLS.Pins = []string{tlsPin}
			}
			if n == "caFile" {
				// The backend's own certificate as the root, checked for its
				// address rather than the Host.
				up(d).HTTP.TLS.CAFile, up(d).HTTP.TLS.ServerName = tlsCAFile, "127.0.0.1"
			}
		}, want: func(n string) int {
			if n == "system" {
				return 502 // the test certificate is in no system pool
			}
			return 0
		}}},
		"proxy.ConnectFailuresNames": {proxy.ConnectFailuresNames(), builtin{set: func(d *config.Document, n string) {
			d.Hosts[0].Routes[0].Retry.ConnectFailures = n
		}}},
	}
}

// tlsPin is the pin of the TLS backend's certificate, set by
// startTLSBackend.
var tlsPin string

// tlsCAFile is a PEM file of the TLS backend's certificate.
var tlsCAFile string

// startTLSBackend is a backend over TLS with a self-signed certificate
// that speaks HTTP/1.1 and HTTP/2.
func startTLSBackend(t *testing.T) string {
	t.Helper()
	cert, err := testcert.New("127.0.0.1")
	require.NoError(t, err)
	sum := sha256.Sum256(cert.Leaf.RawSubjectPublicKeyInfo)
	tlsPin = hex.EncodeToString(sum[:])
	tlsCAFile = filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(tlsCAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Leaf.Raw}), 0o600))
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "tls "+r.Proto)
	}), ReadHeaderTimeout: 10 * time.Second, ErrorLog: quietLog()}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// TestEveryBuiltinNameIsAcceptedCompilesAndServes walks every list of
// built-in names the owning packages export: each name, written in a
// document, decodes, is applied by a publisher that runs health checks,
// and a request for it is served through a real listener. A name a
// package adds is tried without a change here; a name the document spells
// otherwise (ZoneAware, Unset, TransportFailureRateWith5xx) would not be
// in the lists at all.
func TestEveryBuiltinNameIsAcceptedCompilesAndServes(t *testing.T) {
	plain := startBackend(t, "b")
	secure := startTLSBackend(t)
	for list, e := range builtinNames() {
		require.NotEmpty(t, e.names, list)
		for _, n := range e.names {
			t.Run(list+"/"+n, func(t *testing.T) {
				addr := "http://" + plain.addr
				if e.use.tls {
					addr = "https://" + secure
				}
				doc := &config.Document{
					Hosts: []config.Host{{Names: []string{"app.test"}, Routes: []config.Route{{Path: "/api", Upstream: "u"}}}},
					Upstreams: []config.Upstream{{ID: "u", Destinations: []config.Destination{
						{ID: "d", Address: addr, Metadata: map[string]string{"zone": "eu-1"}}}}},
				}
				e.use.set(doc, n)
				data, err := json.Marshal(doc)
				require.NoError(t, err)
				decoded, err := config.Decode(data)
				require.NoError(t, err, "the document does not take %s", n)
				assert.Equal(t, doc, decoded)

				store := new(Store)
				pub := NewPublisher(PublisherConfig{Store: store})
				defer pub.Close()
				o, err := pub.PublishData(data).Wait(testContext(t))
				require.NoError(t, err)
				require.Equal(t, Applied, o.Status, "%v", o.Errors)

				want := 200
				if e.use.want != nil && e.use.want(n) != 0 {
					want = e.use.want(n)
				}
				c := newClient(t)
				c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
				status, body := get(t, c, serve(t, store), "app.test", "/api/x")
				assert.Equal(t, want, status, body)
				if want == 200 && doc.Hosts[0].Kind != "fixed" {
					if e.use.tls {
						assert.Contains(t, body, "tls HTTP/")
					} else {
						assert.Equal(t, "b /api/x", body)
					}
				}
			})
		}
	}
}

// TestDocumentNamesAreThePackagesNames: the names the document once spelled
// its own way are refused with the owner's code, so there is one spelling.
func TestDocumentNamesAreThePackagesNames(t *testing.T) {
	for _, tc := range []struct {
		set        func(d *config.Document)
		code, path string
	}{
		{func(d *config.Document) { d.Upstreams[0].LoadBalancing = "ZoneAware" }, balance.CodePolicyUnknown, "upstreams[0].loadBalancing"},
		{func(d *config.Document) {
			d.Upstreams[0].Health.Passive = config.PassiveHealth{Enabled: true, Policy: "TransportFailureRateWith5xx"}
		}, health.CodePassivePolicyUnknown, "upstreams[0].health.passive.policy"},
		{func(d *config.Document) {
			d.Upstreams[0].Affinity = config.Affinity{Enabled: true, Cookie: config.AffinityCookie{SameSite: "Unset"}}
		}, balance.CodeAffinityCookieSameSiteUnknown, "upstreams[0].affinity.cookie.sameSite"},
	} {
		doc := &config.Document{Upstreams: []config.Upstream{{ID: "u"}}}
		tc.set(doc)
		assert.Equal(t, []string{tc.code + " " + tc.path}, codePaths(Validate(doc)))
	}
}

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
