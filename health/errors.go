package health

import (
	"errors"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// ErrNotNew is returned by the Start and Update of a zero [Monitor]: one
// not made by [New], which has no probe workers to run checks on.
var ErrNotNew = errors.New("health: a Monitor not made by New checks nothing")

// ValidationError is one problem found in a health config: an error that
// refuses the config, or a warning about a setting that takes effect
// differently from how it reads.
//
// Code is stable and safe to branch on (one of the Code* constants, such
// as "health.active.interval.invalid"). Path locates the field relative to
// the validated [Config] ("active.interval"), so a caller that embeds the
// config can prefix its own path ("upstreams[3].health.active.interval").
// Msg is for people. It is the one problem type of the library's configs:
// errors.As finds it whichever package reported it.
type ValidationError = problem.Error

// Codes of [ValidationError]; paths are relative to [Config]. They are
// stable: tools and tests may branch on them.
//
//	code                                        path                           meaning
//	health.availability.unknown                 availability                   neither built in (AvailabilityNames) nor in Options.Availability
//	health.active.interval.invalid              active.interval                negative
//	health.active.timeout.invalid               active.timeout                 negative
//	health.active.timeout.exceedsInterval       active.timeout                 warning: longer than the interval, so a slow round delays the next
//	health.active.policy.unknown                active.policy                  neither built in (ActivePolicyNames) nor in Options.ActivePolicies
//	health.active.path.invalid                  active.path                    not starting with /; ?, #, space or a control character
//	health.active.query.invalid                 active.query                   #, space or a control character
//	health.active.threshold.invalid             active.threshold, metadata[…]  negative; metadata not a whole number of at least 1
//	health.probeFirst.inactive                  probeFirst                     probe-first without active checks: new destinations would never serve
//	health.passive.policy.unknown               passive.policy                 neither built in (PassivePolicyNames) nor in Options.PassivePolicies
//	health.passive.window.invalid               passive.window                 negative, or shorter than MinWindow
//	health.passive.minRequests.invalid          passive.minRequests            negative
//	health.passive.failureRate.invalid          passive.failureRate, metadata[…] not in [0, 1); metadata not a decimal in (0, 1)
//	health.passive.reactivationPeriod.invalid   passive.reactivationPeriod     negative
//	health.passive.reactivationPeriod.raised    passive.reactivationPeriod     warning: shorter than the window, which it is raised to
//	health.outlier.threshold.invalid            outlier.consecutive…           negative
//	health.outlier.ejectionTime.invalid         outlier.*EjectionTime          negative; the maximum shorter than the base
//	health.outlier.maxEjectionPercent.invalid   outlier.maxEjectionPercent     not 0 to 100
//	health.outlier.off                          outlier                        warning: times or share set, but no threshold: nothing is ejected
const (
	CodeAvailabilityUnknown          = "health.availability.unknown"
	CodeActiveIntervalInvalid        = "health.active.interval.invalid"
	CodeActiveTimeoutInvalid         = "health.active.timeout.invalid"
	CodeActiveTimeoutExceedsInterval = "health.active.timeout.exceedsInterval"
	CodeActivePolicyUnknown          = "health.active.policy.unknown"
	CodeActivePathInvalid            = "health.active.path.invalid"
	CodeActiveQueryInvalid           = "health.active.query.invalid"
	CodeActiveThresholdInvalid       = "health.active.threshold.invalid"
	CodeProbeFirstInactive           = "health.probeFirst.inactive"
	CodePassivePolicyUnknown         = "health.passive.policy.unknown"
	CodePassiveWindowInvalid         = "health.passive.window.invalid"
	CodePassiveMinRequestsInvalid    = "health.passive.minRequests.invalid"
	CodePassiveFailureRateInvalid    = "health.passive.failureRate.invalid"
	CodePassiveReactivationInvalid   = "health.passive.reactivationPeriod.invalid"
	CodePassiveReactivationRaised    = "health.passive.reactivationPeriod.raised"
	CodeOutlierThresholdInvalid      = "health.outlier.threshold.invalid"
	CodeOutlierEjectionTimeInvalid   = "health.outlier.ejectionTime.invalid"
	CodeOutlierPercentInvalid        = "health.outlier.maxEjectionPercent.invalid"
	CodeOutlierOff                   = "health.outlier.off"
)
