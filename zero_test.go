package paduraksa_test

// The library's rule for zero values: every exported config type's zero
// value works or is refused at construction with an error, and every
// exported type whose zero value needs its constructor says what the zero
// value is. TestZeroValueCases lists the types from the module's source,
// so a new config type without a case in zeroCases fails it.

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
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
	"github.com/paduraksa/paduraksa/simulate"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/source"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/paduraksa/paduraksa/upstream"
)

// exportedType is an exported struct type of the library, and why the
// rule is asked of it.
type exportedType struct {
	name      string // "gate.RateLimitConfig"
	config    bool   // a config: its name, a constructor or Start/Run takes it, or it has Validate
	unexposed bool   // it has unexported fields: its zero value may need a constructor
	doc       string
}

// libraryTypes parses the module's packages (not internal/, examples/,
// benchmarks/, nested modules or test files) and returns their exported struct types.
func libraryTypes(t *testing.T) map[string]*exportedType {
	t.Helper()
	fset := token.NewFileSet()
	types := map[string]*exportedType{}
	taken := map[string]bool{}     // types a New*, Start or Run takes
	validated := map[string]bool{} // types with a Validate method
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "internal", "examples", "benchmarks", "testdata":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && path != "." {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != "." {
				return filepath.SkipDir // a nested module (gatewayapi), whose own tests check its types
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "." {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		pkg := f.Name.Name
		for _, decl := range f.Decls {
			switch decl := decl.(type) {
			case *ast.GenDecl:
				for _, spec := range decl.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					e := &exportedType{name: pkg + "." + ts.Name.Name, doc: ts.Doc.Text() + decl.Doc.Text()}
					for _, field := range st.Fields.List {
						for _, n := range field.Names {
							e.unexposed = e.unexposed || !n.IsExported()
						}
					}
					e.config = strings.HasSuffix(ts.Name.Name, "Config") || strings.HasSuffix(ts.Name.Name, "Options")
					types[e.name] = e
				}
			case *ast.FuncDecl:
				if !decl.Name.IsExported() {
					continue
				}
				if decl.Recv != nil {
					recv := typeName(decl.Recv.List[0].Type)
					if recv == "" || !ast.IsExported(recv) {
						continue
					}
					if decl.Name.Name == "Validate" {
						validated[pkg+"."+recv] = true
					}
				}
				if n := decl.Name.Name; !strings.HasPrefix(n, "New") && n != "Start" && n != "Run" {
					continue
				}
				for _, p := range decl.Type.Params.List {
					if n := typeName(p.Type); n != "" {
						taken[pkg+"."+n] = true
					}
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	for name := range taken {
		if e := types[name]; e != nil {
			e.config = true
		}
	}
	for name := range validated {
		if e := types[name]; e != nil {
			e.config = true
		}
	}
	require.Greater(t, len(types), 100, "the walk found the library's types")
	return types
}

// typeName returns the name of T, *T or []T, or "".
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.ArrayType:
		return typeName(e.Elt)
	}
	return ""
}

// TestZeroValueCases: every exported config type of the library, and
// every exported type with unexported fields, has a case in zeroCases
// (and every case is a type of the library); the second kind says in its
// doc what its zero value is.
func TestZeroValueCases(t *testing.T) {
	types := libraryTypes(t)
	cases := zeroCases()
	for _, e := range types {
		if !e.config && !e.unexposed {
			continue
		}
		if cases[e.name] == nil {
			t.Errorf("%s has no zero-value case: add one to zeroCases", e.name)
		}
		if e.unexposed && !strings.Contains(strings.ToLower(e.doc), "zero") {
			t.Errorf("%s does not say what its zero value is", e.name)
		}
	}
	for name := range cases {
		if types[name] == nil {
			t.Errorf("zeroCases has %s, which is no exported struct type of the library", name)
		}
	}
}

// TestZeroValues runs every case: the zero value works, or is refused at
// construction with an error that says its package once.
func TestZeroValues(t *testing.T) {
	for name, c := range zeroCases() {
		t.Run(name, c)
	}
}

// refused requires err to be a refusal that names its package once.
func refused(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assertPrefixOnce(t, err.Error())
}

// req is a request to a.test.
func req() *http.Request { return httptest.NewRequest(http.MethodGet, "http://a.test/x", nil) }

// cluster is a cluster of one destination, a, at 127.0.0.1:9.
func cluster(t *testing.T) *upstream.Cluster {
	t.Helper()
	c, err := upstream.NewCluster("c", []upstream.DestinationConfig{{ID: "a", Scheme: "http", Host: "127.0.0.1:9"}})
	require.NoError(t, err)
	return c
}

// zeroCases proves each type's zero value works or is refused.
func zeroCases() map[string]func(t *testing.T) {
	return map[string]func(t *testing.T){
		// admin
		"admin.Config": func(t *testing.T) {
			_, err := admin.New(admin.Config{})
			refused(t, err)
			assert.ErrorContains(t, err, admin.CodePublisherMissing)
		},
		"admin.Handler": func(t *testing.T) {
			h, err := admin.New(admin.Config{Publisher: snapshot.NewPublisher(snapshot.PublisherConfig{})})
			require.NoError(t, err)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://localhost/healthz", nil))
			assert.Equal(t, http.StatusServiceUnavailable, w.Code, "nothing published yet")
		},
		"admin.MetricsConfig": func(t *testing.T) {
			w := httptest.NewRecorder()
			admin.NewMetrics(admin.MetricsConfig{}).Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			assert.Equal(t, http.StatusOK, w.Code)
			assert.Contains(t, w.Body.String(), "go_goroutines")
		},
		"admin.Metrics": func(t *testing.T) {
			w := httptest.NewRecorder()
			new(admin.Metrics).Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			assert.Equal(t, http.StatusOK, w.Code)
		},

		// balance
		"balance.Config": func(t *testing.T) {
			p, err := new(balance.Policies).New(balance.Config{})
			require.NoError(t, err)
			assert.Equal(t, "a", p.Pick(balance.Input{Request: req()}, cluster(t).Members().Available).ID())
		},
		"balance.Policies": func(t *testing.T) {
			var p balance.Policies
			assert.NoError(t, p.Validate(balance.Config{Policy: balance.PolicyRoundRobin}))
		},
		"balance.HashConfig": func(t *testing.T) {
			assert.NoError(t, balance.HashConfig{}.Validate())
			h, err := balance.NewConsistentHash(balance.HashConfig{})
			require.NoError(t, err)
			assert.NotNil(t, h.Pick(balance.Input{Request: req(), Client: netip.MustParseAddr("192.0.2.1")}, cluster(t).Members().Available))
		},
		"balance.KeyHash": func(t *testing.T) {
			var k balance.KeyHash
			_, ok := k.Hash(balance.Input{Request: req(), Client: netip.MustParseAddr("192.0.2.1")})
			assert.True(t, ok, "the zero KeyHash hashes the client address")
			_, ok = k.Hash(balance.Input{Request: req()})
			assert.False(t, ok, "no address, no key")
		},
		"balance.ConsistentHash": func(t *testing.T) {
			assert.NotNil(t, new(balance.ConsistentHash).Pick(balance.Input{Request: req()}, cluster(t).Members().Available))
		},
		"balance.AffinityConfig": func(t *testing.T) {
			assert.NoError(t, balance.AffinityConfig{}.Validate())
			a, err := balance.NewAffinity(balance.AffinityConfig{}, balance.NewAffinityKey())
			require.NoError(t, err)
			w := httptest.NewRecorder()
			a.Set(w, req(), cluster(t).Destination("a"))
			assert.Contains(t, w.Header().Get("Set-Cookie"), ".Paduraksa.Affinity=")
			_, err = balance.NewAffinity(balance.AffinityConfig{}, nil)
			refused(t, err)
		},
		"balance.CookieConfig": func(t *testing.T) {
			assert.NoError(t, balance.AffinityConfig{Cookie: balance.CookieConfig{}}.Validate())
		},
		"balance.Affinity": func(t *testing.T) {
			var a balance.Affinity
			c := cluster(t)
			d, st := a.Find(req(), c.Members())
			assert.Nil(t, d)
			assert.Equal(t, balance.AffinityNone, st)
			w := httptest.NewRecorder()
			a.Set(w, req(), c.Destination("a"))
			assert.Empty(t, w.Header(), "a zero Affinity sets nothing")
		},
		"balance.PreferLocalZone": func(t *testing.T) {
			assert.NotNil(t, new(balance.PreferLocalZone).Pick(balance.Input{Request: req()}, cluster(t).Members().Available))
		},
		"balance.RoundRobin": func(t *testing.T) {
			assert.NotNil(t, new(balance.RoundRobin).Pick(balance.Input{Request: req()}, cluster(t).Members().Available))
		},
		"balance.SlowStart": func(t *testing.T) {
			assert.NotNil(t, new(balance.SlowStart).Pick(balance.Input{Request: req()}, cluster(t).Members().Available), "no inner policy: power of two choices")
		},

		// config
		"config.Document": func(t *testing.T) {
			var probs []*config.ValidationError
			config.NewChecker(&config.Document{}, &probs)
			assert.Empty(t, config.Check(&config.Document{}))
			assert.Empty(t, snapshot.Validate(&config.Document{}), "the zero document is valid")
		},
		"config.Checker": func(t *testing.T) {
			var probs []*config.ValidationError
			c := config.NewChecker(&config.Document{Hosts: []config.Host{{}}}, &probs)
			c.Host(0)
			assert.NotEmpty(t, probs, "a host without routes")
		},
		"config.Form": func(t *testing.T) {
			var f config.Form
			assert.Empty(t, f.Bytes())
			assert.Zero(t, f.Hosts())
		},

		// connlimit
		"connlimit.Config": func(t *testing.T) {
			assert.NoError(t, connlimit.Config{}.Validate())
			l, err := connlimit.New(connlimit.Config{})
			require.NoError(t, err)
			tk, err := l.Admit(netip.MustParseAddr("192.0.2.1"), connlimit.TCP)
			require.NoError(t, err)
			assert.True(t, tk.Counted(), "the default cap counts")
			l.Release(tk)
		},
		"connlimit.Limiter": func(t *testing.T) {
			var l connlimit.Limiter
			tk, err := l.Admit(netip.MustParseAddr("192.0.2.1"), connlimit.TCP)
			assert.NoError(t, err)
			assert.False(t, tk.Counted(), "a zero Limiter admits without counting")
		},
		"connlimit.Listener": func(t *testing.T) {
			var ln connlimit.Listener
			_, err := ln.Accept()
			assert.ErrorIs(t, err, connlimit.ErrNoListener)
			refused(t, err)
		},
		"connlimit.Ticket": func(t *testing.T) {
			var tk connlimit.Ticket
			assert.False(t, tk.Counted())
			new(connlimit.Limiter).Release(tk)
		},

		// edge
		"edge.Config": func(t *testing.T) {
			_, err := edge.Start(edge.Config{})
			refused(t, err)
		},
		"edge.Server": func(t *testing.T) {
			var s edge.Server
			assert.Nil(t, s.Addr("http"))
			assert.NoError(t, s.Shutdown(context.Background()))
			assert.NoError(t, s.Close())
		},

		// gate
		"gate.Config": func(t *testing.T) {
			g, err := gate.New(gate.Config{})
			require.NoError(t, err)
			w := httptest.NewRecorder()
			g.ServeHTTP(w, req())
			assert.Equal(t, http.StatusNotFound, w.Code, "the default answer")
		},
		"gate.Gate": func(t *testing.T) {
			var g gate.Gate
			h, m := g.Lookup("a.test")
			assert.Nil(t, h)
			assert.Equal(t, gate.HostUnknown, m)
		},
		"gate.Host": func(t *testing.T) {
			_, err := gate.New(gate.Config{Hosts: []gate.Host{{}}})
			refused(t, err)
			assert.ErrorContains(t, err, gate.CodeHostNamesEmpty)
		},
		"gate.Route": func(t *testing.T) {
			_, err := gate.New(gate.Config{Hosts: []gate.Host{{Names: []string{"a.test"}, Routes: []gate.Route{{}}}}})
			refused(t, err)
			assert.ErrorContains(t, err, gate.CodeRouteTargetMissing)
		},
		"gate.Answer": func(t *testing.T) {
			g, err := gate.New(gate.Config{Hosts: []gate.Host{{Names: []string{"a.test"}, Kind: gate.HostFixed, Fixed: gate.Answer{}}},
				Default: gate.Answer{}})
			require.NoError(t, err)
			w := httptest.NewRecorder()
			g.ServeHTTP(w, req())
			assert.Equal(t, http.StatusOK, w.Code, "a fixed host's zero answer is 200")
			p := gate.NewFixed("maintenance", gate.Answer{})
			assert.Equal(t, gate.Respond, p.Evaluate(req(), &gate.Request{}).Verdict)
		},
		"gate.RouteMetrics": func(t *testing.T) {
			var m gate.RouteMetrics
			m.BytesIn.Add(3)
			m.InFlight.Add(1)
			assert.EqualValues(t, 3, m.BytesIn.Load())
			assert.EqualValues(t, 1, m.InFlight.Load())
		},
		"gate.PolicyMetrics": func(t *testing.T) {
			var m gate.PolicyMetrics
			m.Allowed.Inc()
			assert.EqualValues(t, 1, m.Allowed.Load())
			assert.Zero(t, m.Blocked.Load())
		},
		"gate.Fixed": zeroPolicy(&gate.Fixed{}),
		"gate.AccessListConfig": func(t *testing.T) {
			l, err := gate.NewAccessList(gate.AccessListConfig{})
			require.NoError(t, err)
			assert.Equal(t, gate.Continue, l.Evaluate(req(), &gate.Request{Client: netip.MustParseAddr("192.0.2.1")}).Verdict, "allows everyone")
		},
		"gate.AccessList": zeroPolicy(&gate.AccessList{}),
		"gate.RuleSetConfig": func(t *testing.T) {
			s, err := gate.NewRuleSet(gate.RuleSetConfig{})
			require.NoError(t, err)
			assert.Equal(t, gate.Continue, s.Evaluate(req(), &gate.Request{Path: "/x"}).Verdict, "no rule continues")
		},
		"gate.RuleSet": zeroPolicy(&gate.RuleSet{}),
		"gate.RateLimitConfig": func(t *testing.T) {
			_, err := gate.NewRateLimit(gate.RateLimitConfig{})
			refused(t, err)
			_, err = new(gate.State).RateLimit(gate.RateLimitConfig{})
			refused(t, err)
		},
		"gate.RateLimit": zeroPolicy(&gate.RateLimit{}),
		"gate.RateLimitStoreConfig": func(t *testing.T) {
			// No store: a detached one, so a cluster limit is refused.
			var s gate.State
			s.SetRateLimitStore(gate.RateLimitStoreConfig{})
			assert.False(t, s.RateLimitStoreFailing())
			_, err := s.RateLimit(gate.RateLimitConfig{ID: "rl", Requests: 1, Period: time.Second, Buckets: gate.RateLimitCluster})
			refused(t, err)
		},
		"gate.ForwardAuthConfig": func(t *testing.T) {
			_, err := gate.NewForwardAuth(gate.ForwardAuthConfig{})
			refused(t, err)
		},
		"gate.ForwardAuth": zeroPolicy(&gate.ForwardAuth{}),
		"gate.State": func(t *testing.T) {
			var s gate.State
			l, err := s.RateLimit(gate.RateLimitConfig{ID: "rl", Requests: 1, Period: time.Second})
			require.NoError(t, err)
			assert.NotNil(t, l)
		},
		"gate.ChallengeStore": func(t *testing.T) {
			var s gate.ChallengeStore
			s.Set("token", "token.key")
			g, err := gate.New(gate.Config{Challenges: &s})
			require.NoError(t, err)
			w := httptest.NewRecorder()
			g.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://a.test/.well-known/acme-challenge/token", nil))
			assert.Equal(t, "token.key", w.Body.String())
		},
		"gate.Tracer": func(t *testing.T) {
			g, err := gate.New(gate.Config{Tracer: &gate.Tracer{}})
			require.NoError(t, err)
			g.ServeHTTP(httptest.NewRecorder(), req())
			g.Simulate(httptest.NewRecorder(), req(), &gate.Tracer{})
		},
		"gate.Page": func(t *testing.T) {
			assert.Contains(t, docOf(t, "gate", "Page"), "NewPage", "the zero Page is no answer: its doc names the constructor")
		},
		"gate.Request": func(t *testing.T) {
			w := httptest.NewRecorder()
			new(gate.Request).Answer(w, req(), http.StatusBadGateway)
			assert.Equal(t, http.StatusBadGateway, w.Code)
		},

		// health
		"health.Options": func(t *testing.T) {
			m := health.New(health.Options{})
			require.NoError(t, m.Start(context.Background()))
			require.NoError(t, m.Update(health.ClusterHealth{Cluster: cluster(t)}))
			assert.NoError(t, m.Close())
		},
		"health.Config": func(t *testing.T) {
			errs, warns := health.Config{}.Validate()
			assert.Empty(t, errs)
			assert.Empty(t, warns)
		},
		"health.ActiveConfig": func(t *testing.T) {
			errs, _ := health.Config{Active: health.ActiveConfig{}}.Validate()
			assert.Empty(t, errs)
		},
		"health.PassiveConfig": func(t *testing.T) {
			errs, _ := health.Config{Passive: health.PassiveConfig{}}.Validate()
			assert.Empty(t, errs)
		},
		"health.Monitor": func(t *testing.T) {
			var m health.Monitor
			assert.ErrorIs(t, m.Start(context.Background()), health.ErrNotNew)
			err := m.Update(health.ClusterHealth{Cluster: cluster(t)})
			assert.ErrorIs(t, err, health.ErrNotNew)
			refused(t, err)
			m.Observe(upstream.Observation{Destination: cluster(t).Destination("a"), Outcome: upstream.ConnectError})
			d := cluster(t).Destination("a")
			m.Observe(upstream.Observation{Destination: d, Outcome: upstream.ConnectError, NotSent: true})
			assert.False(t, d.Ejected(), "the zero Monitor ejects nothing")
			_, ejected := m.Ejection(d)
			assert.False(t, ejected)
			assert.NoError(t, m.Close())
		},
		"health.OutlierConfig": func(t *testing.T) {
			errs, warns := health.Config{Outlier: health.OutlierConfig{}}.Validate()
			assert.Empty(t, errs)
			assert.Empty(t, warns)
			m := health.New(health.Options{})
			defer m.Close()
			c := cluster(t)
			require.NoError(t, m.Update(health.ClusterHealth{Cluster: c}))
			for range 10 {
				m.Observe(upstream.Observation{Destination: c.Destination("a"), Outcome: upstream.Success, Status: 503})
			}
			assert.False(t, c.Destination("a").Ejected(), "off: nothing is ejected")
		},

		// listenlimits
		"listenlimits.Limits": func(t *testing.T) {
			assert.NoError(t, listenlimits.Limits{}.Validate())
			srv := &http.Server{}
			listenlimits.Limits{}.Apply(srv)
			assert.NotZero(t, srv.ReadHeaderTimeout, "the defaults")
		},
		"listenlimits.Listener": func(t *testing.T) {
			var ln listenlimits.Listener
			_, err := ln.Accept()
			assert.ErrorIs(t, err, listenlimits.ErrNoListener)
			refused(t, err)
			assert.NoError(t, ln.Close())
			_, err = listenlimits.NewListener(nil, 0, 0).Accept()
			assert.ErrorIs(t, err, listenlimits.ErrNoListener)
		},
		"listenlimits.MinRateReader": func(t *testing.T) {
			assert.Contains(t, docOf(t, "listenlimits", "MinRateReader"), "NewMinRateReader")
		},
		"listenlimits.MinRateWriter": func(t *testing.T) {
			assert.Contains(t, docOf(t, "listenlimits", "MinRateWriter"), "NewMinRateWriter")
		},
		"listenlimits.Upgrades": func(t *testing.T) {
			var u listenlimits.Upgrades
			for range 100 {
				require.True(t, u.TryAcquire(), "no cap")
			}
			assert.EqualValues(t, 100, u.Active())
		},

		// proxy
		"proxy.ClientConfig": func(t *testing.T) {
			tr := proxy.NewTransport(proxy.ClientConfig{})
			defer tr.CloseIdleConnections()
			assert.Equal(t, proxy.ClientConfig{}, tr.Config())
		},
		"proxy.Transport": func(t *testing.T) {
			_, err := proxy.NewRoute(proxy.RouteConfig{Cluster: &proxy.Cluster{Upstream: cluster(t), Transport: &proxy.Transport{}}})
			refused(t, err)
			assert.ErrorContains(t, err, "NewTransport")
		},
		"proxy.SiteConfig": func(t *testing.T) {
			s, err := proxy.NewSite(proxy.SiteConfig{})
			require.NoError(t, err)
			h := http.Header{}
			s.SetAnswerHeaders(h, req())
			assert.Empty(t, h)
		},
		"proxy.AnswerRules": func(t *testing.T) {
			h := http.Header{}
			new(proxy.AnswerRules).SetAnswerHeaders(h, req())
			assert.Empty(t, h, "adds nothing")
		},
		"proxy.HeaderRule": func(t *testing.T) {
			_, err := proxy.NewAnswerRules(nil, []proxy.HeaderRule{{}})
			assert.Error(t, err, "a rule without a name is refused")
		},
		"proxy.Site": func(t *testing.T) {
			h := http.Header{}
			new(proxy.Site).SetAnswerHeaders(h, req())
			assert.Empty(t, h)
		},
		"proxy.RouteConfig": func(t *testing.T) {
			_, err := proxy.NewRoute(proxy.RouteConfig{})
			refused(t, err)
		},
		"proxy.Route": func(t *testing.T) {
			refused(t, new(proxy.Route).CheckTarget())
			_, err := gate.New(gate.Config{Hosts: []gate.Host{{Names: []string{"a.test"}, Routes: []gate.Route{{Target: &proxy.Route{}}}}}})
			refused(t, err)
		},
		"proxy.Cluster": func(t *testing.T) {
			_, err := proxy.NewRoute(proxy.RouteConfig{Cluster: &proxy.Cluster{}})
			refused(t, err)
			_, err = proxy.NewRoute(proxy.RouteConfig{Cluster: &proxy.Cluster{Upstream: &upstream.Cluster{}, Transport: http.DefaultTransport}})
			refused(t, err)
		},
		"proxy.SplitConfig": func(t *testing.T) {
			_, err := proxy.NewSplit(proxy.SplitConfig{})
			refused(t, err)
			assert.ErrorContains(t, err, proxy.CodeSplitSidesMissing)
		},
		"proxy.Split": func(t *testing.T) {
			refused(t, new(proxy.Split).CheckTarget())
			_, err := gate.New(gate.Config{Hosts: []gate.Host{{Names: []string{"a.test"}, Routes: []gate.Route{{Target: &proxy.Split{}}}}}})
			refused(t, err)
			assert.Equal(t, -1, new(proxy.Split).Choose(req(), netip.Addr{}).Side)
		},
		"proxy.SideStats": func(t *testing.T) {
			var s proxy.SideStats
			assert.Zero(t, s.Count(proxy.SplitWeight))
			assert.Zero(t, (*proxy.SideStats)(nil).Count(proxy.SplitSticky))
		},
		"proxy.MirrorConfig": func(t *testing.T) {
			_, err := proxy.NewMirror(proxy.MirrorConfig{})
			refused(t, err)
		},
		"proxy.Mirror": func(t *testing.T) {
			assert.Empty(t, new(proxy.Mirror).Upstream())
			_, err := proxy.NewRoute(proxy.RouteConfig{Cluster: &proxy.Cluster{Upstream: cluster(t), Transport: http.DefaultTransport}, Mirror: &proxy.Mirror{}})
			refused(t, err)
			assert.ErrorContains(t, err, proxy.CodeRouteMirrorInvalid)
		},
		"proxy.MirrorStats": func(t *testing.T) {
			var s proxy.MirrorStats
			assert.Zero(t, s.Count(proxy.MirrorSent))
			assert.Zero(t, s.Outcome(upstream.Success))
			assert.Zero(t, s.InFlight())
			assert.Zero(t, s.NoDestination())
		},
		"proxy.Stats": func(t *testing.T) {
			var s proxy.Stats
			assert.Zero(t, s.Count(upstream.Success))
			assert.Zero(t, s.Retries())
		},

		// proxyproto
		"proxyproto.Config": func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			_, err = proxyproto.NewListener(ln, proxyproto.Config{})
			refused(t, err)
		},
		"proxyproto.Listener": func(t *testing.T) {
			var l proxyproto.Listener
			_, err := l.Accept()
			assert.ErrorIs(t, err, proxyproto.ErrNotNew)
			refused(t, err)
			assert.Nil(t, l.Addr())
			assert.NoError(t, l.Close())
		},
		"proxyproto.Conn": func(t *testing.T) {
			var c proxyproto.Conn
			assert.Equal(t, proxyproto.Header{}, c.Header())
			assert.Contains(t, docOf(t, "proxyproto", "Conn"), "ReadConn")
		},
		"proxyproto.SSL": func(t *testing.T) {
			var s proxyproto.SSL
			_, ok := s.Find(proxyproto.SubtypeSSLVersion)
			assert.False(t, ok)
		},
		"proxyproto.TLVIter": func(t *testing.T) {
			var it proxyproto.TLVIter
			_, ok := it.Next()
			assert.False(t, ok)
		},
		"proxyproto.Header": func(t *testing.T) {
			var h proxyproto.Header
			assert.False(t, h.Source.IsValid())
		},

		// simulate
		"simulate.HandlerConfig": func(t *testing.T) {
			// No store: drafts only; a request for the live gateway is
			// refused with its code.
			h := simulate.NewHandler(simulate.HandlerConfig{})
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/simulate", strings.NewReader(`{"probe":{"url":"http://a.test/"}}`)))
			assert.Equal(t, http.StatusBadRequest, w.Code)
			assert.Contains(t, w.Body.String(), simulate.CodeTargetNone)
			w = httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/simulate", strings.NewReader(`{"probe":{"url":"http://a.test/"},"draft":{}}`)))
			assert.Equal(t, http.StatusOK, w.Code, "%s", w.Body)
		},
		"simulate.SampleConfig": func(t *testing.T) {
			s := simulate.NewSample(simulate.SampleConfig{})
			for range 64 {
				s.ObserveRequest(&telemetry.Record{Method: "GET", Host: "a.test", Path: "/"})
			}
			assert.Positive(t, s.Len())
		},
		"simulate.Sample": func(t *testing.T) {
			var s simulate.Sample
			s.ObserveRequest(&telemetry.Record{Method: "GET", Host: "a.test", Path: "/"})
			assert.Zero(t, s.Len())
			assert.Empty(t, s.Probes())
		},
		"simulate.Target": func(t *testing.T) {
			_, err := simulate.Run(simulate.Target{}, simulate.Probe{URL: "http://a.test/"})
			refused(t, err)
			assert.ErrorContains(t, err, simulate.CodeTargetNone)
		},
		"simulate.Probe": func(t *testing.T) {
			_, err := simulate.Run(simulate.DraftTarget(&config.Document{}), simulate.Probe{})
			refused(t, err)
			assert.ErrorContains(t, err, simulate.CodeProbeURLInvalid)
		},
		"simulate.Tester": func(t *testing.T) {
			assert.Contains(t, docOf(t, "simulate", "Tester"), "NewTester")
		},

		// snapshot
		"snapshot.PublisherConfig": func(t *testing.T) {
			p := snapshot.NewPublisher(snapshot.PublisherConfig{})
			defer p.Close()
			o, err := p.PublishData([]byte("hosts: [{names: [a.test], kind: fixed, fixed: {body: ok}}]\n")).Wait(context.Background())
			require.NoError(t, err)
			require.Equal(t, snapshot.Applied, o.Status, "%v", o.Errors)
			w := httptest.NewRecorder()
			p.Store().ServeHTTP(w, req())
			assert.Equal(t, "ok", w.Body.String(), "the publisher's own store serves")
		},
		"snapshot.Publisher": func(t *testing.T) {
			var p snapshot.Publisher
			for _, r := range []*snapshot.Revision{p.PublishData([]byte("{}")), p.Publish(&config.Document{}), p.RefreshTLS(), p.PublishPrepared(&snapshot.Prepared{})} {
				o, err := r.Wait(context.Background())
				require.NoError(t, err, "an outcome at once")
				assert.Equal(t, snapshot.Refused, o.Status)
				require.Len(t, o.Errors, 1)
				assert.Equal(t, snapshot.CodePublisherZero, o.Errors[0].Code)
			}
			p.Flush()
			assert.NoError(t, p.Close())
			assert.Nil(t, p.Store())
			assert.Empty(t, p.History())
		},
		"snapshot.Compiler": func(t *testing.T) {
			var c snapshot.Compiler
			assert.Empty(t, c.Check(&config.Document{}))
			_, err := c.Draft(&config.Document{})
			assert.NoError(t, err)
		},
		"snapshot.Store": func(t *testing.T) {
			w := httptest.NewRecorder()
			new(snapshot.Store).ServeHTTP(w, req())
			assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		},
		"snapshot.Snapshot": func(t *testing.T) {
			w := httptest.NewRecorder()
			new(snapshot.Snapshot).ServeHTTP(w, req())
			assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		},
		"snapshot.Prepared": func(t *testing.T) {
			p := snapshot.NewPublisher(snapshot.PublisherConfig{})
			defer p.Close()
			o, err := p.PublishPrepared(&snapshot.Prepared{}).Wait(context.Background())
			require.NoError(t, err)
			assert.Equal(t, snapshot.Refused, o.Status)
			require.NotEmpty(t, o.Errors)
			assert.Equal(t, config.CodeDocumentEmpty, o.Errors[0].Code)
		},
		"snapshot.Revision": func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := new(snapshot.Revision).Wait(ctx)
			assert.ErrorIs(t, err, context.Canceled)
		},

		// source
		"source.FileConfig": func(t *testing.T) {
			_, err := source.NewFile(source.FileConfig{})
			refused(t, err)
			assert.ErrorContains(t, err, source.CodePathMissing)
		},
		"source.File": func(t *testing.T) {
			var f source.File
			_, err := f.Load(context.Background())
			assert.ErrorIs(t, err, source.ErrNotNew)
			refused(t, err)
			assert.ErrorIs(t, f.Run(context.Background(), nil), source.ErrNotNew)
			_, err = f.Save(context.Background(), source.Push{})
			assert.ErrorIs(t, err, source.ErrNotNew)
			f.Reload()
		},

		// telemetry
		"telemetry.AccessLogConfig": func(t *testing.T) {
			a := telemetry.NewAccessLog(telemetry.AccessLogConfig{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			a.ObserveRequest(&telemetry.Record{Status: 200})
			assert.NoError(t, a.Close())
			assert.EqualValues(t, 1, a.Stats().Written)
		},
		"telemetry.AccessLog": func(t *testing.T) {
			var a telemetry.AccessLog
			a.ObserveRequest(&telemetry.Record{Status: 200})
			assert.EqualValues(t, 1, a.Stats().Dropped, "no writer: dropped and counted")
			assert.NoError(t, a.Close())
		},
		"telemetry.Histogram": func(t *testing.T) {
			var h telemetry.Histogram
			h.Observe(time.Millisecond)
			v := h.Load()
			assert.EqualValues(t, 1, v.Count())
		},
		"telemetry.Counter": func(t *testing.T) { var c telemetry.Counter; c.Inc(); assert.EqualValues(t, 1, c.Load()) },
		"telemetry.Gauge":   func(t *testing.T) { var g telemetry.Gauge; g.Add(2); assert.EqualValues(t, 2, g.Load()) },
		"telemetry.Codes":   func(t *testing.T) { var c telemetry.Codes; c.Inc(200); assert.EqualValues(t, 1, c.Load(200)) },

		// tlsselect
		"tlsselect.Config": func(t *testing.T) {
			table, err := tlsselect.New(tlsselect.Config{})
			require.NoError(t, err)
			assert.Equal(t, tlsselect.MatchRefused, table.Select("a.test", tlsselect.TCP).Match, "refuses every handshake")
		},
		"tlsselect.TicketSecrets": func(t *testing.T) {
			var zero tlsselect.TicketSecrets
			_, err := tlsselect.New(tlsselect.Config{TicketSecrets: &zero})
			var ve *tlsselect.ValidationError
			require.ErrorAs(t, err, &ve, "a config naming the zero TicketSecrets is refused")
			assert.Equal(t, tlsselect.CodeTicketSecretsEmpty, ve.Code)
			require.NoError(t, zero.Set(make([]byte, tlsselect.MinTicketSecretLen), nil), "Set fills the zero value")
			_, err = tlsselect.New(tlsselect.Config{TicketSecrets: &zero})
			assert.NoError(t, err)
		},
		"tlsselect.Table": func(t *testing.T) {
			s := tlsselect.NewSelector(&tlsselect.Table{})
			_, err := s.GetConfigForClient(&tlsHello)
			assert.ErrorIs(t, err, tlsselect.ErrNoTable)
		},
		"tlsselect.Selection": func(t *testing.T) {
			var s tlsselect.Selection
			assert.Equal(t, tlsselect.MatchRefused, s.Match)
		},
		"tlsselect.Selector": func(t *testing.T) {
			var s tlsselect.Selector
			_, err := s.GetConfigForClient(&tlsHello)
			assert.ErrorIs(t, err, tlsselect.ErrNoTable)
		},
		"tlsselect.ACMEConfig": func(t *testing.T) {
			_, err := tlsselect.NewACME(tlsselect.ACMEConfig{})
			refused(t, err)
		},
		"tlsselect.ACME": func(t *testing.T) {
			var m tlsselect.ACME
			assert.ErrorIs(t, m.Start(context.Background()), tlsselect.ErrACMENotNew)
			_, err := m.Certificate(tlsselect.SourceRequest{ID: "a", Names: []string{"a.test"}})
			assert.ErrorIs(t, err, tlsselect.ErrACMENotNew)
			refused(t, err)
			assert.Empty(t, m.Stats().Certificates)
			assert.NoError(t, m.Close())
		},

		// upstream
		"upstream.ClusterConfig": func(t *testing.T) {
			assert.NoError(t, upstream.ClusterConfig{}.Validate())
			var r upstream.Registry
			r.Plan([]upstream.ClusterConfig{{}}).Commit()
			assert.Empty(t, r.Cluster("").Members().All)
		},
		"upstream.DestinationConfig": func(t *testing.T) {
			_, err := upstream.NewCluster("c", []upstream.DestinationConfig{{}})
			refused(t, err)
			assert.Len(t, problemsOf(err), 3, "ID, scheme and host")
		},
		"upstream.Registry": func(t *testing.T) {
			var r upstream.Registry
			assert.Nil(t, r.Cluster("c"))
		},
		"upstream.Cluster": func(t *testing.T) {
			var c upstream.Cluster
			assert.Nil(t, c.Members(), "no members view: proxy's CheckTarget refuses it")
		},
		"upstream.Destination": func(t *testing.T) {
			assert.Contains(t, docOf(t, "upstream", "Destination"), "NewCluster")
		},
		"upstream.Plan": func(t *testing.T) {
			assert.Contains(t, docOf(t, "upstream", "Plan"), "Registry.Plan")
		},
	}
}

// zeroPolicy proves that gate.New refuses a built-in policy its
// constructor did not make.
func zeroPolicy(p gate.Policy) func(t *testing.T) {
	return func(t *testing.T) {
		_, err := gate.New(gate.Config{Hosts: []gate.Host{{Names: []string{"a.test"}, Kind: gate.HostFixed,
			Policies: []gate.PolicyUse{{Policy: p}}}}})
		refused(t, err)
		assert.Equal(t, []string{gate.CodeChainPolicyMissing + " hosts[0].policies[0]"}, codePaths(err))
	}
}

// docOf returns the doc comment of an exported type of a package.
func docOf(t *testing.T, pkg, typ string) string {
	t.Helper()
	e := libraryTypes(t)[pkg+"."+typ]
	require.NotNil(t, e, "%s.%s", pkg, typ)
	return e.doc
}

func problemsOf(err error) []*config.ValidationError {
	var out []*config.ValidationError
	var walk func(error)
	walk = func(err error) {
		var p *config.ValidationError
		switch e := err.(type) {
		case nil:
		case interface{ Unwrap() []error }:
			for _, inner := range e.Unwrap() {
				walk(inner)
			}
		default:
			if errors.As(err, &p) {
				out = append(out, p)
			}
		}
	}
	walk(err)
	return out
}

func codePaths(err error) []string {
	var out []string
	for _, p := range problemsOf(err) {
		out = append(out, p.Code+" "+p.Path)
	}
	return out
}
