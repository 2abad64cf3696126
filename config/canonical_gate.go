package config

import (
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/internal/strictdecode"
	"github.com/paduraksa/paduraksa/tlsselect"
)

// The canonical form of the gate's blocks: host TLS, HSTS, HTTPS
// redirect, robots and limits, and the rule sets, rate limits and forward
// auths. Defaults are left out like everywhere else.

func (e *canonEnc) hostGate(h *Host) {
	e.stringList("policies", h.Policies)
	if t := h.TLS; t != nil {
		m := e.open("tls")
		e.str("minVersion", t.MinVersion)
		e.boolean("http1Only", t.HTTP1Only)
		e.boolean("http3", t.HTTP3)
		// No default: an empty altSvc names global.httpsPort, which may
		// be the listener's, so an explicit one always means something.
		e.str("altSvc", t.AltSvc)
		e.strDefault("clientAuth", t.ClientAuth, string(tlsselect.ClientAuthOff))
		e.str("clientCAs", t.ClientCAs)
		e.close(m, false)
	}
	if hs := h.HSTS; hs != nil {
		m := e.open("hsts")
		e.duration("maxAge", hs.MaxAge)
		e.boolean("includeSubdomains", hs.IncludeSubdomains)
		e.boolean("preload", hs.Preload)
		e.close(m, true)
	}
	if rd := h.HTTPSRedirect; rd != nil {
		m := e.open("httpsRedirect")
		e.integer("status", rd.Status, gate.DefaultRedirectStatus)
		e.integer("port", rd.Port, 0) // 0 is global.httpsPort; 443 is a port
		e.close(m, true)
	}
	e.str("robots", h.Robots)
	if l := h.Limits; l != nil {
		m := e.open("limits")
		e.integer("maxUriBytes", l.MaxURIBytes, 0)
		e.integer("maxHeaderCount", l.MaxHeaderCount, 0)
		e.integer("maxHeaderBytes", l.MaxHeaderBytes, 0)
		e.integer("maxBodyBytes", l.MaxBodyBytes, 0)
		e.close(m, false)
	}
}

func (e *canonEnc) gatePolicies(d *Document) {
	e.objects("ruleSets", len(d.RuleSets), nil, func(i int) {
		rs := &d.RuleSets[i]
		e.str("id", rs.ID)
		e.strDefault("mode", rs.Mode, gate.ModeNames()[0])
		e.objects("rules", len(rs.Rules), nil, func(j int) {
			r := &rs.Rules[j]
			e.str("pathPrefix", r.PathPrefix)
			e.str("pathExact", r.PathExact)
			e.stringList("methods", r.Methods)
			e.str("userAgentContains", r.UserAgentContains)
			e.strDefault("action", r.Action, gate.RuleActionNames()[0])
			if r.Respond != nil {
				e.fixed("respond", r.Respond, 0)
			}
		})
	})
	e.objects("rateLimits", len(d.RateLimits), nil, func(i int) {
		rl := &d.RateLimits[i]
		e.str("id", rl.ID)
		e.strDefault("mode", rl.Mode, gate.ModeNames()[0])
		e.integer("requests", rl.Requests, 0)
		e.duration("period", rl.Period)
		e.integer("burst", rl.Burst, 0)
		e.str("scope", rl.Scope)
		e.strDefault("buckets", rl.Buckets, gate.RateLimitBucketsNames()[0])
		e.boolean("exemptProbes", rl.ExemptProbes)
	})
	e.objects("forwardAuths", len(d.ForwardAuths), nil, func(i int) {
		fa := &d.ForwardAuths[i]
		e.str("id", fa.ID)
		e.strDefault("mode", fa.Mode, gate.ModeNames()[0])
		e.str("url", fa.URL)
		e.durationOr("timeout", fa.Timeout, gate.DefaultForwardAuthTimeout)
		e.stringList("requestHeaders", fa.RequestHeaders)
		e.stringList("identityHeaders", fa.IdentityHeaders)
	})
}

func (e *canonEnc) stringList(k string, vs []string) {
	if len(vs) == 0 {
		return
	}
	e.openArray(k)
	for i, v := range vs {
		e.elem(i)
		e.b = strictdecode.AppendString(e.b, v)
	}
	e.closeArray()
}
