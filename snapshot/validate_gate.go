package snapshot

import (
	"net/url"
	"time"

	"golang.org/x/crypto/bcrypt"
	"golang.org/x/net/http/httpguts"
)

// Validation of the gate's blocks: probe sources, policy definitions and
// the references to them, host TLS, HSTS, HTTPS redirect, robots and
// limits.

// policyKinds are the lists whose IDs hosts and routes name in policies.
func (c *docCheck) policyIDs() map[string]string {
	d := c.doc
	ids := make(map[string]string, len(d.AccessLists)+len(d.RuleSets)+len(d.RateLimits)+len(d.ForwardAuths))
	for i := range d.AccessLists {
		if id := d.AccessLists[i].ID; id != "" {
			if _, dup := ids[id]; !dup {
				ids[id] = index("accessLists", i)
			}
		}
	}
	claim := func(list string, i int, id string) {
		p := index(list, i) + ".id"
		switch {
		case id == "":
			c.add(CodePolicyIDMissing, p, "a policy needs an ID")
		case !validID(id):
			// Still known: reported here, not again on every reference.
			c.add(CodePolicyIDInvalid, p, quote(id)+": "+idRule)
			if _, dup := ids[id]; !dup {
				ids[id] = index(list, i)
			}
		default:
			if prev, dup := ids[id]; dup {
				c.add(CodePolicyIDDuplicate, p, quote(id)+" is also "+prev+" (policy IDs share one namespace)")
				return
			}
			// A duplicate of another kind leaves the reference resolving
			// to the earlier one; the duplicate itself is reported.
			ids[id] = index(list, i)
		}
	}
	for i := range d.RuleSets {
		claim("ruleSets", i, d.RuleSets[i].ID)
	}
	for i := range d.RateLimits {
		claim("rateLimits", i, d.RateLimits[i].ID)
	}
	for i := range d.ForwardAuths {
		claim("forwardAuths", i, d.ForwardAuths[i].ID)
	}
	return ids
}

