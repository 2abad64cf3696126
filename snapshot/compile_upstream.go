package snapshot

import (
	"bytes"
	"net/http"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/internal/problem"
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
}

// upstreams compiles (or reuses) every upstream into s and plans their
// runtime state. It returns every upstream ID the document has, valid or
// not: references to them are not reported again.
func (r *run) upstreams(s *Snapshot, form canonForm, prev *Snapshot) map[string]bool {
	doc, c := r.doc, r.c
	known := make(map[string]bool, len(doc.Upstreams))
	seen := make(map[string]ref, len(doc.Upstreams))
	units := make([]*compiledUpstream, 0, len(doc.Upstreams))
	cfgs := make([]upstream.ClusterConfig, 0, len(doc.Upstreams))
	for i := range doc.Upstreams {
		u := &doc.Upstreams[i]
		known[u.ID] = true
		if !r.claim(u.ID, ref{"upstreams", i}, seen, upstreamIDCodes) {
			continue
		}
		canon := form.of(form.upstreams[i])
		if prev != nil {
			if old := prev.upstreams[u.ID]; old != nil && bytes.Equal(old.canon, canon) {
				units, cfgs = append(units, old), append(cfgs, old.cfg)
				continue
			}
		}
		cu := r.upstream(i, u)
		cu.canon = canon
		units, cfgs = append(units, cu), append(cfgs, cu.cfg)
	}
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
		r.warns = append(r.warns, cu.warnings...)
		// The monitor takes the clusters with something to check or
		// stamp, and once more one that had it, so that its verdicts are
		// reset: a cluster without health costs a publish nothing.
		if c.Health != nil && (cu.monitor || c.monitored[id]) {
			s.health = append(s.health, health.ClusterHealth{Cluster: rc, Config: cu.health, Transport: tr})
		}
	}
	return known
}

// upstream maps upstreams[i] onto the configs of balance, health and
// proxy and builds its policies, recording every problem.
func (r *run) upstream(i int, u *Upstream) *compiledUpstream {
	c := r.c
	at := upPath(i, "")
	cu := &compiledUpstream{cfg: upstream.ClusterConfig{ID: u.ID}}
	var plain, secure bool
	cu.cfg.Destinations, plain, secure = r.destinations(i, u.Destinations)

	slow := r.duration(func() string { return at + ".health.slowStart" }, u.Health.SlowStart)
	var err error
	if cu.policy, err = c.Policies.New(balance.Config{Policy: u.LoadBalancing, SlowStart: slow}); err != nil {
		r.under(at, err, balancePath)
	}

	cu.client, cu.idle = r.clientConfig(i, &u.HTTP)
	if cu.client.Version == proxy.HTTP2 && plain && cu.client.PlainTextVersion() != proxy.HTTP2 {
		msg := "version \"2\" reaches http:// destinations only with versionPolicy \"exact\" (h2c); without it they are spoken to in HTTP/1.1"
		if secure {
			cu.warnings = append(cu.warnings, &ValidationError{Code: CodeUpstreamHTTPVersionPlainText, Path: at + ".http.version", Msg: msg})
		} else {
			r.add(CodeUpstreamHTTPVersionPlainText, at+".http.version", msg)
		}
	}

	cu.health = r.healthConfig(i, u)
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
		hc.Availability != "" || hc.ProbeFirst

	ac := r.affinityConfig(i, &u.Affinity)
	if err := ac.Validate(); err != nil {
		r.under(at+".affinity", err, affinityPath)
	} else if u.Affinity.Enabled {
		if cu.affinity, err = balance.NewAffinity(ac, c.AffinityKey); err != nil {
			r.under(at+".affinity", err, affinityPath)
		}
	}
	return cu
}

// destinations maps an upstream's destinations, leaving out the ones whose
// ID or address is wrong, and reports whether any is plain http or https.
func (r *run) destinations(i int, ds []Destination) (out []upstream.DestinationConfig, plain, secure bool) {
	out = make([]upstream.DestinationConfig, 0, len(ds))
	seen := make(map[string]ref, len(ds))
	list := upPath(i, ".destinations")
	for j := range ds {
		d := &ds[j]
		e := ref{list, j}
		ok := r.claim(d.ID, e, seen, destinationIDCodes)
		addr, reason := parseAddr(d.Address)
		if reason != "" {
			r.add(CodeUpstreamDestinationAddressInvalid, e.path()+".address", quote(d.Address)+": "+reason)
			ok = false
		}
		dc := upstream.DestinationConfig{ID: d.ID, Scheme: addr.scheme, Host: addr.hostPort(), Metadata: d.Metadata}
		if d.Health != "" {
			ha, reason := parseAddr(d.Health)
			switch {
			case reason != "":
				r.add(CodeUpstreamDestinationHealthInvalid, e.path()+".health", quote(d.Health)+": "+reason)
				ok = false
			case ha.scheme != addr.scheme && addr.scheme != "":
				r.add(CodeUpstreamDestinationHealthScheme, e.path()+".health",
					quote(d.Health)+": probes speak the destination's scheme, "+addr.scheme+"; write the health address with it")
				ok = false
			default:
				dc.HealthHost = ha.hostPort()
			}
		}
		if !ok {
			continue
		}
		plain = plain || addr.scheme == "http"
		secure = secure || addr.scheme == "https"
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
			return joinKey(upPath(i, ".metadata"), strings.TrimSuffix(key, "]"))
		}
		return upPath(i, ".health."+p)
	}
}

