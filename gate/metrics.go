package gate

import (
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/telemetry"
)

// Labels of the metrics that no host or route of the config names.
const (
	// UnknownHost labels the requests for names no host has: one label
	// value, whatever the clients send.
	UnknownHost = "(unknown)"
	// NoRoute labels a host's requests that matched none of its routes,
	// and every request of a redirect or fixed host.
	NoRoute = "(none)"
)

// RouteMetrics are the counters of one route, or of a host's requests
// outside its routes ([NoRoute]). They live in the [State], keyed by the
// host's first name and the route's ID (its prefix when it has none), so
// they survive publishes that keep the route; a Gate walks the ones its
// config names with [Gate.EachRoute]. Every field is lock-free. The
// zero value is a route that counted nothing yet, ready for use.
type RouteMetrics struct {
	// Requests counts finished requests by status; 0 (dropped without an
	// answer) counts as a 5xx.
	Requests telemetry.Codes
	// Duration is from the start of the decision to the end of the
	// answer; Gate to the hand-over to the route's target.
	Duration, Gate telemetry.Histogram
	// BytesIn and BytesOut count request and response body bytes.
	BytesIn, BytesOut telemetry.Counter
	// InFlight is the number of requests being answered now.
	InFlight telemetry.Gauge

	kept uint64 // the State's last RetainMetrics that kept it; under its mu
}

// PolicyMetrics count one policy's decisions, by policy ID, across every
// host and route that uses it. A simulated request counts nothing. The
// zero value is a policy that counted nothing yet, ready for use.
type PolicyMetrics struct {
	// Allowed counts decisions to continue; Blocked the enforced
	// decisions that answered or dropped the request; WouldBlock those
	// of a shadowed use that would have.
	Allowed, Blocked, WouldBlock telemetry.Counter

	kept uint64 // as RouteMetrics.kept
}

type routeKey struct{ host, route string }

// routeMetrics returns the metrics of (host, route), made on first use.
func (s *State) routeMetrics(host, route string) *RouteMetrics {
	k := routeKey{host, route}
	if m := s.routes[k]; m != nil {
		return m
	}
	m := new(RouteMetrics)
	if s.routes == nil {
		s.routes = map[routeKey]*RouteMetrics{}
	}
	s.routes[k] = m
	return m
}

func (s *State) policyMetrics(id string) *PolicyMetrics {
	if m := s.policies[id]; m != nil {
		return m
	}
	m := new(PolicyMetrics)
	if s.policies == nil {
		s.policies = map[string]*PolicyMetrics{}
	}
	s.policies[id] = m
	return m
}

// attachMetrics points the gate, its new hosts, their routes and their
// policy uses at their metrics in the State. Hosts reused from an earlier
// gate keep theirs.
func (g *Gate) attachMetrics(hosts []*Host) {
	s := g.state
	s.mu.Lock()
	defer s.mu.Unlock()
	g.unknown = s.routeMetrics(UnknownHost, "")
	for _, h := range hosts {
		h.metrics = s.routeMetrics(h.firstName, NoRoute)
		s.attachChain(&h.chain, h.firstName, NoRoute)
		for i := range h.Routes {
			rt := &h.Routes[i]
			rt.metrics = s.routeMetrics(h.firstName, RouteLabel(rt))
			s.attachChain(&rt.chain, h.firstName, RouteLabel(rt))
		}
	}
}

func (s *State) attachChain(c *chain, host, route string) {
	if len(c.uses) == 0 {
		return
	}
	c.metrics = make([]*PolicyMetrics, len(c.uses))
	var ids []string
	key := host + "\x00" + route
	for i, u := range c.uses {
		id := u.Policy.ID()
		c.metrics[i] = s.policyMetrics(id)
		if u.Mode != Off {
			ids = append(ids, id)
			key += "\x00" + id
		}
	}
	if len(ids) < 2 {
		return // one use: its own count is as cheap
	}
	p := s.chains[key]
	if p == nil {
		p = &chainPasses{ids: ids}
		if s.chains == nil {
			s.chains = map[string]*chainPasses{}
		}
		s.chains[key] = p
	}
	c.passes = p
}

// chainPasses counts the requests for which every policy of a chain
// decided to continue: one count for the chain, in place of one for each
// of its policies. [Gate.EachPolicy] adds them to each policy's Allowed.
// They live in the State, keyed by the chain's host, route and policies,
// so they survive publishes that keep the chain.
type chainPasses struct {
	n    telemetry.Counter
	ids  []string // of the uses not Off, in order (an ID may repeat)
	kept uint64   // as RouteMetrics.kept
}

// passesByPolicy returns each policy ID's share of the chains' passes.
func (s *State) passesByPolicy() map[string]uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]uint64, len(s.policies))
	for _, p := range s.chains {
		n := p.n.Load()
		for _, id := range p.ids {
			m[id] += n
		}
	}
	return m
}

