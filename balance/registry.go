package balance

import (
	"errors"
	"fmt"
	"strconv"
	"time"
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
	// Spillover is the PreferLocalZone threshold (see [LocalZone]); 0 turns
	// spillover off, and it must be 0 for the other policies.
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

func builtin(name string) bool {
	switch name {
	case PolicyPowerOfTwoChoices, PolicyLeastRequests, PolicyRoundRobin, PolicyRandom,
		PolicyFirstAlphabetical, PolicyPreferLocalZone, PolicyConsistentHash:
		return true
	}
	return false
}

// Validate returns every problem in c, each a *[ValidationError] with a path
// relative to c.
func (p *Policies) Validate(c Config) []error {
	var errs []error
	name := c.Policy
	if name == "" {
		name = PolicyPowerOfTwoChoices
	}
	if !builtin(name) && p.custom[name] == nil {
		errs = append(errs, invalid("policy", "balance.policy.unknown", "unknown policy "+quote(name)))
	}
	if name == PolicyConsistentHash {
		for _, err := range c.Hash.Validate() {
			errs = append(errs, prefix("hash", err))
		}
	} else if c.Hash != (HashConfig{}) && builtin(name) {
		errs = append(errs, invalid("hash", "balance.hash.unused", "hash settings apply only to ConsistentHash"))
	}
	switch {
	case c.Spillover < 0:
		errs = append(errs, invalid("spillover", "balance.spillover.invalid", "spillover must not be negative (0 turns it off)"))
	case c.Spillover > 0 && name != PolicyPreferLocalZone && builtin(name):
		errs = append(errs, invalid("spillover", "balance.spillover.unused", "spillover applies only to PreferLocalZone"))
	}
	if c.SlowStart < 0 {
		errs = append(errs, invalid("slowStart", "balance.slowStart.invalid", "slow start window must not be negative (0 turns it off)"))
	}
	return errs
}

// New validates c and builds its policy. Every call returns a new policy, so
// stateful ones (RoundRobin's counter, a Maglev table) are never shared
// between clusters.
func (p *Policies) New(c Config) (Policy, error) {
	if err := joinErrs(p.Validate(c)); err != nil {
		return nil, err
	}
	var pol Policy
	switch c.Policy {
	case "", PolicyPowerOfTwoChoices:
		pol = P2C{}
	case PolicyLeastRequests:
		pol = LeastRequests{}
	case PolicyRoundRobin:
		pol = new(RoundRobin)
	case PolicyRandom:
		pol = Random{}
	case PolicyFirstAlphabetical:
		pol = FirstAlphabetical{}
	case PolicyPreferLocalZone:
		pol = &LocalZone{Zone: p.Zone, Spillover: c.Spillover}
	case PolicyConsistentHash:
		m, err := NewMaglev(c.Hash)
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

// prefix puts path in front of a validation error's path.
func prefix(path string, err error) error {
	var v *ValidationError
	if errors.As(err, &v) {
		c := *v
		if c.Path != "" {
			c.Path = path + "." + c.Path
		} else {
			c.Path = path
		}
		return &c
	}
	return err
}

func joinErrs(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}

func quote(s string) string { return strconv.Quote(s) }
