package admin

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/paduraksa/paduraksa/connlimit"
	"github.com/paduraksa/paduraksa/edge"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/snapshot"
	"github.com/paduraksa/paduraksa/telemetry"
	"github.com/paduraksa/paduraksa/upstream"
)

// MetricsConfig says where a [Metrics] reads; each source adds its
// series. The zero value collects the Go runtime's metrics alone: without
// a Store there is no gateway to count.
type MetricsConfig struct {
	// Store is the live snapshot: the host, route, policy, upstream,
	// destination and health series come from the snapshot it serves at
	// the time of the scrape, so a publish that removes a host or a
	// destination removes its series.
	Store *snapshot.Store
	// Publisher adds the publish outcomes, the last applied revision and
	// the apply durations.
	Publisher *snapshot.Publisher
	// Edge adds the open connections, TLS handshake failures, PROXY
	// refusals and the deny-list and per-address refusals of its limiter.
	Edge *edge.Server
	// AccessLog adds the access log's written, dropped and sampled-out
	// records.
	AccessLog *telemetry.AccessLog
	// Engines adds the reachability of the engines the instance depends
	// on (etcd, Redis), as GET /healthz reports it.
	Engines func() []Engine
}

// Metrics is a prometheus.Collector of the gateway's own lock-free
// counters: a scrape reads them, nothing is copied per request. Register
// it in an embedder's registry, or serve it with [Metrics.Handler]. The
// zero Metrics is NewMetrics of the zero MetricsConfig: the Go runtime's
// metrics and nothing of a gateway.
type Metrics struct {
	cfg MetricsConfig
}

// NewMetrics returns the collector of cfg's sources.
func NewMetrics(cfg MetricsConfig) *Metrics { return &Metrics{cfg: cfg} }

// Handler serves the metrics, the Go runtime's and the process's in the
// Prometheus text format, or OpenMetrics when the scraper asks for it.
// Each scrape renders every series of the snapshot, so at most
// [MaxScrapes] render at once; one beyond is answered 503 with
// Retry-After at once, never queued (a burst of scrapers costs the
// gateway two renders, not one each). Each Handler counts its own.
func (m *Metrics) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return &scrapes{
		next: promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError}),
		sem:  make(chan struct{}, MaxScrapes),
	}
}

// MaxScrapes bounds the scrapes a [Metrics.Handler] renders at once.
const MaxScrapes = 2

// scrapes serves next to at most cap(sem) requests at once.
type scrapes struct {
	next http.Handler
	sem  chan struct{}
}

func (s *scrapes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
		s.next.ServeHTTP(w, r)
	default:
		w.Header().Set("Retry-After", "1")
		http.Error(w, "admin: "+strconv.Itoa(MaxScrapes)+" scrapes are rendering, the most at once; try again", http.StatusServiceUnavailable)
	}
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("paduraksa_"+name, help, labels, nil)
}