func (c *docCheck) gate() {
	d := c.doc
	for i, p := range d.Global.ProbeSources {
		if _, reason := parseAddrPrefix(p); reason != "" {
			c.add(CodeGlobalProbeSourceInvalid, index("global.probeSources", i), quote(p)+": "+reason)
		}
	}
	ids := c.policyIDs()
	for i := range d.Hosts {
		h := &d.Hosts[i]
		for j, id := range h.Policies {
			if _, ok := ids[id]; !ok {
				c.add(CodeHostPolicyUnknown, hostPath(i, index(".policies", j)), "unknown policy "+quote(id))
			}
		}
		for j := range h.Routes {
			r := &h.Routes[j]
			for k, id := range r.Policies {
				if _, ok := ids[id]; !ok {
					c.add(CodeRoutePolicyUnknown, routePath(i, j, index(".policies", k)), "unknown policy "+quote(id))
				}
			}
			if r.MaxBodyBytes < 0 {
				c.add(CodeRouteMaxBodyBytesInvalid, routePath(i, j, ".maxBodyBytes"), "negative")
			}
		}
		c.hostGate(i, h)
	}
	for i := range d.AccessLists {
		l := &d.AccessLists[i]
		c.mode(index("accessLists", i), l.Mode)
		for j, u := range l.Users {
			p := index("accessLists", i) + index(".users", j)
			if u.Name == "" || !httpguts.ValidHeaderFieldValue(u.Name) || containsByte(u.Name, ':') {
				c.add(CodeAccessListUserNameInvalid, p+".name", "a user name is not empty and has no ':' or control characters")
			}
			if _, err := bcrypt.Cost([]byte(u.PasswordHash)); err != nil {
				c.add(CodeAccessListUserPasswordHashInvalid, p+".passwordHash", "not a bcrypt hash")
			}
		}
		if l.Realm != "" && !httpguts.ValidHeaderFieldValue(l.Realm) {
			c.add(CodeAccessListRealmInvalid, index("accessLists", i)+".realm", "not a valid header value")
		}
	}
	for i := range d.RuleSets {
		rs := &d.RuleSets[i]
		c.mode(index("ruleSets", i), rs.Mode)
		for j := range rs.Rules {
			c.rule(index("ruleSets", i)+index(".rules", j), &rs.Rules[j])
		}
	}
	for i := range d.RateLimits {
		rl := &d.RateLimits[i]
		p := index("rateLimits", i)
		c.mode(p, rl.Mode)
		if rl.Requests <= 0 {
			c.add(CodeRateLimitRateInvalid, p+".requests", "requests must be positive")
		}
		if v, err := time.ParseDuration(string(rl.Period)); err != nil || v <= 0 {
			c.add(CodeRateLimitRateInvalid, p+".period", "not a duration > 0")
		}
		if rl.Burst < 0 {
			c.add(CodeRateLimitBurstInvalid, p+".burst", "negative")
		}
		if rl.Scope != "shared" && rl.Scope != "route" {
			c.add(CodeRateLimitScopeInvalid, p+".scope", "scope must be given: shared or route")
		}
	}
	for i := range d.ForwardAuths {
		fa := &d.ForwardAuths[i]
		p := index("forwardAuths", i)
		c.mode(p, fa.Mode)
		if u, err := url.Parse(fa.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Fragment != "" {
			c.add(CodeForwardAuthURLInvalid, p+".url", quote(fa.URL)+": not an absolute http(s) URL without user info or fragment")
		}
		if fa.Timeout != "" {
			if v, err := time.ParseDuration(string(fa.Timeout)); err != nil || v <= 0 {
				c.add(CodeForwardAuthTimeoutInvalid, p+".timeout", "not a duration > 0")
			}
		}
		for j, h := range fa.RequestHeaders {
			if !httpguts.ValidHeaderFieldName(h) {
				c.add(CodeForwardAuthHeaderInvalid, p+index(".requestHeaders", j), quote(h)+" is not a header name")
			}
		}
		for j, h := range fa.IdentityHeaders {
			if !httpguts.ValidHeaderFieldName(h) {
				c.add(CodeForwardAuthHeaderInvalid, p+index(".identityHeaders", j), quote(h)+" is not a header name")
			}
		}
	}
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

func (c *docCheck) mode(p, m string) {
	switch m {
	case "", ModeEnforce, ModeShadow, ModeOff:
	default:
		c.add(CodePolicyModeInvalid, p+".mode", quote(m)+" is not enforce, shadow or off")
	}
}

func (c *docCheck) rule(p string, r *Rule) {
	for _, f := range [...]struct{ name, v string }{{".pathPrefix", r.PathPrefix}, {".pathExact", r.PathExact}} {
		if reason := checkRoutePath(f.v); reason != "" {
			c.add(CodeRuleSetRulePathInvalid, p+f.name, quote(f.v)+": "+reason+"; no request path could match")
		}
	}
	for k, m := range r.Methods {
		if !httpguts.ValidHeaderFieldName(m) {
			c.add(CodeRuleSetRuleMethodInvalid, p+index(".methods", k), quote(m)+" is not a method token")
		}
	}
	switch r.Action {
	case "", ActionDeny, ActionAllow:
		if r.Respond != nil {
			c.add(CodeRuleSetRuleRespondInvalid, p+".respond", "a respond block needs action respond")
		}
	case ActionRespond:
		switch a := r.Respond; {
		case a == nil:
			c.add(CodeRuleSetRuleRespondInvalid, p+".respond", "action respond needs a respond block")
		case a.Status < 200 || a.Status > 599:
			c.add(CodeRuleSetRuleRespondInvalid, p+".respond.status", "status "+itoa(a.Status)+" is not 200-599")
		case a.ContentType != "" && !httpguts.ValidHeaderFieldValue(a.ContentType):
			c.add(CodeRuleSetRuleRespondInvalid, p+".respond.contentType", "not a valid header value")
		case len(a.Body) > MaxFixedBody:
			c.add(CodeRuleSetRuleRespondInvalid, p+".respond.body", itoa(len(a.Body))+" bytes; at most "+itoa(MaxFixedBody))
		}
	default:
		c.add(CodeRuleSetRuleActionInvalid, p+".action", quote(r.Action)+" is not deny, allow or respond")
	}
}

func (c *docCheck) hostGate(i int, h *Host) {
	if t := h.TLS; t != nil {
		switch t.MinVersion {
		case "", "1.2", "1.3":
		default:
			c.add(CodeHostTLSMinVersionInvalid, hostPath(i, ".tls.minVersion"), quote(t.MinVersion)+" is not 1.2 or 1.3")
		}
		if t.AltSvc != "" && (!t.HTTP3 || !httpguts.ValidHeaderFieldValue(t.AltSvc)) {
			c.add(CodeHostTLSAltSvcInvalid, hostPath(i, ".tls.altSvc"), "altSvc needs http3 and a valid header value")
		}
	}
	if hs := h.HSTS; hs != nil {
		if v, err := time.ParseDuration(string(hs.MaxAge)); err != nil || v < time.Second {
			c.add(CodeHostHSTSMaxAgeInvalid, hostPath(i, ".hsts.maxAge"), "not a duration of at least 1s")
		}
	}
	if rd := h.HTTPSRedirect; rd != nil {
		switch rd.Status {
		case 0, 301, 302, 307, 308:
		default:
			c.add(CodeHostHTTPSRedirectStatusInvalid, hostPath(i, ".httpsRedirect.status"), "status "+itoa(rd.Status)+" is not 301, 302, 307 or 308")
		}
		if rd.Port < 0 || rd.Port > 65535 {
			c.add(CodeHostHTTPSRedirectPortInvalid, hostPath(i, ".httpsRedirect.port"), "port "+itoa(rd.Port)+" is not 1-65535")
		}
	}
	if len(h.Robots) > MaxFixedBody {
		c.add(CodeHostRobotsTooLarge, hostPath(i, ".robots"), itoa(len(h.Robots))+" bytes; at most "+itoa(MaxFixedBody))
	}
	if l := h.Limits; l != nil {
		for _, f := range [...]struct {
			name string
			v    int
		}{{"maxUriBytes", l.MaxURIBytes}, {"maxHeaderCount", l.MaxHeaderCount}, {"maxHeaderBytes", l.MaxHeaderBytes}, {"maxBodyBytes", l.MaxBodyBytes}} {
			if f.v < 0 {
				c.add(CodeHostLimitsInvalid, hostPath(i, ".limits."+f.name), "negative")
			}
		}
	}
}
