package snapshot

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOneRefusalListsEveryProblem: a document with an unknown field and
// four bad values is refused once, with all five problems; before, the
// unknown field hid the values until it was fixed.
func TestOneRefusalListsEveryProblem(t *testing.T) {
	_, pub := newPublisher(t)
	o, err := pub.PublishData([]byte(`
hosts:
  - names: [app.test]
    routes:
      - path: /api
        upstream: api
        retry: {attempts: 9}
    colour: blue
upstreams:
  - id: api
    loadBalancing: ZoneAware
    destinations: [{id: a, address: "ftp://10.0.0.1"}]
    health:
      passive: {enabled: true, window: 1ns}
`)).Wait(testContext(t))
	require.NoError(t, err)
	assert.Equal(t, Refused, o.Status)
	assert.Equal(t, []string{
		config.CodeDocumentFieldUnknown + " hosts[0].colour",
		config.CodeUpstreamDestinationAddressInvalid + " upstreams[0].destinations[0].address",
		balance.CodePolicyUnknown + " upstreams[0].loadBalancing",
		health.CodePassiveWindowInvalid + " upstreams[0].health.passive.window",
		proxy.CodeRetryAttemptsInvalid + " hosts[0].routes[0].retry.attempts",
	}, codePaths(o.Errors))
}

// TestAFieldThatDidNotDecodeIsReportedOnce: a value of the wrong type is
// left out of the document that is compiled; what the compile would say
// about its absence is not said again.
func TestAFieldThatDidNotDecodeIsReportedOnce(t *testing.T) {
	_, pub := newPublisher(t)
	o, err := pub.PublishData([]byte(`{"rateLimits":[{"id":"rl","requests":"ten","period":"1s","scope":"shared"}],
		"hosts":[{"names":["a.test"],"routes":[{"upstream":"u"}]},{"names":[7],"routes":[{"upstream":"u"}]}],"upstreams":[{"id":"u"}]}`)).Wait(testContext(t))
	require.NoError(t, err)
	assert.Equal(t, []string{
		config.CodeDocumentFieldType + " rateLimits[0].requests",
		config.CodeDocumentFieldType + " hosts[1].names[0]",
	}, codePaths(o.Errors))
}

// TestProbeFirstUnderThePublishersOwnMonitor: with no monitor of the
// embedder's, probeFirst keeps a new destination out only until its first
// probe passes; before, nothing probed it and it never took traffic.
func TestProbeFirstUnderThePublishersOwnMonitor(t *testing.T) {
	b := startBackend(t, "b")
	release := make(chan struct{})
	b.srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			<-release // the first probe waits until the test has looked
		}
		b.serve(w, r)
	})
	store, pub := newPublisher(t)
	healthy := make(chan string, 4)
	defer pub.own.m.Subscribe(func(c health.Change) {
		if c.New == upstream.Healthy {
			select {
			case healthy <- c.DestinationID:
			default:
			}
		}
	})()
	doc := fleet(1, b)
	doc.Upstreams[0].Destinations = doc.Upstreams[0].Destinations[:1]
	doc.Upstreams[0].Health = config.HealthCheck{ProbeFirst: true, Availability: "HealthyAndUnknown",
		Active: config.ActiveHealth{Enabled: true, Interval: "50ms", Path: "/healthz"}}
	_, err := pub.Apply(testContext(t), doc)
	require.NoError(t, err)
	assert.Empty(t, store.Load().Cluster("u0").Upstream.Members().Available, "out of rotation until probed")
	close(release)
	assert.Equal(t, "d0", receive(t, healthy, 20*time.Second), "the new destination was never probed")
	status, body := get(t, newClient(t), serve(t, store), "h0.test", "/x")
	assert.Equal(t, 200, status)
	assert.Equal(t, "b /x", body)
}

// TestSlowStartUnderThePublishersOwnMonitor: slow start reads when health
// saw a destination become available; the publisher's own monitor stamps
// it, which nothing did before without a monitor of the embedder's.
func TestSlowStartUnderThePublishersOwnMonitor(t *testing.T) {
	b := startBackend(t, "b")
	store, pub := newPublisher(t)
	doc := fleet(1, b)
	doc.Upstreams[0].Health.SlowStart = "1m"
	_, err := pub.Apply(testContext(t), doc)
	require.NoError(t, err)
	for _, d := range store.Load().Cluster("u0").Upstream.Members().All {
		assert.NotZero(t, d.AvailableSince(), "destination %s is not stamped", d.ID())
	}
	_, ok := store.Load().Cluster("u0").Policy.(*balance.SlowStart)
	assert.True(t, ok, "the policy ramps new destinations")
}