// The series. Label sets are bounded by the config: hosts by their first
// name (gate.UnknownHost for every name the config lacks), routes by ID
// or prefix (gate.NoRoute outside them), codes as telemetry.Codes counts
// them, upstreams and destinations by ID, outcomes by upstream.OutcomeNames.
var (
	dRequests    = desc("requests_total", "Requests answered, by host, route and status code (rare codes by class, 0: dropped).", "host", "route", "code")
	dDuration    = desc("request_duration_seconds", "Time from the start of the decision to the end of the answer.", "host", "route")
	dGate        = desc("gate_duration_seconds", "Time from the start of the decision to the first send upstream.", "host", "route")
	dBytesIn     = desc("request_body_bytes_total", "Request body bytes read.", "host", "route")
	dBytesOut    = desc("response_body_bytes_total", "Response body bytes written.", "host", "route")
	dInFlight    = desc("requests_in_flight", "Requests handed to a route's target and not finished.", "host", "route")
	dPolicy      = desc("policy_decisions_total", "Policy decisions by policy ID: allowed, blocked, or wouldBlock (a shadowed use).", "policy", "decision")
	dGateCounter = desc("gate_events_total", "The gate's own events: headerFallback, cloudflarePlainHTTP, rateLimitTableFull, rateLimitStoreFallback, dropped, passwordChecksRefused.", "event")

	dUpRequests = desc("upstream_requests_total", "Forwarded requests by upstream and how they ended (client-side ends included).", "upstream", "outcome")
	dUpRetries  = desc("upstream_retries_total", "Retried attempts by upstream.", "upstream")
	dFallbacks  = desc("upstream_http1_fallbacks_total", "Attempts of an upstream whose HTTP/1.1 client is the direct one sent with net/http's instead, by reason (proxy.HTTP1FallbackNames: upgrade, expectContinue, trailers, unknownLength).", "upstream", "reason")
	dExchanges  = desc("destination_exchanges_total", "Attempts sent to a destination, by how each ended.", "upstream", "destination", "outcome")
	dTTFB       = desc("destination_ttfb_seconds", "Time from sending to a destination to its response header.", "upstream", "destination")
	dDestFlight = desc("destination_in_flight", "Requests in flight to a destination.", "upstream", "destination")
	dAvailable  = desc("destination_available", "1 when the destination takes new requests, else 0.", "upstream", "destination")
	dHealth     = desc("destination_health", "1 for the destination's current verdict (unknown, healthy, unhealthy) of each check, else 0.", "upstream", "destination", "check", "state")
	dChanges    = desc("destination_health_changes_total", "Changes of either health verdict, ejections and returns included.", "upstream", "destination")
	dProbe      = desc("destination_probe_duration_seconds", "Duration of the active health probes.", "upstream", "destination")
	dProbeFail  = desc("destination_probe_failures_total", "Active health probes that failed.", "upstream", "destination")
	dPanic      = desc("upstream_panic", "1 when no destination is healthy and the availability policy sends to all of them.", "upstream")

	dSplit        = desc("route_backend_requests_total", "Requests a route with backends sent to each backend's upstream, by why: weight, sticky (the key's hash), forced (a force rule), or fallback (the chosen side had no available destination).", "host", "route", "upstream", "reason")
	dMirror       = desc("route_mirror_total", "Requests of a route sampled for mirroring, by what became of the copy: sent, dropped (maxInFlight copies in flight), tooLarge (the body over maxBodyBytes) or incomplete (the client's body did not end).", "host", "route", "result")
	dMirrorOut    = desc("route_mirror_responses_total", "Mirrored copies sent, by how they ended at the mirror's upstream (upstream outcomes, or noDestination when none was available).", "host", "route", "outcome")
	dMirrorFlight = desc("route_mirror_in_flight", "Mirrored copies of a route in flight now.", "host", "route")

	dRevision   = desc("config_revision", "The revision of the snapshot serving.")
	dPublish    = desc("config_publishes_total", "Publishes by outcome: applied, unchanged, refused, superseded (by a later one before its turn) or stale (its If-Match revision was not serving).", "outcome")
	dApply      = desc("config_last_apply_seconds", "How long the last applied publish took, from document to serving snapshot.")
	dApplySum   = desc("config_apply_seconds_total", "Time spent applying publishes, all applied ones together (divide by config_applies_total).")
	dApplyTotal = desc("config_applies_total", "Applied publishes, the count config_apply_seconds_total is over.")

	dOpen      = desc("connections_open", "Connections open now, by listener, parked ones included.", "listener")
	dParked    = desc("connections_parked", "Idle HTTP/1.1 keep-alive connections parked now, holding no server goroutine.")
	dRefused   = desc("connections_refused_total", "Connections refused before any request, by stage and reason.", "stage", "reason")
	dHandshake = desc("tls_handshake_failures_total", "TLS handshakes over TCP that failed.")
	dTLSDef    = desc("tls_default_certificate_total", "Handshakes served the default certificate, by reason (noSni, unknownSni).", "reason")

	dAccessLog = desc("access_log_records_total", "Access log records by result: written, dropped (buffer full) or sampledOut.", "result")

	dEngineUp    = desc("engine_reachable", "1 while an engine the instance depends on (etcd, redis) answers, else 0; the instance serves either way.", "engine")
	dEngineSince = desc("engine_reachable_changed_timestamp_seconds", "When the engine's reachability last changed (Unix time); absent before it ever did.", "engine")
)

var allDescs = []*prometheus.Desc{
	dRequests, dDuration, dGate, dBytesIn, dBytesOut, dInFlight, dPolicy, dGateCounter,
	dSplit, dMirror, dMirrorOut, dMirrorFlight,
	dUpRequests, dUpRetries, dFallbacks, dExchanges, dTTFB, dDestFlight, dAvailable, dHealth, dChanges, dProbe, dProbeFail, dPanic,
	dRevision, dPublish, dApply, dApplySum, dApplyTotal, dOpen, dParked, dRefused, dHandshake, dTLSDef, dAccessLog,
	dLimit, dLimitTrips, dLimitNow, dEngineUp, dEngineSince,
}

// Describe sends every series' description.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
	for _, d := range ejectionDescs {
		ch <- d
	}
}

