package balance

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// Config is a cluster's balancing configuration. The zero value is power of
// two choices without slow start.
type Config struct {
	// Policy names the policy: one of the Policy* constants or a name
	// registered on the [Policies]; empty means PowerOfTwoChoices.
	Policy string
	// Hash configures the ConsistentHash policy; it must be zero for the
	// others.
	Hash HashConfig
	// Spillover is the PreferLocalZone threshold (see [PreferLocalZone]); 0
	// turns spillover off, and it must be 0 for the other policies.
	Spillover int64
	// SlowStart is the ramp-up window of a destination that became
	// available (see [SlowStart]); 0 turns it off.
	SlowStart time.Duration
}

// Factory builds a policy for one cluster from its config. It is called at
// config compile time, never on the request path.
type Factory func(Config) (Policy, error)

// Policies builds the balancing policy of each cluster, from the built-in
// policies and the ones registered on it. The zero value knows the built-in
// policies. There is no package-level registry: two gateways in one process
// each have their own Policies.
//
// Register every custom policy before the first New or Validate; after that a
// Policies is safe for concurrent use.
type Policies struct {
	// Zone is the gateway's own zone, read by PreferLocalZone.
	Zone string
	// Clock is the time source of slow start; nil means time.Now.
	Clock func() time.Time

	custom map[string]Factory
}

// Register adds a policy under name. It refuses an empty name, a built-in
// name and a name registered already.
func (p *Policies) Register(name string, f Factory) error {
	switch {
	case name == "" || f == nil:
		return errors.New("balance: Register needs a name and a factory")
	case builtin(name):
		return fmt.Errorf("balance: %q is a built-in policy", name)
	case p.custom[name] != nil:
		return fmt.Errorf("balance: policy %q is registered already", name)
	}
	if p.custom == nil {
		p.custom = make(map[string]Factory)
	}
	p.custom[name] = f
	return nil
}

var policyNames = [...]string{
	PolicyPowerOfTwoChoices, PolicyLeastRequests, PolicyRoundRobin, PolicyRandom,
	PolicyFirstAlphabetical, PolicyPreferLocalZone, PolicyConsistentHash,
}

// PolicyNames returns the names of the built-in policies, the default
// first: the names [Config.Policy] and a config document use.
func PolicyNames() []string { return policyNames[:] }

func builtin(name string) bool { return slices.Contains(policyNames[:], name) }

// Validate returns every problem in c, each a *[ValidationError] with a
// path relative to c, joined; nil means c is valid.
func (p *Policies) Validate(c Config) error {
	var errs problem.List
	name := c.Policy
	if name == "" {
		name = PolicyPowerOfTwoChoices
	}
	if !builtin(name) && p.custom[name] == nil {
		errs.Add(CodePolicyUnknown, "policy", "unknown policy "+quote(name)+" (want "+strings.Join(policyNames[:], ", ")+" or a registered one)")
	}
	if name == PolicyConsistentHash {
		errs.Under("hash", CodeHashSourceUnknown, c.Hash.Validate())
	} else if c.Hash != (HashConfig{}) && builtin(name) {
		errs.Add(CodeHashUnused, "hash", "hash settings apply only to ConsistentHash")
	}
	switch {
	case c.Spillover < 0:
		errs.Add(CodeSpilloverInvalid, "spillover", "spillover must not be negative (0 turns it off)")
	case c.Spillover > 0 && name != PolicyPreferLocalZone && builtin(name):
		errs.Add(CodeSpilloverUnused, "spillover", "spillover applies only to PreferLocalZone")
	}
	if c.SlowStart < 0 {
		errs.Add(CodeSlowStartInvalid, "slowStart", "slow start window must not be negative (0 turns it off)")
	}
	return errs.Err()
}

// New validates c and builds its policy. Every call returns a new policy, so
// stateful ones (RoundRobin's counter, a ConsistentHash table) are never
// shared between clusters.
func (p *Policies) New(c Config) (Policy, error) {
	if err := p.Validate(c); err != nil {
		return nil, err
	}
	var pol Policy
	switch c.Policy {
	case "", PolicyPowerOfTwoChoices:
		pol = PowerOfTwoChoices{}
	case PolicyLeastRequests:
		pol = LeastRequests{}
	case PolicyRoundRobin:
		pol = new(RoundRobin)
	case PolicyRandom:
		pol = Random{}
	case PolicyFirstAlphabetical:
		pol = FirstAlphabetical{}
	case PolicyPreferLocalZone:
		pol = &PreferLocalZone{Zone: p.Zone, Spillover: c.Spillover}
	case PolicyConsistentHash:
		m, err := NewConsistentHash(c.Hash)
		if err != nil {
			return nil, err
		}
		pol = m
	default:
		f := p.custom[c.Policy]
		if f == nil {
			return nil, fmt.Errorf("balance: unknown policy %q", c.Policy)
		}
		var err error
		if pol, err = f(c); err != nil {
			return nil, fmt.Errorf("balance: policy %q: %w", c.Policy, err)
		}
		if pol == nil {
			return nil, fmt.Errorf("balance: policy %q: factory returned nil", c.Policy)
		}
	}
	if c.SlowStart > 0 {
		pol = &SlowStart{Policy: pol, Window: c.SlowStart, Clock: p.Clock}
	}
	return pol, nil
}

func quote(s string) string { return strconv.Quote(s) }
