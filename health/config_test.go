package health

import (
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
	"github.com/stretchr/testify/assert"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		errs, warn map[string]string
	}{
		{"zero", Config{}, map[string]string{}, map[string]string{}},
		{"names", Config{Availability: "Sometimes", Active: ActiveConfig{Policy: "X"}, Passive: PassiveConfig{Policy: "Y"}}, map[string]string{
			"availability": "health.availability.unknown", "active.policy": "health.active.policy.unknown", "passive.policy": "health.passive.policy.unknown"}, map[string]string{}},
		{"active", Config{Active: ActiveConfig{Enabled: true, Interval: -1, Timeout: -1, Path: "health", Query: "a b"}}, map[string]string{
			"active.interval": "health.active.interval.invalid", "active.timeout": "health.active.timeout.invalid",
			"active.path": "health.active.path.invalid", "active.query": "health.active.query.invalid"}, map[string]string{}},
		{"slow round", Config{Active: ActiveConfig{Enabled: true, Interval: time.Second}}, map[string]string{},
			map[string]string{"active.timeout": "health.active.timeout.exceedsInterval"}},
		{"probe first without probes", Config{ProbeFirst: true}, map[string]string{
			"probeFirst": "health.probeFirst.inactive"}, map[string]string{}},
		{"metadata", Config{Metadata: map[string]string{MetadataThreshold: "0", MetadataRateLimit: "1.5"}}, map[string]string{
			"metadata[" + MetadataThreshold + "]": "health.active.threshold.invalid",
			"metadata[" + MetadataRateLimit + "]": "health.passive.failureRate.invalid"}, map[string]string{}},
		{"negative threshold", Config{Active: ActiveConfig{Threshold: -1}}, map[string]string{
			"active.threshold": "health.active.threshold.invalid"}, map[string]string{}},
		{"passive", Config{Passive: PassiveConfig{Enabled: true, Window: time.Millisecond, MinRequests: -1, FailureRate: 1, ReactivationPeriod: -1}}, map[string]string{
			"passive.window": "health.passive.window.invalid", "passive.minRequests": "health.passive.minRequests.invalid",
			"passive.failureRate": "health.passive.failureRate.invalid", "passive.reactivationPeriod": "health.passive.reactivationPeriod.invalid"}, map[string]string{}},
		{"one nanosecond window", Config{Passive: PassiveConfig{Window: 1}}, map[string]string{
			"passive.window": "health.passive.window.invalid"}, map[string]string{}},
		{"raised", Config{Passive: PassiveConfig{Enabled: true, ReactivationPeriod: time.Second}}, map[string]string{},
			map[string]string{"passive.reactivationPeriod": "health.passive.reactivationPeriod.raised"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs, warns := tc.cfg.Validate()
			assert.Equal(t, tc.errs, problems(t, errs))
			assert.Equal(t, tc.warn, problems(t, warns))
		})
	}

	s, errs, _ := resolve(Config{Metadata: map[string]string{MetadataThreshold: " 4 ", MetadataRateLimit: "0.5"}}, nil)
	assert.Empty(t, errs)
	assert.Equal(t, 4, s.active.threshold)
	assert.Equal(t, 0.5, s.passive.rateLimit)
	for _, v := range []string{"0x1p-1", "0.2_5", "Inf", "0.5%"} {
		_, errs, _ = resolve(Config{Metadata: map[string]string{MetadataRateLimit: v}}, nil)
		assert.Equal(t, map[string]string{"metadata[" + MetadataRateLimit + "]": "health.passive.failureRate.invalid"}, problems(t, errs), "%q is no decimal rate", v)
	}
	s, _, _ = resolve(Config{Passive: PassiveConfig{FailureRate: 0.2}, Active: ActiveConfig{Threshold: 7},
		Metadata: map[string]string{MetadataRateLimit: "0.5", MetadataThreshold: "4"}}, nil)
	assert.Equal(t, 0.2, s.passive.rateLimit, "the field wins over metadata")
	assert.Equal(t, 7, s.active.threshold, "the field wins over metadata")
	assert.Equal(t, upstream.Unknown, Config{}.InitialActiveHealth())
	assert.Equal(t, upstream.Unknown, Config{ProbeFirst: true}.InitialActiveHealth(), "nothing would probe it")
	assert.Equal(t, upstream.Unhealthy, Config{Active: ActiveConfig{Enabled: true}, ProbeFirst: true}.InitialActiveHealth())
}

// TestNamesValidate: every built-in name the package lists is accepted.
func TestNamesValidate(t *testing.T) {
	for _, n := range AvailabilityNames() {
		errs, _ := Config{Availability: n}.Validate()
		assert.Empty(t, errs, n)
	}
	for _, n := range ActivePolicyNames() {
		errs, _ := Config{Active: ActiveConfig{Policy: n}}.Validate()
		assert.Empty(t, errs, n)
	}
	for _, n := range PassivePolicyNames() {
		errs, _ := Config{Passive: PassiveConfig{Policy: n}}.Validate()
		assert.Empty(t, errs, n)
	}
	assert.Equal(t, []string{"TransportFailureRate", "FailureRateWith5xx"}, PassivePolicyNames())
}