// RouteLabel is the route's label in metrics and the access log: its ID,
// else its prefix ("/" for the root).
func RouteLabel(rt *Route) string {
	if rt.ID != "" {
		return rt.ID
	}
	if rt.Prefix == "" {
		return "/"
	}
	return rt.Prefix
}

// EachRoute calls f for the metrics of every host and route of the gate's
// config, then for [UnknownHost]. host is the host's first name, route
// the [RouteLabel] or [NoRoute]. A scrape walks the current gate, so a
// host or route a publish removed is no longer reported.
func (g *Gate) EachRoute(f func(host, route string, m *RouteMetrics)) {
	for _, h := range g.compiled {
		f(h.firstName, NoRoute, h.metrics)
		for i := range h.Routes {
			rt := &h.Routes[i]
			f(h.firstName, RouteLabel(rt), rt.metrics)
		}
	}
	f(UnknownHost, "", g.unknown)
}

// EachPolicy calls f once for every policy ID the gate's chains use, with
// the policy's counts as they are at the call: Allowed holds the passes
// of the chains that count a pass once for all their policies.
func (g *Gate) EachPolicy(f func(id string, m *PolicyMetrics)) {
	passes := g.state.passesByPolicy()
	g.eachPolicy(func(id string, m *PolicyMetrics) {
		var c PolicyMetrics
		c.Allowed.Add(m.Allowed.Load() + passes[id])
		c.Blocked.Add(m.Blocked.Load())
		c.WouldBlock.Add(m.WouldBlock.Load())
		f(id, &c)
	})
}

// eachPolicy calls f once for every policy's live metrics.
func (g *Gate) eachPolicy(f func(id string, m *PolicyMetrics)) {
	seen := map[*PolicyMetrics]bool{}
	each := func(c *chain) {
		for i, m := range c.metrics {
			if !seen[m] {
				seen[m] = true
				f(c.uses[i].Policy.ID(), m)
			}
		}
	}
	for _, h := range g.compiled {
		each(&h.chain)
		for i := range h.Routes {
			each(&h.Routes[i].chain)
		}
	}
}

// RetainMetrics forgets the metrics of the hosts, routes and policies g
// does not name, so a State serving a changing config holds no more than
// its current one. Call it once g serves (a gate still serving the older
// config keeps counting on what it points at, unreported).
func (s *State) RetainMetrics(g *Gate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Mark what g names with a number of this call's own, then sweep
	// what is unmarked: no set of what to keep is built.
	s.retains++
	gen := s.retains
	keepChain := func(c *chain) {
		for _, m := range c.metrics {
			m.kept = gen
		}
		if c.passes != nil {
			c.passes.kept = gen
		}
	}
	if g.unknown != nil {
		g.unknown.kept = gen
	}
	for _, h := range g.compiled {
		if h.metrics != nil {
			h.metrics.kept = gen
		}
		keepChain(&h.chain)
		for i := range h.Routes {
			if m := h.Routes[i].metrics; m != nil {
				m.kept = gen
			}
			keepChain(&h.Routes[i].chain)
		}
	}
	for k, m := range s.routes {
		if m.kept != gen {
			delete(s.routes, k)
		}
	}
	for k, p := range s.chains {
		if p.kept == gen {
			continue
		}
		// A chain g does not have: its passes move to its policies'
		// own counts, so no policy's Allowed goes back.
		n := p.n.Load()
		for _, id := range p.ids {
			if m := s.policies[id]; m != nil {
				m.Allowed.Add(n)
			}
		}
		delete(s.chains, k)
	}
	for k, m := range s.policies {
		if m.kept != gen {
			delete(s.policies, k)
		}
	}
}

// count records a policy's decision in its metrics.
func (c *chain) count(i int, d Decision, shadow bool) {
	if c.metrics == nil {
		return
	}
	m := c.metrics[i]
	switch {
	case d.Verdict == Continue:
		m.Allowed.Inc()
	case shadow:
		m.WouldBlock.Inc()
	default:
		m.Blocked.Inc()
	}
}

// countAllowed counts the uses before i, which all continued, one by one:
// the chain will not pass whole.
func (c *chain) countAllowed(i int) {
	for j := range i {
		if c.uses[j].Mode != Off {
			c.metrics[j].Allowed.Inc()
		}
	}
}

// recorder is the ResponseWriter the gate hands on: it notes the status
// and the body bytes of the answer, whoever writes it. It lives in the
// pooled [Request]; Unwrap lets [http.ResponseController] reach the
// connection's writer for flushes, deadlines and hijacks.
type recorder struct {
	w      http.ResponseWriter
	status int
	bytes  int64
}

func (rw *recorder) Header() http.Header { return rw.w.Header() }

