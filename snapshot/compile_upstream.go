package snapshot

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/hostname"
	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/internal/strictdecode"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/upstream"
)

// compiledUpstream is what one upstream of the document compiles to. It
// depends only on the upstream's own block, the global block and the
// compiler, so a later compile reuses it whole while those are unchanged:
// the cluster keeps its policy instances (round-robin position, hash
// tables) and the publish skips the upstream's mapping.
type compiledUpstream struct {
	canon    []byte // the upstream's canonical bytes
	cfg      upstream.ClusterConfig
	client   proxy.ClientConfig
	health   health.Config
	observe  bool // passive health on: the forwarder reports outcomes
	monitor  bool // a health config or slow start: the monitor takes the cluster
	warnings []*ValidationError
	policy   balance.Policy
	affinity *balance.Affinity
	idle     time.Duration
	cluster  *proxy.Cluster // set once the runtime state is planned
	limits   proxy.Limits   // the cluster's circuit breakers
}

// upstreams compiles (or reuses) every upstream into s and plans their
// runtime state.
func (r *run) upstreams(s *Snapshot, form config.Form, prev *Snapshot) {
	doc, c := r.doc, r.c
	units := make([]*compiledUpstream, 0, len(doc.Upstreams))
	reused := 0
	for i := range doc.Upstreams {
		u := &doc.Upstreams[i]
		if !r.check.UpstreamID(i) {
			continue
		}
		canon := form.Upstream(i)
		if prev != nil {
			if old := prev.upstreams[u.ID]; old != nil && bytes.Equal(old.canon, canon) && r.sameIdentity(u, old) {
				units = append(units, old)
				reused++
				continue
			}
		}
		cu := r.upstream(i, u)
		cu.canon = canon
		units = append(units, cu)
	}
	if prev != nil && prev == c.applied && reused == len(doc.Upstreams) && reused == len(prev.upstreams) {
		// Every upstream of the snapshot applied last, and no other (the
		// IDs are distinct, each one of prev's): the registry and the
		// transports hold what a plan of them would, and prev's clusters
		// are built on them. A plan would change nothing.
		s.upstreams, s.clusters = prev.upstreams, prev.clusters
		r.keptClusters = true
		for _, cu := range units {
			r.enlist(s, cu, cu.cluster.Upstream, cu.cluster.Transport)
		}
		return
	}
	cfgs := make([]upstream.ClusterConfig, len(units))
	for k, cu := range units {
		cfgs[k] = cu.cfg
	}
	s.upstreams = make(map[string]*compiledUpstream, len(units))
	s.clusters = make(map[string]*proxy.Cluster, len(units))
	s.plan = c.Registry.Plan(cfgs)
	s.transports = c.transports.next()
	for _, cu := range units {
		id := cu.cfg.ID
		rc, tr := s.plan.Cluster(id), s.transports.get(id, cu.client)
		if cu.cluster == nil || cu.cluster.Upstream != rc || cu.cluster.Transport != tr {
			cl := *cu
			cl.cluster = c.cluster(id, cu, rc, tr)
			cu = &cl
		}
		s.upstreams[id] = cu
		s.clusters[id] = cu.cluster
		r.enlist(s, cu, rc, tr)
	}
}

// enlist records what a compiled upstream brings to s besides its
// cluster: its warnings, and its health config for the monitor.
func (r *run) enlist(s *Snapshot, cu *compiledUpstream, rc *upstream.Cluster, tr http.RoundTripper) {
	c := r.c
	r.warns = append(r.warns, cu.warnings...)
	// The monitor takes the clusters with something to check or stamp,
	// and once more one that had it, so that its verdicts are reset: a
	// cluster without health costs a publish nothing.
	if id := cu.cfg.ID; c.Health != nil && (cu.monitor || c.monitored[id]) {
		s.health = append(s.health, health.ClusterHealth{Cluster: rc, Config: cu.health, Transport: tr})
	}
}

