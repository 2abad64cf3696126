package health

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/paduraksa/paduraksa/upstream"
)

// Names of the built-in policies, as a [Config] (and a config document)
// spells them.
const (
	AvailabilityHealthyOrPanic    = "HealthyOrPanic"
	AvailabilityHealthyAndUnknown = "HealthyAndUnknown"

	ActiveConsecutiveFailures = "ConsecutiveFailures"

	PassiveTransportFailureRate = "TransportFailureRate"
	PassiveFailureRateWith5xx   = "FailureRateWith5xx"
)

var (
	availabilityNames  = [...]string{AvailabilityHealthyOrPanic, AvailabilityHealthyAndUnknown}
	activePolicyNames  = [...]string{ActiveConsecutiveFailures}
	passivePolicyNames = [...]string{PassiveTransportFailureRate, PassiveFailureRateWith5xx}
)

// AvailabilityNames, ActivePolicyNames and PassivePolicyNames return the
// names of the built-in policies, the default first: the names a Config
// takes besides the ones registered in [Options].
func AvailabilityNames() []string  { return availabilityNames[:] }
func ActivePolicyNames() []string  { return activePolicyNames[:] }
func PassivePolicyNames() []string { return passivePolicyNames[:] }

// Metadata keys read from a cluster's metadata, spelled as YARP spells them.
const (
	// MetadataThreshold is the ConsecutiveFailures threshold: how many
	// failed probes in a row make a destination unhealthy (default 2).
	// ActiveConfig.Threshold wins when set.
	MetadataThreshold = "ConsecutiveFailuresHealthPolicy.Threshold"
	// MetadataRateLimit is the failure rate, in (0, 1), above which the
	// passive failure-rate policies mark a destination unhealthy (default
	// 0.3), written as a decimal number ("0.25", ".5", "5e-1").
	// PassiveConfig.FailureRate wins when set.
	MetadataRateLimit = "TransportFailureRateHealthPolicy.RateLimit"
)

// Defaults, applied to zero fields.
const (
	DefaultInterval    = 15 * time.Second
	DefaultTimeout     = 10 * time.Second
	DefaultPath        = "/"
	DefaultThreshold   = 2
	DefaultWindow      = 60 * time.Second
	DefaultMinRequests = 10
	DefaultFailureRate = 0.3

	// MinWindow is the shortest passive window: shorter ones judge a
	// destination on the requests of a few milliseconds.
	MinWindow = 10 * time.Millisecond
)

// Config is one cluster's health-check configuration. The zero value checks
// nothing and keeps every destination available unless a verdict says
// otherwise, falling back to all of them when none is healthy
// (HealthyOrPanic). Zero fields take the documented defaults.
type Config struct {
	// Availability names the policy that computes the available set:
	// HealthyOrPanic (the default) or HealthyAndUnknown, or one registered
	// in [Options.Availability].
	Availability string
	Active       ActiveConfig
	Passive      PassiveConfig
	Outlier      OutlierConfig
	// ProbeFirst keeps a new destination (or one whose address changed) out
	// of rotation until its first probe passes, instead of routing to it at
	// once; it needs active checks. It takes effect through
	// [Config.InitialActiveHealth], which the publisher passes to the
	// upstream registry.
	ProbeFirst bool
	// Metadata is the cluster's metadata; policies read parameters from it
	// ([MetadataThreshold], [MetadataRateLimit]). It is not copied.
	Metadata map[string]string
}

// ActiveConfig configures active probing.
type ActiveConfig struct {
	// Enabled turns probing on.
	Enabled bool
	// Interval is the time between the starts of two probing rounds; 0
	// means 15 s. A round that outlasts it delays the next one.
	Interval time.Duration
	// Timeout bounds each probe; 0 means 10 s.
	Timeout time.Duration
	// Policy names the policy that turns probe results into verdicts:
	// ConsecutiveFailures (the default) or one registered in
	// [Options.ActivePolicies].
	Policy string
	// Path is the probe path ("/health"); empty probes "/".
	Path string
	// Query is the probe query, with or without the leading "?".
	Query string
	// Threshold is the number of failed probes in a row that makes a
	// destination unhealthy under ConsecutiveFailures; 0 means the
	// cluster's [MetadataThreshold], or 2.
	Threshold int
}

