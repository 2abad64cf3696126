package gate

import (
	"log/slog"
	"net/http"
	"net/netip"
	"testing"

	"github.com/paduraksa/paduraksa/telemetry"
)

// BenchmarkGateDecide is a forwarded keep-alive request through a host
// with an allow list, a rule set and a rate limit. "conn-info" is the
// production wiring (http.Server.ConnContext = ConnContext: the peer is
// parsed once per connection); "remote-addr" parses r.RemoteAddr per
// request. "50-routes" is conn-info on the same host with the 50 routes
// of manyRoutes, method and header matches, in place of its two: the
// request goes to a canary route, one of 50, by its header.
func BenchmarkGateDecide(b *testing.B) {
	nop := TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {})
	g := benchGate(b, nop)
	many := benchGateMany(b, nop)
	r := readRequest(b, "GET /api/users?id=1 HTTP/1.1\r\nHost: App.Example:8080\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n", "192.0.2.10:5000")
	withConn := r.WithContext(WithConnInfo(r.Context(), &ConnInfo{Peer: netip.MustParseAddrPort(r.RemoteAddr)}))
	canary := readRequest(b, "GET /svc17/users?id=1 HTTP/1.1\r\nHost: App.Example:8080\r\nUser-Agent: curl/8\r\nAccept: */*\r\nX-Canary: 1\r\n\r\n", "192.0.2.10:5000")
	canary = canary.WithContext(WithConnInfo(canary.Context(), &ConnInfo{Peer: netip.MustParseAddrPort(r.RemoteAddr)}))
	for _, bc := range []struct {
		name string
		g    *Gate
		r    *http.Request
	}{{"conn-info", g, withConn}, {"remote-addr", g, r}, {"50-routes", many, canary}} {
		g := bc.g
		b.Run(bc.name, func(b *testing.B) {
			w := newNopWriter()
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				g.ServeHTTP(w, bc.r)
			}
			if w.status != 0 {
				b.Fatalf("status %d", w.status)
			}
		})
	}
}

// BenchmarkGateDecideTraced is the same decision with a tracer that does
// nothing: the difference to BenchmarkGateDecide is what building and
// passing steps costs, which a nil tracer does not pay.
func BenchmarkGateDecideTraced(b *testing.B) {
	g := benchGate(b, TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {}))
	g.tracer = &Tracer{OnStep: func(Step) {}}
	r := readRequest(b, "GET /api/users?id=1 HTTP/1.1\r\nHost: App.Example:8080\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n", "192.0.2.10:5000")
	w := newNopWriter()
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		g.ServeHTTP(w, r)
	}
}

func BenchmarkHostLookup(b *testing.B) {
	g := benchGate(b, &forwarded{})
	for _, host := range []string{"App.Example:8080", "deep.Sub.APP.example:443", "nope.example"} {
		b.Run(host, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g.Lookup(host)
			}
		})
	}
}

// BenchmarkGateDecideObserved is BenchmarkGateDecide with an observer
// that does nothing ("observer") and with a real access log whose writer
// discards ("access-log"): the difference is what the record hand-over
// costs the request.
func BenchmarkGateDecideObserved(b *testing.B) {
	r := readRequest(b, "GET /api/users?id=1 HTTP/1.1\r\nHost: App.Example:8080\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n", "192.0.2.10:5000")
	r = r.WithContext(WithConnInfo(r.Context(), &ConnInfo{Peer: netip.MustParseAddrPort(r.RemoteAddr)}))
	log := telemetry.NewAccessLog(telemetry.AccessLogConfig{Logger: slog.New(slog.DiscardHandler)})
	defer log.Close()
	for _, bc := range []struct {
		name string
		obs  telemetry.Observer
	}{{"observer", nopObserver{}}, {"access-log", log}} {
		b.Run(bc.name, func(b *testing.B) {
			g := benchGate(b, TargetFunc(func(w http.ResponseWriter, r *http.Request, rq *Request) {}))
			g.observer = bc.obs
			w := newNopWriter()
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				g.ServeHTTP(w, r)
			}
		})
	}
}

// BenchmarkRuleSet is a rule set's decision for a request that no rule
// matches: "paths" holds path and method rules only, which need no header;
// "user-agent" adds a rule on User-Agent, which looks the header up once.
func BenchmarkRuleSet(b *testing.B) {
	paths := []Rule{{PathPrefix: "/wp-", Action: RuleDeny}, {PathExact: "/admin", Methods: []string{"DELETE"}, Action: RuleDeny}}
	r := readRequest(b, "GET /api/users?id=1 HTTP/1.1\r\nHost: app.example\r\nUser-Agent: curl/8\r\nAccept: */*\r\n\r\n", "192.0.2.10:5000")
	rq := &Request{Path: "/api/users"}
	for _, bc := range []struct {
		name  string
		rules []Rule
	}{{"paths", paths}, {"user-agent", append(paths, Rule{UserAgentContains: "badbot", Action: RuleDeny})}} {
		rs, err := NewRuleSet(RuleSetConfig{ID: "waf", Rules: bc.rules})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if rs.Evaluate(r, rq).Verdict != Continue {
					b.Fatal("a rule matched")
				}
			}
		})
	}
}
