package balance

import "github.com/paduraksa/paduraksa/internal/problem"

// ValidationError is one problem found in a balancing or affinity config:
// a stable Code (one of the Code* constants), a Path relative to the
// config that was validated ("policy", "cookie.sameSite"), so that a
// caller that embeds the config can put its own path in front
// ("upstreams[3].loadBalancing"), and a Msg for people. It is the one
// problem type of the library's configs: errors.As finds it whichever
// package reported it.
type ValidationError = problem.Error

// Codes of [ValidationError], by the config and field they are about.
// They are stable: tools and tests may branch on them.
//
//	code                                      path (relative to)               meaning
//	balance.policy.unknown                    policy (Config)                  neither a built-in name (PolicyNames) nor registered
//	balance.hash.unused                       hash                             hash settings on a policy other than ConsistentHash
//	balance.hash.source.unknown               hash.source                      not Header, Cookie or empty
//	balance.hash.name.invalid                 hash.name                        a header or cookie source without a token name
//	balance.hash.name.unused                  hash.name                        a name on the client-address source
//	balance.spillover.invalid                 spillover                        negative
//	balance.spillover.unused                  spillover                        spillover on a policy other than PreferLocalZone
//	balance.slowStart.invalid                 slowStart                        negative
//	balance.affinity.mode.unknown             mode (AffinityConfig)            not an AffinityModeNames name
//	balance.affinity.keyName.invalid          keyName                          not a token
//	balance.affinity.failurePolicy.unknown    failurePolicy                    not an AffinityFailurePolicyNames name
//	balance.affinity.cookie.unused            cookie                           cookie settings in Header mode
//	balance.affinity.cookie.path.invalid      cookie.path                      not starting with /, or a control, non-ASCII byte or ;
//	balance.affinity.cookie.domain.invalid    cookie.domain                    not a host name or IP address (a leading dot is allowed)
//	balance.affinity.cookie.secure.unknown    cookie.secure                    not a CookieSecureNames name
//	balance.affinity.cookie.sameSite.unknown  cookie.sameSite                  not a CookieSameSiteNames name
//	balance.affinity.cookie.sameSite.insecure cookie.sameSite                  None without secure Always: browsers drop it on plain HTTP
//	balance.affinity.cookie.maxAge.invalid    cookie.maxAge                    negative, or not whole seconds
const (
	CodePolicyUnknown                  = "balance.policy.unknown"
	CodeHashUnused                     = "balance.hash.unused"
	CodeHashSourceUnknown              = "balance.hash.source.unknown"
	CodeHashNameInvalid                = "balance.hash.name.invalid"
	CodeHashNameUnused                 = "balance.hash.name.unused"
	CodeSpilloverInvalid               = "balance.spillover.invalid"
	CodeSpilloverUnused                = "balance.spillover.unused"
	CodeSlowStartInvalid               = "balance.slowStart.invalid"
	CodeAffinityModeUnknown            = "balance.affinity.mode.unknown"
	CodeAffinityKeyNameInvalid         = "balance.affinity.keyName.invalid"
	CodeAffinityFailurePolicyUnknown   = "balance.affinity.failurePolicy.unknown"
	CodeAffinityCookieUnused           = "balance.affinity.cookie.unused"
	CodeAffinityCookiePathInvalid      = "balance.affinity.cookie.path.invalid"
	CodeAffinityCookieDomainInvalid    = "balance.affinity.cookie.domain.invalid"
	CodeAffinityCookieSecureUnknown    = "balance.affinity.cookie.secure.unknown"
	CodeAffinityCookieSameSiteUnknown  = "balance.affinity.cookie.sameSite.unknown"
	CodeAffinityCookieSameSiteInsecure = "balance.affinity.cookie.sameSite.insecure"
	CodeAffinityCookieMaxAgeInvalid    = "balance.affinity.cookie.maxAge.invalid"
)
