package snapshot

import (
	"net/netip"
	"strings"

	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
)

// policy is a policy of the document as hosts and routes name it: its use
// (nil Policy when it has problems of its own) and whether it is an access
// list, which a host's accessList field must name.
type policy struct {
	use        gate.PolicyUse
	accessList bool
}

// policies builds every policy of the document, keyed by the IDs that are
// their policy's own (the checker reports the others, and references to
// them once, on their own entry). Rate limits come from the compiler's
// gate state, so an unchanged limit keeps its buckets across publishes.
func (r *run) policies() map[string]policy {
	doc, c := r.doc, r.c
	pols := make(map[string]policy, len(doc.AccessLists)+len(doc.RuleSets)+len(doc.RateLimits)+len(doc.ForwardAuths))
	add := func(list string, i int, own bool, id, mode string, build func(at string) (gate.Policy, error), rename func(string) string, accessList bool) {
		at := index(list, i)
		m := name(r, func() string { return at + ".mode" }, mode, gate.ParseMode, gate.ModeNames(), gate.CodeChainModeUnknown)
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
		add("accessLists", i, r.check.AccessList(i), l.ID, l.Mode, func(at string) (gate.Policy, error) {
			cfg := gate.AccessListConfig{
				ID: l.ID, Realm: l.Realm, Countries: c.Countries,
				Allow:          prefixes(l.Allow),
				Deny:           prefixes(l.Deny),
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
		add("ruleSets", i, r.check.RuleSet(i), rs.ID, rs.Mode, func(at string) (gate.Policy, error) {
			cfg := gate.RuleSetConfig{ID: rs.ID, Rules: make([]gate.Rule, len(rs.Rules))}
			for j := range rs.Rules {
				cfg.Rules[j] = r.rule(at+index(".rules", j), &rs.Rules[j])
			}
			return gate.NewRuleSet(cfg)
		}, ruleSetPath, false)
	}
	for i := range doc.RateLimits {
		rl := &doc.RateLimits[i]
		add("rateLimits", i, r.check.RateLimit(i), rl.ID, rl.Mode, func(at string) (gate.Policy, error) {
			cfg := gate.RateLimitConfig{ID: rl.ID, Requests: rl.Requests, Burst: rl.Burst, ExemptProbes: rl.ExemptProbes,
				Period: duration(rl.Period)}
			cfg.Scope = name(r, func() string { return at + ".scope" }, rl.Scope, gate.ParseRateLimitScope, gate.RateLimitScopeNames(), gate.CodeRateLimitScopeUnknown)
			cfg.Buckets = name(r, func() string { return at + ".buckets" }, rl.Buckets, gate.ParseRateLimitBuckets, gate.RateLimitBucketsNames(), gate.CodeRateLimitBucketsUnknown)
			return c.GateState.RateLimit(cfg)
		}, nil, false)
	}
	for i := range doc.ForwardAuths {
		fa := &doc.ForwardAuths[i]
		add("forwardAuths", i, r.check.ForwardAuth(i), fa.ID, fa.Mode, func(at string) (gate.Policy, error) {
			return gate.NewForwardAuth(gate.ForwardAuthConfig{ID: fa.ID, URL: fa.URL,
				Timeout:        duration(fa.Timeout),
				RequestHeaders: fa.RequestHeaders, IdentityHeaders: fa.IdentityHeaders})
		}, nil, false)
	}
	return pols
}

// rule maps a rule of a rule set onto the gate's; at is its path. The
// checker reports a respond block without action respond, and the reverse.
func (r *run) rule(at string, ru *config.Rule) gate.Rule {
	gr := gate.Rule{PathPrefix: ru.PathPrefix, PathExact: ru.PathExact, Methods: ru.Methods, UserAgentContains: ru.UserAgentContains}
	gr.Action = name(r, func() string { return at + ".action" }, ru.Action, gate.ParseRuleAction, gate.RuleActionNames(), gate.CodeRuleSetRuleActionUnknown)
	if a := ru.Respond; a != nil && gr.Action == gate.RuleRespond {
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

// prefixes parses a list of addresses and prefixes, which the checker
// checks, leaving out the ones that are not.
func prefixes(list []string) []netip.Prefix {
	if len(list) == 0 {
		return nil
	}
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		if p, err := config.ParsePrefix(s); err == nil {
			out = append(out, p)
		}
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
