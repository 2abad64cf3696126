package balance

import (
	"errors"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fixed struct{ id string }

func (f fixed) Pick(_ Input, av []*upstream.Destination) *upstream.Destination {
	for _, d := range av {
		if d.ID() == f.id {
			return d
		}
	}
	return nil
}

// problems returns the path and code of each *ValidationError, and fails the
// test on an error of another type or two problems at one path, which a
// map by path would hide.
func problems(t testing.TB, joined error) map[string]string {
	t.Helper()
	out := map[string]string{}
	var errs []error
	if j, ok := joined.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else if joined != nil {
		errs = []error{joined}
	}
	for _, err := range errs {
		var v *ValidationError
		if !errors.As(err, &v) {
			t.Errorf("not a *ValidationError: %T %v", err, err)
			continue
		}
		if prev, dup := out[v.Path]; dup {
			t.Errorf("two problems at %s: %s and %s", v.Path, prev, v.Code)
		}
		out[v.Path] = v.Code
	}
	return out
}

func TestPoliciesValidate(t *testing.T) {
	var p Policies
	require.NoError(t, p.Register("Pinned", func(c Config) (Policy, error) { return fixed{"d001"}, nil }))
	for _, tc := range []struct {
		name string
		cfg  Config
		want map[string]string
	}{
		{"zero", Config{}, map[string]string{}},
		{"custom", Config{Policy: "Pinned"}, map[string]string{}},
		{"unknown", Config{Policy: "Fastest"}, map[string]string{"policy": "balance.policy.unknown"}},
		{"hash header without name", Config{Policy: PolicyConsistentHash, Hash: HashConfig{Source: HashHeader}},
			map[string]string{"hash.name": "balance.hash.name.invalid"}},
		{"hash bad source", Config{Policy: PolicyConsistentHash, Hash: HashConfig{Source: "Query"}},
			map[string]string{"hash.source": "balance.hash.source.unknown"}},
		{"hash on round robin", Config{Policy: PolicyRoundRobin, Hash: HashConfig{Source: HashCookie, Name: "a"}},
			map[string]string{"hash": "balance.hash.unused"}},
		{"spillover", Config{Spillover: -1, SlowStart: -1},
			map[string]string{"spillover": "balance.spillover.invalid", "slowStart": "balance.slowStart.invalid"}},
		{"spillover unused", Config{Policy: PolicyRandom, Spillover: 3},
			map[string]string{"spillover": "balance.spillover.unused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := p.Validate(tc.cfg)
			assert.Equal(t, tc.want, problems(t, errs))
			_, err := p.New(tc.cfg)
			assert.Equal(t, len(tc.want) == 0, err == nil, "New refuses exactly what Validate reports")
		})
	}
}

func TestPoliciesNew(t *testing.T) {
	var p Policies
	p.Zone = "a"
	require.NoError(t, p.Register("Pinned", func(c Config) (Policy, error) { return fixed{"d001"}, nil }))
	assert.EqualError(t, p.Register("Pinned", func(Config) (Policy, error) { return nil, nil }), `balance: policy "Pinned" is registered already`)
	assert.EqualError(t, p.Register(PolicyRandom, func(Config) (Policy, error) { return nil, nil }), `balance: "Random" is a built-in policy`)

	c := nDests(t, 3)
	pol, err := p.New(Config{Policy: "Pinned"})
	require.NoError(t, err)
	assert.Equal(t, "d001", pol.Pick(Input{}, c.Members().Available).ID())

	pol, err = p.New(Config{})
	require.NoError(t, err)
	assert.IsType(t, PowerOfTwoChoices{}, pol)

	a, _ := p.New(Config{Policy: PolicyRoundRobin})
	b, _ := p.New(Config{Policy: PolicyRoundRobin})
	assert.NotSame(t, a, b, "stateful policies are never shared")

	z, _ := p.New(Config{Policy: PolicyPreferLocalZone, Spillover: 7})
	assert.Equal(t, "a", z.(*PreferLocalZone).Zone)
	assert.EqualValues(t, 7, z.(*PreferLocalZone).Spillover)

	s, _ := p.New(Config{Policy: PolicyLeastRequests, SlowStart: 30e9})
	assert.IsType(t, LeastRequests{}, s.(*SlowStart).Policy)

	var other Policies
	_, err = other.New(Config{Policy: "Pinned"})
	var v *ValidationError
	require.ErrorAs(t, err, &v)
	assert.Equal(t, "balance.policy.unknown", v.Code, "registrations belong to one instance")
}

// TestNamesValidate: every name a package list gives is accepted, so the
// lists a config document checks against are the package's own.
func TestNamesValidate(t *testing.T) {
	var p Policies
	for _, n := range PolicyNames() {
		assert.NoError(t, p.Validate(Config{Policy: n}), n)
	}
	assert.Equal(t, PolicyPowerOfTwoChoices, PolicyNames()[0], "the default comes first")
	for _, n := range AffinityModeNames() {
		assert.NoError(t, AffinityConfig{Mode: AffinityMode(n)}.Validate(), n)
	}
	for _, n := range AffinityFailurePolicyNames() {
		assert.NoError(t, AffinityConfig{FailurePolicy: AffinityFailurePolicy(n)}.Validate(), n)
	}
	for _, n := range CookieSecureNames() {
		assert.NoError(t, AffinityConfig{Cookie: CookieConfig{Secure: CookieSecure(n)}}.Validate(), n)
	}
	for _, n := range CookieSameSiteNames() {
		assert.NoError(t, AffinityConfig{Cookie: CookieConfig{Secure: CookieSecureAlways, SameSite: CookieSameSite(n)}}.Validate(), n)
	}
	assert.Equal(t, []string{"Lax", "Strict", "None", "Unspecified"}, CookieSameSiteNames())
}

func TestAffinityValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  AffinityConfig
		want map[string]string
	}{
		{AffinityConfig{}, map[string]string{}},
		{AffinityConfig{Mode: "Sticky", KeyName: "a b", FailurePolicy: "Retry"}, map[string]string{
			"mode": "balance.affinity.mode.unknown", "keyName": "balance.affinity.keyName.invalid",
			"failurePolicy": "balance.affinity.failurePolicy.unknown"}},
		{AffinityConfig{Mode: AffinityHeader, Cookie: CookieConfig{Path: "/"}}, map[string]string{"cookie": "balance.affinity.cookie.unused"}},
		{AffinityConfig{Cookie: CookieConfig{Path: "app", Domain: "a;b", Secure: "Sometimes", SameSite: "Loose", MaxAge: 1500e6}}, map[string]string{
			"cookie.path": "balance.affinity.cookie.path.invalid", "cookie.domain": "balance.affinity.cookie.domain.invalid",
			"cookie.secure": "balance.affinity.cookie.secure.unknown", "cookie.sameSite": "balance.affinity.cookie.sameSite.unknown",
			"cookie.maxAge": "balance.affinity.cookie.maxAge.invalid"}},
		{AffinityConfig{Cookie: CookieConfig{Secure: CookieSecureNever, SameSite: CookieSameSiteNone}}, map[string]string{
			"cookie.sameSite": "balance.affinity.cookie.sameSite.insecure"}},
		// SameAsRequest would drop the cookie on every plain-HTTP request.
		{AffinityConfig{Cookie: CookieConfig{SameSite: CookieSameSiteNone}}, map[string]string{
			"cookie.sameSite": "balance.affinity.cookie.sameSite.insecure"}},
		{AffinityConfig{Cookie: CookieConfig{Secure: CookieSecureAlways, SameSite: CookieSameSiteNone, Domain: ".example.com", Path: "/app"}}, map[string]string{}},
		{AffinityConfig{Cookie: CookieConfig{Domain: "192.0.2.1", MaxAge: time.Hour}}, map[string]string{}},
		{AffinityConfig{Cookie: CookieConfig{Domain: "bücher.example", Path: "/café"}}, map[string]string{
			"cookie.domain": "balance.affinity.cookie.domain.invalid", "cookie.path": "balance.affinity.cookie.path.invalid"}},
		{AffinityConfig{Cookie: CookieConfig{Domain: "-a.example"}}, map[string]string{"cookie.domain": "balance.affinity.cookie.domain.invalid"}},
		{AffinityConfig{Cookie: CookieConfig{Domain: "a..example"}}, map[string]string{"cookie.domain": "balance.affinity.cookie.domain.invalid"}},
	} {
		assert.Equal(t, tc.want, problems(t, tc.cfg.Validate()), "%+v", tc.cfg)
	}
}
