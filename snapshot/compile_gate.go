package snapshot

import (
	"net/netip"
	"strings"

	"github.com/paduraksa/paduraksa/gate"
)

// policy is a policy of the document as hosts and routes name it: its use
// (nil Policy when it has problems of its own) and whether it is an access
// list, which a host's accessList field must name.
type policy struct {
	use        gate.PolicyUse
	accessList bool
}

// policies builds every policy of the document, keyed by ID; IDs share one
// namespace across the four kinds, and an ID that is malformed or taken is
// still known (reported once, on its own entry, not on every reference).
// Rate limits come from the compiler's gate state, so an unchanged limit
// keeps its buckets across publishes.
func (r *run) policies() map[string]policy {
	doc, c := r.doc, r.c
	pols := make(map[string]policy, len(doc.AccessLists)+len(doc.RuleSets)+len(doc.RateLimits)+len(doc.ForwardAuths))
	seen := make(map[string]ref, len(pols))
	add := func(list string, i int, id, mode string, build func(at string) (gate.Policy, error), rename func(string) string, accessList bool) {
		e := ref{list, i}
		own := r.claim(id, e, seen, policyIDCodes)
		if _, taken := pols[id]; !taken {
			pols[id] = policy{accessList: accessList}
		}
		m := name(r, func() string { return e.path() + ".mode" }, mode, gate.ParseMode, gate.ModeNames(), gate.CodeChainModeUnknown)
		at := e.path()
		p, err := build(at)
		if err != nil {
			r.under(at, err, rename)
			return
		}
		if own && p != nil {
			pols[id] = policy{use: gate.PolicyUse{Policy: p, Mode: m}, accessList: accessList}
		}
	}
	for i := range doc.AccessLists {
		l := &doc.AccessLists[i]
		add("accessLists", i, l.ID, l.Mode, func(at string) (gate.Policy, error) {
			cfg := gate.AccessListConfig{
				ID: l.ID, Realm: l.Realm, Countries: c.Countries,
				Allow:          r.prefixes(at+".allow", l.Allow, CodeAccessListPrefixInvalid),
				Deny:           r.prefixes(at+".deny", l.Deny, CodeAccessListPrefixInvalid),
				AllowCountries: l.AllowCountries, DenyCountries: l.DenyCountries,
			}
			for _, u := range l.Users {
				cfg.Users = append(cfg.Users, gate.BasicUser{Name: u.Name, Hash: u.PasswordHash})
			}
			return gate.NewAccessList(cfg)
		}, accessListPath, true)
	}
	for i := range doc.RuleSets {
		rs := &doc.RuleSets[i]
		add("ruleSets", i, rs.ID, rs.Mode, func(at string) (gate.Policy, error) {
			cfg := gate.RuleSetConfig{ID: rs.ID, Rules: make([]gate.Rule, len(rs.Rules))}
			for j := range rs.Rules {
				cfg.Rules[j] = r.rule(at+index(".rules", j), &rs.Rules[j])
			}
			return gate.NewRuleSet(cfg)
		}, ruleSetPath, false)
	}
	for i := range doc.RateLimits {
		rl := &doc.RateLimits[i]
		add("rateLimits", i, rl.ID, rl.Mode, func(at string) (gate.Policy, error) {
			cfg := gate.RateLimitConfig{ID: rl.ID, Requests: rl.Requests, Burst: rl.Burst, ExemptProbes: rl.ExemptProbes,
				Period: r.duration(func() string { return at + ".period" }, rl.Period)}
			if rl.Scope == "" {
				r.add(CodeRateLimitScopeMissing, at+".scope", "a rate limit needs a scope: "+joinNames(gate.RateLimitScopeNames()))
			}
			cfg.Scope = name(r, func() string { return at + ".scope" }, rl.Scope, gate.ParseRateLimitScope, gate.RateLimitScopeNames(), gate.CodeRateLimitScopeUnknown)
			return c.GateState.RateLimit(cfg)
		}, nil, false)
	}
	for i := range doc.ForwardAuths {
		fa := &doc.ForwardAuths[i]
		add("forwardAuths", i, fa.ID, fa.Mode, func(at string) (gate.Policy, error) {
			return gate.NewForwardAuth(gate.ForwardAuthConfig{ID: fa.ID, URL: fa.URL,
				Timeout:        r.duration(func() string { return at + ".timeout" }, fa.Timeout),
				RequestHeaders: fa.RequestHeaders, IdentityHeaders: fa.IdentityHeaders})
		}, nil, false)
	}
	return pols
}

// rule maps a rule of a rule set onto the gate's; at is its path.
func (r *run) rule(at string, ru *Rule) gate.Rule {
	gr := gate.Rule{PathPrefix: ru.PathPrefix, PathExact: ru.PathExact, Methods: ru.Methods, UserAgentContains: ru.UserAgentContains}
	gr.Action = name(r, func() string { return at + ".action" }, ru.Action, gate.ParseRuleAction, gate.RuleActionNames(), gate.CodeRuleSetRuleActionUnknown)
	switch a := ru.Respond; {
	case gr.Action == gate.RuleRespond && a == nil:
		r.add(CodeRuleSetRuleRespondMissing, at+".respond", "action respond needs a respond block")
	case gr.Action != gate.RuleRespond && a != nil:
		r.add(CodeRuleSetRuleRespondUnexpected, at+".respond", "a respond block needs action respond")
	case a != nil:
		gr.Status, gr.ContentType, gr.Body = a.Status, a.ContentType, []byte(a.Body)
	}
	return gr
}

// accessListPath maps gate.AccessListConfig's paths onto the document: a
// user's hash is its passwordHash.
func accessListPath(p string) string { return renameLast(p, "hash", "passwordHash") }

// ruleSetPath maps gate.RuleSetConfig's paths onto the document: a rule's
// answer sits in its respond block.
func ruleSetPath(p string) string {
	for _, f := range [...]string{"status", "contentType", "body"} {
		if q := renameLast(p, f, "respond."+f); q != p {
			return q
		}
	}
	return p
}

// prefixes parses a list of addresses and prefixes, recording code at
// path[k] for each one that is not.
func (r *run) prefixes(path string, list []string, code string) []netip.Prefix {
	if len(list) == 0 {
		return nil
	}
	out := make([]netip.Prefix, 0, len(list))
	for k, s := range list {
		p, reason := parseAddrPrefix(s)
		if reason != "" {
			r.add(code, index(path, k), quote(s)+": "+reason)
			continue
		}
		out = append(out, p)
	}
	return out
}

// retainRateLimits lets the gate state forget the rate limits the
// document no longer defines.
func (r *run) retainRateLimits() {
	ids := make(map[string]bool, len(r.doc.RateLimits))
	for i := range r.doc.RateLimits {
		ids[r.doc.RateLimits[i].ID] = true
	}
	r.c.GateState.Retain(func(id string) bool { return ids[id] })
}

func joinNames(names []string) string { return strings.Join(names, ", ") }