// PassiveConfig configures passive checks: verdicts from the outcomes of
// proxied requests.
type PassiveConfig struct {
	// Enabled turns passive checks on.
	Enabled bool
	// Policy names the policy: TransportFailureRate (the default: transport
	// failures only), FailureRateWith5xx (5xx answers count too), or one
	// registered in [Options.PassivePolicies].
	Policy string
	// Window is the sliding window over which outcomes count; 0 means 60 s.
	// It must be at least [MinWindow].
	Window time.Duration
	// MinRequests is how many outcomes the window must hold before the
	// rate is judged; 0 means 10.
	MinRequests int
	// FailureRate is the share of failed requests, in (0, 1), above which a
	// destination is marked unhealthy; 0 means the cluster's
	// [MetadataRateLimit], or 0.3.
	FailureRate float64
	// ReactivationPeriod is how long a destination marked unhealthy stays
	// out before it returns to Unknown; 0 means the window. It is never
	// shorter than the window, so that failures counted before the verdict
	// have left the window when it ends; [Config.Validate] warns when the
	// window lengthens it.
	ReactivationPeriod time.Duration
	// KeepUntilReactivation keeps a passive verdict for its whole period
	// even when an active probe passes meanwhile. By default a passing
	// probe ends the passive verdict early.
	KeepUntilReactivation bool
}

// InitialActiveHealth returns the active verdict that destinations created
// under this config start with: Unhealthy with [Config.ProbeFirst] (and
// probing on), otherwise Unknown. The publisher sets it as
// [upstream.ClusterConfig.InitialActiveHealth].
func (c Config) InitialActiveHealth() upstream.HealthState {
	if c.Active.Enabled && c.ProbeFirst {
		return upstream.Unhealthy
	}
	return upstream.Unknown
}

// Validate checks c against the built-in policies and returns every error
// and every warning, each a *[ValidationError] with a path relative to c.
// Errors refuse the config; warnings describe a setting that takes effect
// differently from how it reads. Use [Monitor.Validate] when custom policies
// are registered.
func (c Config) Validate() (errs, warnings []error) {
	_, errs, warnings = resolve(c, nil)
	return errs, warnings
}

// settings is a Config with defaults applied and names resolved.
type settings struct {
	avail upstream.AvailabilityFunc

	active struct {
		enabled           bool
		interval, timeout time.Duration
		policy            ActivePolicy
		path, query       string
		threshold         int
	}
	passive struct {
		enabled      bool
		policy       PassivePolicy
		window       time.Duration
		minRequests  int64
		rateLimit    float64
		reactivation time.Duration
		keep         bool
	}
	outlier   outlierSettings
	metadata  map[string]string
	transport http.RoundTripper
}