// Collect reads every counter once.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	c := collector{ch}
	if st := m.cfg.Store; st != nil {
		if s := st.Load(); s != nil {
			c.gauge(dRevision, float64(s.Revision()))
			c.gate(s.Gate())
			c.backends(s)
			c.clusters(s)
		}
		c.tls(st)
	}
	if p := m.cfg.Publisher; p != nil {
		s := p.Stats()
		c.counter(dPublish, s.Applied, "applied")
		c.counter(dPublish, s.Unchanged, "unchanged")
		c.counter(dPublish, s.Refused, "refused")
		c.counter(dPublish, s.Superseded, "superseded")
		c.counter(dPublish, s.Stale, "stale")
		c.gauge(dApply, s.LastApplyTook.Seconds())
		c.counter(dApplyTotal, uint64(s.Applied))
		c.ch <- prometheus.MustNewConstMetric(dApplySum, prometheus.CounterValue, s.ApplyTook.Seconds())
	}
	if e := m.cfg.Edge; e != nil {
		c.edge(e)
	}
	if a := m.cfg.AccessLog; a != nil {
		s := a.Stats()
		c.counter(dAccessLog, s.Written, "written")
		c.counter(dAccessLog, s.Dropped, "dropped")
		c.counter(dAccessLog, s.SampledOut, "sampledOut")
	}
	if m.cfg.Engines != nil {
		for _, e := range m.cfg.Engines() {
			up := 0.0
			if e.Reachable {
				up = 1
			}
			c.gauge(dEngineUp, up, e.Name)
			if !e.Since.IsZero() {
				c.gauge(dEngineSince, float64(e.Since.UnixNano())/1e9, e.Name)
			}
		}
	}
}

type collector struct{ ch chan<- prometheus.Metric }

func (c collector) counter(d *prometheus.Desc, v uint64, labels ...string) {
	c.ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
}

func (c collector) gauge(d *prometheus.Desc, v float64, labels ...string) {
	c.ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}

func (c collector) histogram(d *prometheus.Desc, h *telemetry.Histogram, labels ...string) {
	v := h.Load()
	buckets := make(map[float64]uint64, len(telemetry.Bounds))
	for i, b := range telemetry.Bounds {
		buckets[b] = v.Buckets[i]
	}
	c.ch <- prometheus.MustNewConstHistogram(d, v.Count(), v.Sum.Seconds(), buckets, labels...)
}

func (c collector) gate(g *gate.Gate) {
	g.EachRoute(func(host, route string, rm *gate.RouteMetrics) {
		rm.Requests.Each(func(code string, n uint64) { c.counter(dRequests, n, host, route, code) })
		c.histogram(dDuration, &rm.Duration, host, route)
		if route != gate.NoRoute && host != gate.UnknownHost {
			c.histogram(dGate, &rm.Gate, host, route)
			c.gauge(dInFlight, float64(rm.InFlight.Load()), host, route)
		}
		c.counter(dBytesIn, rm.BytesIn.Load(), host, route)
		c.counter(dBytesOut, rm.BytesOut.Load(), host, route)
	})
	g.EachPolicy(func(id string, pm *gate.PolicyMetrics) {
		c.counter(dPolicy, pm.Allowed.Load(), id, "allowed")
		c.counter(dPolicy, pm.Blocked.Load(), id, "blocked")
		c.counter(dPolicy, pm.WouldBlock.Load(), id, "wouldBlock")
	})
	gc := g.State().Counters()
	c.counter(dGateCounter, gc.HeaderFallback.Load(), "headerFallback")
	c.counter(dGateCounter, gc.CloudflarePlainHTTP.Load(), "cloudflarePlainHTTP")
	c.counter(dGateCounter, gc.RateLimitTableFull.Load(), "rateLimitTableFull")
	c.counter(dGateCounter, gc.RateLimitStoreFallback.Load(), "rateLimitStoreFallback")
	c.counter(dGateCounter, gc.Dropped.Load(), "dropped")
	c.counter(dGateCounter, gc.PasswordChecksRefused.Load(), "passwordChecksRefused")
}

// backends reads the counters of the routes' splits and mirrors.
func (c collector) backends(s *snapshot.Snapshot) {
	s.EachRouteTarget(func(host, route string, t gate.Target) {
		var m *proxy.Mirror
		switch t := t.(type) {
		case *proxy.Split:
			for _, sd := range t.Sides() {
				up := sd.Route.Cluster().Upstream.ID()
				for i, reason := range proxy.SplitReasonNames() {
					c.counter(dSplit, sd.Stats.Count(proxy.SplitReason(i)), host, route, up, reason)
				}
				m = sd.Route.Mirror()
			}
		case *proxy.Route:
			m = t.Mirror()
		}
		if m == nil {
			return
		}
		st := m.Stats()
		for i, result := range proxy.MirrorResultNames() {
			c.counter(dMirror, st.Count(proxy.MirrorResult(i+1)), host, route, result)
		}
		for i, name := range upstream.OutcomeNames() {
			c.counter(dMirrorOut, st.Outcome(upstream.Outcome(i)), host, route, name)
		}
		c.counter(dMirrorOut, st.NoDestination(), host, route, "noDestination")
		c.gauge(dMirrorFlight, float64(st.InFlight()), host, route)
	})
}

