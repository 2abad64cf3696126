package snapshot

import (
	"crypto/tls"
	"fmt"
	"time"

	"github.com/paduraksa/paduraksa/gate"
)

// gatePolicies builds every policy of the document, keyed by ID. Rate
// limits come from the compiler's gate state, so an unchanged limit keeps
// its buckets across publishes.
func (c *Compiler) gatePolicies(doc *Document) (map[string]gate.PolicyUse, error) {
	pols := make(map[string]gate.PolicyUse, len(doc.AccessLists)+len(doc.RuleSets)+len(doc.RateLimits)+len(doc.ForwardAuths))
	for i := range doc.AccessLists {
		l := &doc.AccessLists[i]
		cfg := gate.AccessListConfig{ID: l.ID, Realm: l.Realm, Countries: c.Countries}
		for _, p := range l.Allow {
			pr, err := parsePrefix(p)
			if err != nil {
				return nil, internal(index("accessLists", i)+".allow", err)
			}
			cfg.Allow = append(cfg.Allow, pr)
		}
		for _, p := range l.Deny {
			pr, err := parsePrefix(p)
			if err != nil {
				return nil, internal(index("accessLists", i)+".deny", err)
			}
			cfg.Deny = append(cfg.Deny, pr)
		}
		for _, u := range l.Users {
			cfg.Users = append(cfg.Users, gate.BasicUser{Name: u.Name, Hash: u.PasswordHash})
		}
		p, err := gate.NewAccessList(cfg)
		if err != nil {
			return nil, internal(index("accessLists", i), err)
		}
		pols[l.ID] = gate.PolicyUse{Policy: p, Mode: gateMode(l.Mode)}
	}
	for i := range doc.RuleSets {
		rs := &doc.RuleSets[i]
		cfg := gate.RuleSetConfig{ID: rs.ID, Rules: make([]gate.Rule, len(rs.Rules))}
		for j, r := range rs.Rules {
			gr := gate.Rule{PathPrefix: r.PathPrefix, PathExact: r.PathExact, Methods: r.Methods, UserAgentContains: r.UserAgentContains}
			switch r.Action {
			case ActionAllow:
				gr.Action = gate.RuleAllow
			case ActionRespond:
				gr.Action = gate.RuleRespond
				gr.Status, gr.ContentType, gr.Body = r.Respond.Status, r.Respond.ContentType, []byte(r.Respond.Body)
			}
			cfg.Rules[j] = gr
		}
		p, err := gate.NewRuleSet(cfg)
		if err != nil {
			return nil, internal(index("ruleSets", i), err)
		}
		pols[rs.ID] = gate.PolicyUse{Policy: p, Mode: gateMode(rs.Mode)}
	}
	for i := range doc.RateLimits {
		rl := &doc.RateLimits[i]
		period, err := ParseDuration(rl.Period, 0)
		if err != nil {
			return nil, internal(index("rateLimits", i)+".period", err)
		}
		cfg := gate.RateLimitConfig{ID: rl.ID, Requests: rl.Requests, Period: period, Burst: rl.Burst, ExemptProbes: rl.ExemptProbes}
		if rl.Scope == "route" {
			cfg.Scope = gate.RateLimitPerRoute
		}
		p, err := c.GateState.RateLimit(cfg)
		if err != nil {
			return nil, internal(index("rateLimits", i), err)
		}
		pols[rl.ID] = gate.PolicyUse{Policy: p, Mode: gateMode(rl.Mode)}
	}
	for i := range doc.ForwardAuths {
		fa := &doc.ForwardAuths[i]
		timeout, err := ParseDuration(fa.Timeout, dfltForwardAuthTimeout)
		if err != nil {
			return nil, internal(index("forwardAuths", i)+".timeout", err)
		}
		p, err := gate.NewForwardAuth(gate.ForwardAuthConfig{ID: fa.ID, URL: fa.URL, Timeout: timeout,
			RequestHeaders: fa.RequestHeaders, IdentityHeaders: fa.IdentityHeaders})
		if err != nil {
			return nil, internal(index("forwardAuths", i), err)
		}
		pols[fa.ID] = gate.PolicyUse{Policy: p, Mode: gateMode(fa.Mode)}
	}
	return pols, nil
}

func gateMode(m string) gate.Mode {
	switch m {
	case ModeShadow:
		return gate.Shadow
	case ModeOff:
		return gate.Off
	}
	return gate.Enforce
}

// chain resolves a list of policy IDs.
func chain(pols map[string]gate.PolicyUse, ids []string, path string) ([]gate.PolicyUse, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out := make([]gate.PolicyUse, 0, len(ids))
	for _, id := range ids {
		u, ok := pols[id]
		if !ok {
			return nil, internal(path, fmt.Errorf("unknown policy %q", id))
		}
		out = append(out, u)
	}
	return out, nil
}

// gateHost fills a gate host's TLS, HSTS, redirect, robots, limits and
// chain from the document's host i.
func gateHost(gh *gate.Host, h *Host, i int, pols map[string]gate.PolicyUse) error {
	ids := h.Policies
	if h.AccessList != "" {
		ids = append([]string{h.AccessList}, ids...)
	}
	var err error
	if gh.Policies, err = chain(pols, ids, hostPath(i, ".policies")); err != nil {
		return err
	}
	if t := h.TLS; t != nil {
		gh.TLS = gate.TLSPolicy{HTTP1Only: t.HTTP1Only, HTTP3: t.HTTP3, AltSvc: t.AltSvc}
		switch t.MinVersion {
		case "1.2":
			gh.TLS.MinVersion = tls.VersionTLS12
		case "1.3":
			gh.TLS.MinVersion = tls.VersionTLS13
		}
	}
	if hs := h.HSTS; hs != nil {
		maxAge, err := ParseDuration(hs.MaxAge, 0)
		if err != nil {
			return internal(hostPath(i, ".hsts.maxAge"), err)
		}
		gh.HSTS = gate.HSTS{MaxAge: maxAge.Truncate(time.Second), IncludeSubdomains: hs.IncludeSubdomains, Preload: hs.Preload}
	}
	if rd := h.HTTPSRedirect; rd != nil {
		gh.HTTPSRedirect = gate.HTTPSRedirect{Enabled: true, Status: rd.Status, Port: rd.Port}
	}
	if h.Robots != "" {
		gh.Robots = []byte(h.Robots)
	}
	if l := h.Limits; l != nil {
		gh.Limits = gate.Limits{MaxURIBytes: l.MaxURIBytes, MaxHeaderCount: l.MaxHeaderCount,
			MaxHeaderBytes: l.MaxHeaderBytes, MaxBodyBytes: int64(l.MaxBodyBytes)}
	}
	return nil
}

// gateRoute fills a gate route's chain and body limit.
func gateRoute(gr *gate.Route, r *Route, i, j int, pols map[string]gate.PolicyUse) error {
	var err error
	gr.Policies, err = chain(pols, r.Policies, routePath(i, j, ".policies"))
	gr.MaxBodyBytes = int64(r.MaxBodyBytes)
	return err
}

// retainRateLimits lets the gate state forget the rate limits the
// document no longer defines.
func (c *Compiler) retainRateLimits(doc *Document) {
	ids := make(map[string]bool, len(doc.RateLimits))
	for i := range doc.RateLimits {
		ids[doc.RateLimits[i].ID] = true
	}
	c.GateState.Retain(func(id string) bool { return ids[id] })
}
