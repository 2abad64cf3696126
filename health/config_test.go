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