// resolve applies defaults and names (built-in ones, then o's) to c, on a
// copy, in one place.
func resolve(c Config, o *Options) (*settings, []error, []error) {
	var errs, warns problem.List
	s := &settings{metadata: c.Metadata}

	switch c.Availability {
	case "", AvailabilityHealthyOrPanic:
		s.avail = upstream.HealthyOrPanic
	case AvailabilityHealthyAndUnknown:
		s.avail = upstream.HealthyAndUnknown
	default:
		if o != nil && o.Availability[c.Availability] != nil {
			s.avail = o.Availability[c.Availability]
		} else {
			errs.Add(CodeAvailabilityUnknown, "availability", unknown("availability policy", c.Availability, availabilityNames[:]))
		}
	}

	a := c.Active
	sa := &s.active
	sa.enabled = a.Enabled
	sa.interval = orDefault(a.Interval, DefaultInterval)
	sa.timeout = orDefault(a.Timeout, DefaultTimeout)
	if a.Interval < 0 {
		errs.Add(CodeActiveIntervalInvalid, "active.interval", "interval must not be negative (0 means 15s)")
	}
	if a.Timeout < 0 {
		errs.Add(CodeActiveTimeoutInvalid, "active.timeout", "timeout must not be negative (0 means 10s)")
	} else if a.Enabled && a.Interval >= 0 && sa.timeout > sa.interval {
		warns.Add(CodeActiveTimeoutExceedsInterval, "active.timeout",
			fmt.Sprintf("timeout %v is longer than the interval %v: a slow round delays the next one", sa.timeout, sa.interval))
	}
	switch a.Policy {
	case "", ActiveConsecutiveFailures:
		sa.policy = ConsecutiveFailures{}
	default:
		if o != nil && o.ActivePolicies[a.Policy] != nil {
			sa.policy = o.ActivePolicies[a.Policy]
		} else {
			errs.Add(CodeActivePolicyUnknown, "active.policy", unknown("active policy", a.Policy, activePolicyNames[:]))
		}
	}
	sa.path = a.Path
	if sa.path == "" {
		sa.path = DefaultPath
	} else if sa.path[0] != '/' || strings.ContainsAny(sa.path, "?# ") || hasCTL(sa.path) {
		errs.Add(CodeActivePathInvalid, "active.path", strconv.Quote(a.Path)+": a path starts with / and holds no ?, #, space or control character (the query has a field of its own)")
	}
	sa.query = strings.TrimPrefix(a.Query, "?")
	if strings.ContainsAny(sa.query, "# ") || hasCTL(sa.query) {
		errs.Add(CodeActiveQueryInvalid, "active.query", strconv.Quote(a.Query)+": a query holds no #, space or control character")
	}
	sa.threshold = DefaultThreshold
	switch n, ok := c.threshold(); {
	case a.Threshold < 0:
		errs.Add(CodeActiveThresholdInvalid, "active.threshold", "threshold must not be negative (0 means the metadata value or 2)")
	case !ok:
		errs.Add(CodeActiveThresholdInvalid, "metadata["+MetadataThreshold+"]", "threshold must be a whole number of at least 1")
	default:
		sa.threshold = n
	}
	if c.ProbeFirst && !a.Enabled {
		errs.Add(CodeProbeFirstInactive, "probeFirst", "probe-first needs active checks enabled, or new destinations would never enter rotation")
	}

	p := c.Passive
	sp := &s.passive
	sp.enabled = p.Enabled
	sp.keep = p.KeepUntilReactivation
	switch p.Policy {
	case "", PassiveTransportFailureRate:
		sp.policy = FailureRate{}
	case PassiveFailureRateWith5xx:
		sp.policy = FailureRate{Count5xx: true}
	default:
		if o != nil && o.PassivePolicies[p.Policy] != nil {
			sp.policy = o.PassivePolicies[p.Policy]
		} else {
			errs.Add(CodePassivePolicyUnknown, "passive.policy", unknown("passive policy", p.Policy, passivePolicyNames[:]))
		}
	}
	sp.window = orDefault(p.Window, DefaultWindow)
	if p.Window < 0 || (p.Window > 0 && p.Window < MinWindow) {
		errs.Add(CodePassiveWindowInvalid, "passive.window", fmt.Sprintf("window %v is shorter than %v (0 means 60s)", p.Window, MinWindow))
	}
	sp.minRequests = DefaultMinRequests
	if p.MinRequests < 0 {
		errs.Add(CodePassiveMinRequestsInvalid, "passive.minRequests", "minimum request count must not be negative (0 means 10)")
	} else if p.MinRequests > 0 {
		sp.minRequests = int64(p.MinRequests)
	}
	sp.rateLimit = DefaultFailureRate
	switch f, ok := c.failureRate(); {
	case !(p.FailureRate >= 0 && p.FailureRate < 1):
		errs.Add(CodePassiveFailureRateInvalid, "passive.failureRate", strconv.FormatFloat(p.FailureRate, 'g', -1, 64)+" is not in (0, 1) (0 means the metadata value or 0.3)")
	case !ok:
		errs.Add(CodePassiveFailureRateInvalid, "metadata["+MetadataRateLimit+"]", "failure rate must be a decimal number in (0, 1)")
	default:
		sp.rateLimit = f
	}
	sp.reactivation = reactivationPeriod(p.ReactivationPeriod, sp.window)
	switch {
	case p.ReactivationPeriod < 0:
		errs.Add(CodePassiveReactivationInvalid, "passive.reactivationPeriod", "reactivation period must not be negative (0 means the window)")
	case orDefault(p.ReactivationPeriod, sp.window) < sp.window && p.Enabled:
		warns.Add(CodePassiveReactivationRaised, "passive.reactivationPeriod",
			fmt.Sprintf("reactivation period %v is shorter than the %v detection window: destinations return after %v; shorten passive.window to return sooner",
				p.ReactivationPeriod, sp.window, sp.window))
	}
	resolveOutlier(c.Outlier, &s.outlier, &errs, &warns)
	return s, errorList(errs), errorList(warns)
}