// healthConfig maps an upstream's health block onto health's config.
func (r *run) healthConfig(i int, u *Upstream) health.Config {
	h := &u.Health
	at := func(field string) func() string { return func() string { return upPath(i, ".health."+field) } }
	return health.Config{
		Availability: h.Availability,
		Active: health.ActiveConfig{
			Enabled:   h.Active.Enabled,
			Interval:  r.duration(at("active.interval"), h.Active.Interval),
			Timeout:   r.duration(at("active.timeout"), h.Active.Timeout),
			Policy:    h.Active.Policy,
			Path:      h.Active.Path,
			Query:     h.Active.Query,
			Threshold: h.Active.Threshold,
		},
		Passive: health.PassiveConfig{
			Enabled:            h.Passive.Enabled,
			Policy:             h.Passive.Policy,
			Window:             r.duration(at("passive.window"), h.Passive.Window),
			MinRequests:        h.Passive.MinRequests,
			FailureRate:        h.Passive.FailureRate,
			ReactivationPeriod: r.duration(at("passive.reactivationPeriod"), h.Passive.ReactivationPeriod),
		},
		ProbeFirst: h.ProbeFirst,
		Metadata:   u.Metadata,
	}
}

// clientConfig maps an upstream's http block onto proxy's client config
// and validates it; it returns the idle timeout too (-1: never).
func (r *run) clientConfig(i int, h *UpstreamHTTP) (proxy.ClientConfig, time.Duration) {
	at := func(field string) func() string { return func() string { return upPath(i, ".http."+field) } }
	var c proxy.ClientConfig
	c.Version = name(r, at("version"), h.Version, proxy.ParseHTTPVersion, proxy.HTTPVersionNames(), proxy.CodeClientVersionUnknown)
	c.VersionPolicy = name(r, at("versionPolicy"), h.VersionPolicy, proxy.ParseVersionPolicy, proxy.VersionPolicyNames(), proxy.CodeClientVersionPolicyUnknown)
	c.ConnectTimeout = r.duration(at("connectTimeout"), h.ConnectTimeout)
	idle := proxy.DefaultIdleTimeout
	if h.IdleTimeout != "" {
		if idle = r.duration(at("idleTimeout"), h.IdleTimeout); idle == 0 {
			idle = -1 // "0s": never
		}
	}
	// A request nobody answers is cut like a quiet stream.
	c.ResponseHeaderTimeout = max(idle, 0)
	c.HTTP1 = name(r, at("http1Client"), h.HTTP1Client, proxy.ParseHTTP1Client, proxy.HTTP1ClientNames(), proxy.CodeClientHTTP1Unknown)
	c.Trust = name(r, at("tls.trust"), h.TLS.Trust, proxy.ParseTrust, proxy.TrustNames(), proxy.CodeClientTrustUnknown)
	var pins strings.Builder
	for k, p := range h.TLS.Pins {
		sum, ok := decodeSHA256Pin(p)
		if !ok {
			r.add(CodeUpstreamHTTPTLSPinInvalid, upPath(i, index(".http.tls.pins", k)), quote(p)+" is not a SHA-256 digest (32 bytes) in base64 or hex")
			continue
		}
		pins.Write(sum[:])
	}
	c.Pins = pins.String()
	c.ServerName = h.TLS.ServerName
	if canon, wildcard, err := canonHostName(c.ServerName); err == nil && !wildcard {
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
	for _, f := range [...]string{"trust", "pins", "serverName"} {
		if q := renameHead(p, f, "tls."+f); q != p {
			return q
		}
	}
	if q := renameHead(p, "http1", "http1Client"); q != p {
		return q
	}
	return renameHead(p, "responseHeaderTimeout", "idleTimeout")
}

// affinityConfig maps an upstream's affinity block onto balance's.
func (r *run) affinityConfig(i int, a *Affinity) balance.AffinityConfig {
	c := balance.AffinityConfig{
		Mode:          balance.AffinityMode(a.Mode),
		KeyName:       a.Key,
		FailurePolicy: balance.AffinityFailurePolicy(a.FailurePolicy),
		Cookie: balance.CookieConfig{
			Path:     a.Cookie.Path,
			Domain:   a.Cookie.Domain,
			Secure:   balance.CookieSecure(a.Cookie.Secure),
			SameSite: balance.CookieSameSite(a.Cookie.SameSite),
			MaxAge:   r.duration(func() string { return upPath(i, ".affinity.cookie.maxAge") }, a.Cookie.MaxAge),
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
	cl := &proxy.Cluster{Upstream: rc, Transport: tr, Policy: cu.policy, Affinity: cu.affinity, IdleTimeout: cu.idle, Stats: st}
	if c.Health != nil && cu.observe {
		cl.Observer = c.Health
	}
	return cl
}

// Stats returns the forwarding counters of an upstream ID, kept across
// publishes, or nil.
func (c *Compiler) Stats(id string) *proxy.Stats { return c.stats[id] }