var healthStates = [...]upstream.HealthState{upstream.Unknown, upstream.Healthy, upstream.Unhealthy}

func (c collector) clusters(s *snapshot.Snapshot) {
	outcomes := upstream.OutcomeNames()
	for _, pc := range s.Clusters() {
		uc := pc.Upstream
		if uc == nil {
			continue
		}
		up := uc.ID()
		if st := pc.Stats; st != nil {
			for i, name := range outcomes {
				c.counter(dUpRequests, st.Count(upstream.Outcome(i)), up, name)
			}
			c.counter(dUpRetries, st.Retries(), up)
			c.connectRetries(st, up)
			for i, reason := range proxy.HTTP1FallbackNames() {
				c.counter(dFallbacks, st.HTTP1Fallbacks(proxy.HTTP1Fallback(i)), up, reason)
			}
		}
		c.limits(up, pc)
		mem := uc.Members()
		panicking := 0.0
		if mem.Panic {
			panicking = 1
		}
		c.gauge(dPanic, panicking, up)
		avail := make(map[*upstream.Destination]bool, len(mem.Available))
		for _, d := range mem.Available {
			avail[d] = true
		}
		for _, d := range mem.All {
			id := d.ID()
			dm := d.Metrics()
			for i, name := range outcomes {
				c.counter(dExchanges, dm.Outcomes[i].Load(), up, id, name)
			}
			c.histogram(dTTFB, &dm.TTFB, up, id)
			c.gauge(dDestFlight, float64(d.InFlight()), up, id)
			c.gauge(dAvailable, b2f(avail[d]), up, id)
			active, passive := d.ActiveHealth(), d.PassiveHealth()
			for _, hs := range healthStates {
				c.gauge(dHealth, b2f(active == hs), up, id, "active", hs.String())
				c.gauge(dHealth, b2f(passive == hs), up, id, "passive", hs.String())
			}
			c.counter(dChanges, dm.HealthChanges.Load(), up, id)
			c.histogram(dProbe, &dm.Probe, up, id)
			c.counter(dProbeFail, dm.ProbeFailures.Load(), up, id)
			c.ejections(d, up, id)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c collector) tls(st *snapshot.Store) {
	s := st.TLS().Stats()
	c.counter(dRefused, s.Refused.NoSNI, "tls", "noSni")
	c.counter(dRefused, s.Refused.UnknownSNI, "tls", "unknownSni")
	c.counter(dRefused, s.Refused.NoHTTP3, "tls", "noHttp3")
	c.counter(dRefused, s.Refused.Pending, "tls", "pending")
	c.counter(dRefused, s.NoTable, "tls", "noConfig")
	c.counter(dTLSDef, s.Defaulted.NoSNI, "noSni")
	c.counter(dTLSDef, s.Defaulted.UnknownSNI, "unknownSni")
}

func (c collector) edge(e *edge.Server) {
	s := e.Stats()
	for _, l := range []string{edge.ListenerHTTP, edge.ListenerHTTPS, edge.ListenerHTTP3} {
		if n, ok := s.Open[l]; ok {
			c.gauge(dOpen, float64(n), l)
		}
	}
	c.gauge(dParked, float64(s.Parked))
	c.counter(dHandshake, s.TLSHandshakeFailures)
	c.counter(dRefused, s.ProxyProtocol.Untrusted, "proxyProtocol", "untrusted")
	c.counter(dRefused, s.ProxyProtocol.Invalid, "proxyProtocol", "invalid")
	c.counter(dRefused, s.ProxyProtocol.Timeout, "proxyProtocol", "timeout")
	c.limiter(e.Limiter().Stats())
}

func (c collector) limiter(s connlimit.Stats) {
	c.counter(dRefused, s.DeniedTCP, "denyList", "tcp")
	c.counter(dRefused, s.DeniedQUIC, "denyList", "quic")
	c.counter(dRefused, s.OverCapTCP, "perAddress", "tcp")
	c.counter(dRefused, s.OverCapQUIC, "perAddress", "quic")
}