// upstream maps upstreams[i] onto the configs of balance, health and
// proxy and builds its policies, recording every problem.
func (r *run) upstream(i int, u *config.Upstream) *compiledUpstream {
	c := r.c
	at := upPath(i, "")
	cu := &compiledUpstream{cfg: upstream.ClusterConfig{ID: u.ID}}
	var plain, secure bool
	cu.cfg.Destinations, plain, secure = r.destinations(i, u.Destinations)
	r.check.UpstreamValues(i)

	slow := duration(u.Health.SlowStart)
	var err error
	if cu.policy, err = c.Policies.New(balance.Config{Policy: u.LoadBalancing, SlowStart: slow}); err != nil {
		r.under(at, err, balancePath)
	}

	cu.client, cu.idle = r.clientConfig(i, &u.HTTP)
	r.limits(i, &u.Limits, cu)
	if cu.client.Version == proxy.HTTP2 && plain && cu.client.PlainTextVersion() != proxy.HTTP2 {
		msg := "version \"2\" reaches http:// destinations only with versionPolicy \"exact\" (h2c); without it they are spoken to in HTTP/1.1"
		if secure {
			cu.warnings = append(cu.warnings, &ValidationError{Code: CodeUpstreamHTTPVersionPlainText, Path: at + ".http.version", Msg: msg})
		} else {
			r.add(CodeUpstreamHTTPVersionPlainText, at+".http.version", msg)
		}
	}

	cu.health = r.healthConfig(u)
	var errs, warns []error
	if c.Health != nil {
		errs, warns = c.Health.Validate(cu.health)
	} else {
		errs, warns = cu.health.Validate()
	}
	for _, e := range errs {
		r.under("", e, healthPath(i))
	}
	ws := problem.List(cu.warnings)
	for _, w := range warns {
		under(&ws, "", w, healthPath(i))
	}
	cu.warnings = ws
	cu.cfg.InitialActiveHealth = cu.health.InitialActiveHealth()
	cu.observe = cu.health.Passive.Enabled
	hc := &cu.health
	cu.monitor = slow > 0 || hc.Active != (health.ActiveConfig{}) || hc.Passive != (health.PassiveConfig{}) ||
		hc.Outlier != (health.OutlierConfig{}) || hc.Availability != "" || hc.ProbeFirst

	ac := r.affinityConfig(&u.Affinity)
	if err := ac.Validate(); err != nil {
		r.under(at+".affinity", err, affinityPath)
	} else if u.Affinity.Enabled {
		if cu.affinity, err = balance.NewAffinity(ac, c.AffinityKey); err != nil {
			r.under(at+".affinity", err, affinityPath)
		}
	}
	return cu
}

// destinations maps an upstream's destinations, leaving out the ones the
// checker refuses (a wrong ID or address), and reports whether any is
// plain http or https.
func (r *run) destinations(i int, ds []config.Destination) (out []upstream.DestinationConfig, plain, secure bool) {
	out = make([]upstream.DestinationConfig, 0, len(ds))
	for j := range ds {
		d := &ds[j]
		if !r.check.Destination(i, j) {
			continue
		}
		scheme, host, _ := config.ParseAddress(d.Address)
		dc := upstream.DestinationConfig{ID: d.ID, Scheme: scheme, Host: host, Metadata: d.Metadata, Drain: d.Drain}
		if d.Health != "" {
			_, dc.HealthHost, _ = config.ParseAddress(d.Health)
		}
		plain = plain || scheme == "http"
		secure = secure || scheme == "https"
		out = append(out, dc)
	}
	return out, plain, secure
}

// balancePath maps balance.Config's paths onto the upstream: the policy is
// loadBalancing, slow start sits in the health block.
func balancePath(p string) string {
	p = renameHead(p, "policy", "loadBalancing")
	return renameHead(p, "slowStart", "health.slowStart")
}

func affinityPath(p string) string { return renameHead(p, "keyName", "key") }

// healthPath maps health.Config's paths onto upstreams[i]: its health
// block, or the upstream's metadata, which health reads too.
func healthPath(i int) func(string) string {
	return func(p string) string {
		if key, ok := strings.CutPrefix(p, "metadata["); ok {
			return strictdecode.JoinKey(upPath(i, ".metadata"), strings.TrimSuffix(key, "]"))
		}
		return upPath(i, ".health."+p)
	}
}

// healthConfig maps an upstream's health block onto health's config.
func (r *run) healthConfig(u *config.Upstream) health.Config {
	h := &u.Health
	return health.Config{
		Availability: h.Availability,
		Active: health.ActiveConfig{
			Enabled:   h.Active.Enabled,
			Interval:  duration(h.Active.Interval),
			Timeout:   duration(h.Active.Timeout),
			Policy:    h.Active.Policy,
			Path:      h.Active.Path,
			Query:     h.Active.Query,
			Threshold: h.Active.Threshold,
		},
		Passive: health.PassiveConfig{
			Enabled:            h.Passive.Enabled,
			Policy:             h.Passive.Policy,
			Window:             duration(h.Passive.Window),
			MinRequests:        h.Passive.MinRequests,
			FailureRate:        h.Passive.FailureRate,
			ReactivationPeriod: duration(h.Passive.ReactivationPeriod),
		},
		Outlier:    outlierConfig(&h.Outlier),
		ProbeFirst: h.ProbeFirst,
		Metadata:   u.Metadata,
	}
}