func (rw *recorder) WriteHeader(status int) {
	if rw.status == 0 || (rw.status < 200 && status >= 100) {
		// 1xx answers come before the final one.
		rw.status = status
	}
	rw.w.WriteHeader(status)
}

func (rw *recorder) Write(p []byte) (int, error) {
	if rw.status == 0 || rw.status < 200 {
		rw.status = http.StatusOK
	}
	n, err := rw.w.Write(p)
	rw.bytes += int64(n)
	return n, err
}

// WriteString spares a target's io.WriteString the copy to []byte.
func (rw *recorder) WriteString(s string) (int, error) {
	if rw.status == 0 || rw.status < 200 {
		rw.status = http.StatusOK
	}
	n, err := io.WriteString(rw.w, s)
	rw.bytes += int64(n)
	return n, err
}

// Flush is here because code that type-asserts http.Flusher (rather than
// using a ResponseController) would otherwise lose its flushes.
func (rw *recorder) Flush() { http.NewResponseController(rw.w).Flush() }

// Unwrap returns the connection's ResponseWriter.
func (rw *recorder) Unwrap() http.ResponseWriter { return rw.w }

// epoch is the origin of the gate's monotonic clock: a request's times are
// offsets from it, one monotonic clock read each (time.Now reads the wall
// clock too, and costs twice as much).
var epoch = time.Now()

func sinceEpoch() time.Duration { return time.Since(epoch) }

// Elapsed returns the time since the gate began deciding the request (one
// monotonic clock read). A target uses it to time its stages: the
// forwarder sets Record.Gate to it when it first sends upstream, and
// Record.TTFB from there to the response header.
func (rq *Request) Elapsed() time.Duration { return sinceEpoch() - rq.start }

// Start returns when the gate began deciding the request, with the
// monotonic clock reading (time.Since of it is one clock read): what a
// target's request timeout counts from. It is the zero Time for a Request
// no gate started (one a test made by hand).
func (rq *Request) Start() time.Time {
	if rq.start == 0 {
		return time.Time{}
	}
	return epoch.Add(rq.start)
}

// sentPath is the request target as the client sent it, without the
// query: what a log must show, since r.URL.Path is decoded ("/%2e%2e/x"
// reads "/../x", "%0a" a line break). No allocation.
func sentPath(r *http.Request) string {
	if r.RequestURI == "" {
		return r.URL.EscapedPath() // a request made in the process
	}
	p, _, _ := strings.Cut(r.RequestURI, "?")
	return p
}

// finish completes the request's record, counts it in its metrics, hands
// it to the observers and releases the request. It runs deferred, also
// when the handler panics (a drop or an abort: http.ErrAbortHandler).
func (g *Gate) finish(rq *Request, r *http.Request) {
	defer g.release(rq)
	rec := &rq.Record
	rec.Duration = sinceEpoch() - rq.start
	switch {
	case rec.Status != 0: // set by the target (499 for a client gone)
	case rq.rw.status != 0:
		rec.Status = rq.rw.status
	case rq.returned:
		rec.Status = http.StatusOK // net/http answers 200 for a silent handler
	case rec.Error == "":
		rec.Error = "dropped"
	}
	rec.BytesOut = rq.rw.bytes
	m := rq.metrics
	if rq.inFlight {
		m.InFlight.Add(-1)
	}
	m.Requests.Inc(rec.Status)
	m.Duration.Observe(rec.Duration)
	if rec.Gate != 0 {
		m.Gate.Observe(rec.Gate)
	}
	// An atomic add costs as much as a clock read: none for a count that
	// does not move (no body either way, the gate's answers to HEAD).
	if rec.BytesIn != 0 {
		m.BytesIn.Add(uint64(rec.BytesIn))
	}
	if rec.BytesOut != 0 {
		m.BytesOut.Add(uint64(rec.BytesOut))
	}
	if g.observer == nil && g.accessLog == nil {
		return
	}
	rec.Start = epoch.Add(rq.start)
	rec.Client, rec.Peer = rq.Client, rq.Peer
	rec.Method, rec.Host, rec.Path, rec.Proto = r.Method, r.Host, sentPath(r), r.Proto
	if r.TLS != nil {
		rec.TLSVersion, rec.SNI = r.TLS.Version, r.TLS.ServerName
	} else if c := rq.Conn; c != nil {
		rec.TLSVersion = c.TLSVersion
	}
	if h := rq.Host; h != nil {
		rec.HostID = h.firstName
		if rt := rq.Route; rt != nil {
			rec.RouteID = RouteLabel(rt)
		}
	}
	if g.observer != nil {
		g.observer.ObserveRequest(rec)
	}
	if g.accessLog != nil && (rq.Host == nil || !rq.Host.NoAccessLog) {
		g.accessLog.ObserveRequest(rec)
	}
}