func TestRingSaturatesAndSlides(t *testing.T) {
	r := newRing(int64(10 * time.Second))
	base := int64(1e18)
	for range countMax + 10 {
		r.add(base, true)
	}
	req, fail := r.sum(base)
	assert.EqualValues(t, countMax, req)
	assert.EqualValues(t, countMax, fail)
	r.add(base+int64(time.Second), false)
	req, _ = r.sum(base + int64(time.Second))
	assert.EqualValues(t, countMax+1, req)
	req, _ = r.sum(base + int64(10*time.Second))
	assert.EqualValues(t, 1, req, "the first bucket left the window")
	r.reset()
	req, _ = r.sum(base + int64(time.Second))
	assert.Zero(t, req)
}

// TestResolve: Resolve fills in what each zero field stands for, from the
// defaults and the cluster's metadata, leaves what Validate refuses as it
// is, and agrees with what the monitor itself reads (resolve).
func TestResolve(t *testing.T) {
	def := Config{}.Resolve()
	assert.Equal(t, Config{Availability: AvailabilityHealthyOrPanic,
		Active: ActiveConfig{Policy: ActiveConsecutiveFailures, Interval: DefaultInterval, Timeout: DefaultTimeout, Path: DefaultPath, Threshold: DefaultThreshold},
		Passive: PassiveConfig{Policy: PassiveTransportFailureRate, Window: DefaultWindow, MinRequests: DefaultMinRequests,
			FailureRate: DefaultFailureRate, ReactivationPeriod: DefaultWindow},
		Outlier: OutlierConfig{BaseEjectionTime: DefaultBaseEjectionTime, MaxEjectionTime: DefaultMaxEjectionTime,
			MaxEjectionPercent: DefaultMaxEjectionPercent}}, def)

	for _, tc := range []struct {
		name string
		in   Config
		want func(c *Config)
	}{
		{"metadata threshold", Config{Metadata: map[string]string{MetadataThreshold: " 5 "}}, func(c *Config) { c.Active.Threshold = 5 }},
		{"own threshold wins", Config{Active: ActiveConfig{Threshold: 3}, Metadata: map[string]string{MetadataThreshold: "5"}}, func(c *Config) { c.Active.Threshold = 3 }},
		{"invalid metadata threshold", Config{Metadata: map[string]string{MetadataThreshold: "0"}}, func(c *Config) { c.Active.Threshold = 0 }},
		{"metadata rate", Config{Metadata: map[string]string{MetadataRateLimit: ".25"}}, func(c *Config) { c.Passive.FailureRate = 0.25 }},
		{"invalid metadata rate", Config{Metadata: map[string]string{MetadataRateLimit: "0x1p-2"}}, func(c *Config) { c.Passive.FailureRate = 0 }},
		{"reactivation is the window", Config{Passive: PassiveConfig{Window: 30 * time.Second}}, func(c *Config) {
			c.Passive.Window, c.Passive.ReactivationPeriod = 30*time.Second, 30*time.Second
		}},
		{"reactivation raised to the window", Config{Passive: PassiveConfig{ReactivationPeriod: time.Second}}, func(c *Config) {}},
		{"longer reactivation kept", Config{Passive: PassiveConfig{ReactivationPeriod: 2 * time.Minute}}, func(c *Config) {
			c.Passive.ReactivationPeriod = 2 * time.Minute
		}},
		{"negative kept", Config{Active: ActiveConfig{Interval: -1}, Passive: PassiveConfig{ReactivationPeriod: -1}}, func(c *Config) {
			c.Active.Interval, c.Passive.ReactivationPeriod = -1, -1
		}},
		{"query", Config{Active: ActiveConfig{Query: "?deep=1"}}, func(c *Config) { c.Active.Query = "deep=1" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := def
			want.Metadata = tc.in.Metadata
			tc.want(&want)
			got := tc.in.Resolve()
			assert.Equal(t, want, got)
			s, errs, _ := resolve(tc.in, nil)
			if len(errs) > 0 {
				return
			}
			assert.Equal(t, s.active.threshold, got.Active.Threshold, "the monitor's threshold")
			assert.Equal(t, s.passive.rateLimit, got.Passive.FailureRate, "the monitor's failure rate")
			assert.Equal(t, s.passive.reactivation, got.Passive.ReactivationPeriod, "the monitor's reactivation period")
			assert.Equal(t, s.passive.window, got.Passive.Window)
			assert.Equal(t, s.active.interval, got.Active.Interval)
			assert.Equal(t, s.active.path, got.Active.Path)
			assert.Equal(t, s.active.query, got.Active.Query)
			assert.Equal(t, s.passive.minRequests, int64(got.Passive.MinRequests))
			assert.Equal(t, s.outlier.base, got.Outlier.BaseEjectionTime)
			assert.Equal(t, s.outlier.max, got.Outlier.MaxEjectionTime)
			assert.Equal(t, s.outlier.percent, got.Outlier.MaxEjectionPercent)
		})
	}
}