// Resolve returns c as the monitor reads it: every zero field that has a
// default holds the value it stands for, and so does every field the
// monitor changes. Policy and availability names are the built-in
// defaults; intervals, timeout, path, window and minimum count the
// documented defaults; the query has no leading "?"; Threshold and
// FailureRate are the cluster's [MetadataThreshold] and
// [MetadataRateLimit] when set, else the defaults; ReactivationPeriod is
// the window when 0 or shorter. A value that [Config.Validate] refuses is
// left as it is, and a threshold or failure rate that would come from a
// metadata value Validate refuses stays 0. Metadata is kept, not copied.
//
// It is the one place the defaults are resolved: a config document's
// canonical form leaves out exactly the values Resolve would fill in.
func (c Config) Resolve() Config {
	r := c
	if r.Availability == "" {
		r.Availability = AvailabilityHealthyOrPanic
	}
	a := &r.Active
	if a.Policy == "" {
		a.Policy = ActiveConsecutiveFailures
	}
	if a.Interval == 0 {
		a.Interval = DefaultInterval
	}
	if a.Timeout == 0 {
		a.Timeout = DefaultTimeout
	}
	if a.Path == "" {
		a.Path = DefaultPath
	}
	a.Query = strings.TrimPrefix(a.Query, "?")
	if a.Threshold == 0 {
		a.Threshold, _ = c.threshold()
	}
	p := &r.Passive
	if p.Policy == "" {
		p.Policy = PassiveTransportFailureRate
	}
	if p.Window == 0 {
		p.Window = DefaultWindow
	}
	if p.MinRequests == 0 {
		p.MinRequests = DefaultMinRequests
	}
	if p.FailureRate == 0 {
		p.FailureRate, _ = c.failureRate()
	}
	if p.ReactivationPeriod >= 0 {
		p.ReactivationPeriod = reactivationPeriod(p.ReactivationPeriod, p.Window)
	}
	o := &r.Outlier
	if o.BaseEjectionTime == 0 {
		o.BaseEjectionTime = DefaultBaseEjectionTime
	}
	if o.MaxEjectionTime == 0 {
		o.MaxEjectionTime = DefaultMaxEjectionTime
	}
	if o.MaxEjectionPercent == 0 {
		o.MaxEjectionPercent = DefaultMaxEjectionPercent
	}
	return r
}

// threshold returns the ConsecutiveFailures threshold c stands for: its
// own when set, else the metadata's, else the default. It reports false
// (and 0) when the threshold would come from a metadata value that is not
// one; a negative threshold is returned as it is.
func (c Config) threshold() (int, bool) {
	if c.Active.Threshold != 0 {
		return c.Active.Threshold, true
	}
	v, ok := c.Metadata[MetadataThreshold]
	if !ok {
		return DefaultThreshold, true
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// failureRate is threshold for the passive failure rate.
func (c Config) failureRate() (float64, bool) {
	if c.Passive.FailureRate != 0 {
		return c.Passive.FailureRate, true
	}
	v, ok := c.Metadata[MetadataRateLimit]
	if !ok {
		return DefaultFailureRate, true
	}
	v = strings.TrimSpace(v)
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !decimal(v) || !(f > 0 && f < 1) {
		return 0, false
	}
	return f, true
}

// reactivationPeriod returns the reactivation period of d under window: the
// window when d is 0, and never shorter than the window, so that failures
// counted before a verdict have left the window when it ends.
func reactivationPeriod(d, window time.Duration) time.Duration {
	return max(orDefault(d, window), window)
}

func unknown(what, name string, builtin []string) string {
	return "unknown " + what + " " + strconv.Quote(name) + " (want " + strings.Join(builtin, ", ") + " or a registered one)"
}

func errorList(l problem.List) []error {
	if len(l) == 0 {
		return nil
	}
	out := make([]error, len(l))
	for i, p := range l {
		out[i] = p
	}
	return out
}

// decimal reports whether s holds only what a decimal number is written
// with: digits, sign, point and exponent. strconv.ParseFloat also reads
// hexadecimal, underscores and words such as "Inf".
func decimal(s string) bool {
	return strings.Trim(s, "0123456789+-.eE") == ""
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}