// clientConfig maps an upstream's http block onto proxy's client config
// and validates it; it returns the idle timeout too (-1: never).
func (r *run) clientConfig(i int, h *config.UpstreamHTTP) (proxy.ClientConfig, time.Duration) {
	at := func(field string) func() string { return func() string { return upPath(i, ".http."+field) } }
	var c proxy.ClientConfig
	c.Version = name(r, at("version"), h.Version, proxy.ParseHTTPVersion, proxy.HTTPVersionNames(), proxy.CodeClientVersionUnknown)
	c.VersionPolicy = name(r, at("versionPolicy"), h.VersionPolicy, proxy.ParseVersionPolicy, proxy.VersionPolicyNames(), proxy.CodeClientVersionPolicyUnknown)
	c.ConnectTimeout = duration(h.ConnectTimeout)
	idle := proxy.DefaultIdleTimeout
	if h.IdleTimeout != "" {
		if idle = duration(h.IdleTimeout); idle == 0 {
			idle = -1 // "0s": never
		}
	}
	// A request nobody answers is cut like a quiet stream.
	c.ResponseHeaderTimeout = max(idle, 0)
	c.HTTP1 = name(r, at("http1Client"), h.HTTP1Client, proxy.ParseHTTP1Client, proxy.HTTP1ClientNames(), proxy.CodeClientHTTP1Unknown)
	c.Trust = name(r, at("tls.trust"), h.TLS.Trust, proxy.ParseTrust, proxy.TrustNames(), proxy.CodeClientTrustUnknown)
	var pins strings.Builder
	for _, p := range h.TLS.Pins {
		if sum, ok := config.ParsePin(p); ok {
			pins.Write(sum[:])
		}
	}
	c.Pins = pins.String()
	r.clientIdentity(i, h, &c)
	c.ServerName = h.TLS.ServerName
	if canon, wildcard, err := hostname.Canonical(c.ServerName); err == nil && !wildcard {
		c.ServerName = canon // as the canonical form writes it
	}
	if err := c.Validate(); err != nil {
		r.under(upPath(i, ".http"), err, clientPath)
	}
	return c, idle
}

// clientPath maps proxy.ClientConfig's paths onto the http block: the
// trust settings sit in its tls block, the response header timeout is the
// idle timeout.
func clientPath(p string) string {
	for _, f := range [...]string{"trust", "pins", "serverName", "clientCertificate"} {
		if q := renameHead(p, f, "tls."+f); q != p {
			return q
		}
	}
	if q := renameHead(p, "http1", "http1Client"); q != p {
		return q
	}
	if q := renameHead(p, "cas", "tls.caFile"); q != p {
		return q
	}
	if q := renameHead(p, "certificates", "tls.clientCertificate"); q != p {
		return q
	}
	return renameHead(p, "responseHeaderTimeout", "idleTimeout")
}

// affinityConfig maps an upstream's affinity block onto balance's.
func (r *run) affinityConfig(a *config.Affinity) balance.AffinityConfig {
	c := balance.AffinityConfig{
		Mode:          balance.AffinityMode(a.Mode),
		KeyName:       a.Key,
		FailurePolicy: balance.AffinityFailurePolicy(a.FailurePolicy),
		Cookie: balance.CookieConfig{
			Path:     a.Cookie.Path,
			Domain:   a.Cookie.Domain,
			Secure:   balance.CookieSecure(a.Cookie.Secure),
			SameSite: balance.CookieSameSite(a.Cookie.SameSite),
			MaxAge:   duration(a.Cookie.MaxAge),
		},
	}
	if h := a.Cookie.HTTPOnly; h != nil && !*h {
		c.Cookie.AllowScriptAccess = true
	}
	return c
}

// cluster builds the forwarder's view of an upstream: its runtime state
// and transport, its policies, passive health and counters.
func (c *Compiler) cluster(id string, cu *compiledUpstream, rc *upstream.Cluster, tr http.RoundTripper) *proxy.Cluster {
	st := c.stats[id]
	if st == nil {
		st = new(proxy.Stats)
		c.stats[id] = st
	}
	cl := &proxy.Cluster{Upstream: rc, Transport: tr, Policy: cu.policy, Affinity: cu.affinity, IdleTimeout: cu.idle, Stats: st, Limits: cu.limits}
	if c.Health != nil {
		// Every cluster: a destination that refuses a connection is
		// ejected with or without a health block (see health.Monitor.Observe).
		cl.Observer = c.Health
	}
	return cl
}

// Stats returns the forwarding counters of an upstream ID, kept across
// publishes, or nil.
func (c *Compiler) Stats(id string) *proxy.Stats { return c.stats[id] }