// syncWriter is a log sink safe for the gate's request goroutines.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestShadowModeLogsToTheCompilersLogger: a shadowed policy's "would have
// blocked" line reaches Compiler.Logger; the compiler never handed the gate
// a logger before.
func TestShadowModeLogsToTheCompilersLogger(t *testing.T) {
	b := startBackend(t, "b")
	var logs syncWriter
	c := Compiler{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	doc := fleet(1, b)
	doc.RuleSets = []config.RuleSet{{ID: "waf", Mode: "shadow", Rules: []config.Rule{{PathPrefix: "/wp-"}}}}
	doc.Hosts[0].Policies = []string{"waf"}
	s, err := c.compileDocument(doc)
	require.NoError(t, err)
	s.commit()
	r := httptest.NewRequest(http.MethodGet, "/wp-login.php", nil)
	r.Host = "h0.test"
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	assert.Equal(t, 200, w.Code, "shadowed: the request goes on")
	assert.Contains(t, logs.String(), "would have blocked")
	assert.Contains(t, logs.String(), "policy=waf")
}

// TestCountryRulesReachTheAccessList: allowCountries works through
// Compiler.Countries; before, no field of the document reached it.
func TestCountryRulesReachTheAccessList(t *testing.T) {
	b := startBackend(t, "b")
	c := Compiler{Countries: countries{"192.0.2.1": "DE", "198.51.100.1": "FR"}}
	doc := fleet(1, b)
	doc.AccessLists = []config.AccessList{{ID: "de", AllowCountries: []string{"de"}}}
	doc.Hosts[0].AccessList = "de"
	s, err := c.compileDocument(doc)
	require.NoError(t, err)
	s.commit()
	for client, want := range map[string]int{"192.0.2.1": 200, "198.51.100.1": 403, "203.0.113.9": 403} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Host, r.RemoteAddr = "h0.test", netip.AddrPortFrom(netip.MustParseAddr(client), 1234).String()
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		assert.Equal(t, want, w.Code, client)
	}
	_, err = (&Compiler{}).compileDocument(doc)
	assert.Equal(t, []string{gate.CodeAccessListCountriesNoLookup + " accessLists[0].allowCountries"}, codePaths(Problems(err)))
}

// TestHTTP2ToPlainTextDestinations: "2" with orLower reaches https://
// destinations only; beside them it is a warning, alone a refusal.
func TestHTTP2ToPlainTextDestinations(t *testing.T) {
	doc := &config.Document{Upstreams: []config.Upstream{{ID: "u", HTTP: config.UpstreamHTTP{Version: "2"}, Destinations: []config.Destination{
		{ID: "a", Address: "http://10.0.0.1"}, {ID: "b", Address: "https://10.0.0.2"}}}}}
	var c Compiler
	s, err := c.compileDocument(doc)
	require.NoError(t, err)
	assert.Equal(t, []string{CodeUpstreamHTTPVersionPlainText + " upstreams[0].http.version"}, codePaths(s.Warnings()))
	doc.Upstreams[0].HTTP.VersionPolicy = "exact"
	s, err = c.compileDocument(doc)
	require.NoError(t, err)
	assert.Empty(t, s.Warnings(), "exact speaks h2c to them")
}

// TestClosedPublisherRefuses: after Close, a publish is refused at once and
// the store keeps serving what it had.
func TestClosedPublisherRefuses(t *testing.T) {
	b := startBackend(t, "b")
	store, pub := newPublisher(t)
	_, err := pub.Apply(testContext(t), fleet(1, b))
	require.NoError(t, err)
	require.NoError(t, pub.Close())
	require.NoError(t, pub.Close(), "Close is idempotent")
	o, err := pub.Publish(fleet(2, b)).Wait(testContext(t))
	require.NoError(t, err)
	assert.Equal(t, Refused, o.Status)
	assert.NotNil(t, store.Load().Cluster("u0"))
	assert.Nil(t, store.Load().Cluster("u1"))
}

// TestCloseWhilePublishing: Close and publishes that start the monitor's
// probes may run at once (the race detector watches).
func TestCloseWhilePublishing(t *testing.T) {
	b := startBackend(t, "b")
	_, pub := newPublisher(t)
	doc := fleet(2, b)
	doc.Upstreams[0].Health.Active = config.ActiveHealth{Enabled: true, Interval: "1h"}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 20 {
			pub.Publish(doc)
		}
	}()
	require.NoError(t, pub.Close())
	receive(t, done, 20*time.Second)
	pub.Flush()
}

// TestCheckKeepsNothing: checking a document with a changed rate limit
// leaves the compiler's rate-limit state alone, so the limit that serves
// keeps its buckets.
func TestCheckKeepsNothing(t *testing.T) {
	c := Compiler{GateState: new(gate.State)}
	doc := fleet(1, &backend{addr: "127.0.0.1:9"})
	doc.RateLimits = []config.RateLimit{{ID: "rl", Requests: 1, Period: "1h", Scope: "shared"}}
	doc.Hosts[0].Policies = []string{"rl"}
	first, err := c.GateState.RateLimit(gate.RateLimitConfig{ID: "rl", Requests: 1, Period: time.Hour})
	require.NoError(t, err)
	_, err = c.compileDocument(doc)
	require.NoError(t, err)
	changed := clone(doc)
	changed.RateLimits = []config.RateLimit{{ID: "rl", Requests: 2, Period: "1h", Scope: "shared"}}
	assert.Empty(t, c.Check(changed))
	again, err := c.GateState.RateLimit(gate.RateLimitConfig{ID: "rl", Requests: 1, Period: time.Hour})
	require.NoError(t, err)
	assert.Same(t, first, again, "the state still holds the limit that serves")
}
