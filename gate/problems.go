package gate

import (
	"crypto/tls"

	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/problem"
)

// ValidationError is one problem of a gate config: a stable Code (one of
// the Code* constants), a Path relative to the config that was validated
// ("hosts[2].routes[0].prefix" in a [Config], "rules[1].status" in a
// [RuleSetConfig]), so a caller that embeds the config can put its own
// path in front, and a Msg for people. It is the one problem type of the
// library's configs: errors.As finds it whichever package reported it.
type ValidationError = problem.Error

// Codes of [ValidationError]. Paths are relative to the config named in
// the first column's group: a [Config] for New, a policy's config for its
// constructor. They are stable: tools and tests may branch on them.
//
//	code                                  path                                  meaning
//	gate.server.invalid                   server, hosts[i].server               not a valid header value
//	gate.answer.status.invalid            default.status, hosts[i].fixed.status not 200-599 (rules[j].status of a RuleSetConfig too)
//	gate.answer.contentType.invalid       ….contentType                         not a valid header value
//	gate.answer.body.tooLarge             ….body, hosts[i].robots               over MaxAnswerBody
//	gate.prefix.invalid                   trustedProxies[k], probeSources[k]    not a valid prefix (allow[k], deny[k] of an AccessListConfig too)
//	gate.maxPasswordChecks.invalid        maxPasswordChecks                     negative
//	gate.httpsPort.invalid                httpsPort                             not 0 to 65535
//	gate.host.names.empty                 hosts[i].names                        a host without a name
//	gate.host.name.invalid                hosts[i].names[j]                     not a host name, wildcard or IP literal (CanonicalHostName)
//	gate.host.name.duplicate              hosts[i].names[j], reuse[i].names[j]  the same canonical name on another host, or earlier on this one; a second catch-all ("*")
//	gate.host.kind.unknown                hosts[i].kind                         not one of HostKindNames
//	gate.host.redirect.to.invalid         hosts[i].redirect.to                  not an absolute http(s) URL with a host; user info, fragment, or a query with the path appended
//	gate.host.redirect.to.loop            hosts[i].redirect.to                  the target's host is this host, or a redirect host that leads back to it
//	gate.host.redirect.status.invalid     hosts[i].redirect.status              not 301, 302, 303, 307 or 308
//	gate.host.tls.minVersion.invalid      hosts[i].tls.minVersion               not 0 or a version of TLSVersionNames
//	gate.host.tls.altSvc.invalid          hosts[i].tls.altSvc                   without HTTP3 (it would never be sent), or not a valid header value
//	gate.host.tls.clientCAs.missing       hosts[i].tls.clientCAs[k]             RequireClientCert without ClientCAs; a nil or unparsed certificate
//	gate.host.hsts.maxAge.invalid         hosts[i].hsts.maxAge                  negative, or under a second (browsers would read max-age=0: forget HSTS)
//	gate.host.httpsRedirect.status.invalid hosts[i].httpsRedirect.status        not 301, 302, 307 or 308
//	gate.host.httpsRedirect.port.invalid  hosts[i].httpsRedirect.port           not 0 to 65535
//	gate.host.limits.invalid              hosts[i].limits.maxUriBytes, …        negative
//	gate.chain.policy.missing             hosts[i].policies[k], ….routes[j].policies[k]  a use without a policy, or a built-in policy its constructor did not make (a zero &RateLimit{})
//	gate.chain.mode.unknown               ….policies[k].mode                    not one of ModeNames
//	gate.route.prefix.invalid             hosts[i].routes[j].prefix             not a prefix or exact path requests can match (CheckPrefix); a template not starting with /, or whose literal segments no path view has
//	gate.route.prefix.duplicate           hosts[i].routes[j].prefix             the same prefix (in any ASCII case) as another route of the host, neither with other matches or an order
//	gate.route.pathType.unknown           hosts[i].routes[j].pathType           not one of PathTypeNames
//	gate.route.regex.invalid              hosts[i].routes[j].prefix             a regex path that does not compile (RE2)
//	gate.route.regex.empty                hosts[i].routes[j].prefix             a regex path that matches the empty string
//	gate.route.template.segment.invalid   hosts[i].routes[j].prefix             a segment that mixes a literal and a {name}, or a stray brace
//	gate.route.template.name.invalid      hosts[i].routes[j].prefix             an empty name, one with other than letters, digits, _ - ., or over MaxPathValues names
//	gate.route.template.name.duplicate    hosts[i].routes[j].prefix             a name used twice (in any case)
//	gate.route.template.catchAll.invalid  hosts[i].routes[j].prefix             two {**name}, or one that is not the last segment
//	gate.route.match.method.invalid       hosts[i].routes[j].match.methods[k]   not a method token
//	gate.route.match.header.name.invalid  ….match.headers[k].name               not a header name; with "_"; hop-by-hop, Host or a forwarding field (never forwarded as sent)
//	gate.route.match.header.owned         ….match.headers[k].name               a header the route's own policies set (HeaderOwner)
//	gate.route.match.header.type.unknown  ….match.headers[k].type               not one of HeaderMatchTypeNames
//	gate.route.match.query.name.invalid   ….match.query[k].name                 empty
//	gate.route.match.query.type.unknown   ….match.query[k].type                 not one of QueryMatchTypeNames
//	gate.route.match.value.missing        ….match.headers[k].value, ….query[k].value  no value on exact, prefix or regex
//	gate.route.match.value.unused         ….value                               a value on present or absent
//	gate.route.match.value.invalid        ….value                               a regex that does not compile; a header value no request carries
//	gate.route.match.duplicate            hosts[i].routes[j]                    the same path, methods, header and query matches and order as an earlier route (Msg names both)
//	gate.route.target.pathValue.unknown   hosts[i].routes[j].target.…           the target reads a path value the route's path does not capture (PathValueReader; the target's own path follows)
//	gate.route.target.missing             hosts[i].routes[j].target             no target, or one that reports it cannot serve (TargetChecker; its own codes follow under target)
//	gate.route.pathAllow.unknown          hosts[i].routes[j].pathAllow          a bit that is no PathAllow value
//	gate.route.maxBodyBytes.invalid       hosts[i].routes[j].maxBodyBytes       negative
//	gate.route.answer.conflict            hosts[i].routes[j]                    more than one of a target, a redirect and a fixed answer
//	gate.route.redirect.status.invalid    ….routes[j].redirect.status           not 301, 302, 303, 307 or 308
//	gate.route.redirect.scheme.invalid    ….routes[j].redirect.scheme           not http or https
//	gate.route.redirect.host.invalid      ….routes[j].redirect.host             not a host name or IP literal without a port
//	gate.route.redirect.port.invalid      ….routes[j].redirect.port             not 0 to 65535
//	gate.route.redirect.path.invalid      ….routes[j].redirect.path             not a path the gate reads as it is (URL path characters, valid escapes, no empty, . or .. segment), over 256 bytes
//	gate.route.redirect.prefix.invalid    ….routes[j].redirect.prefix           on a route that is no prefix route; not / or a path as for path
//	gate.route.redirect.path.conflict     ….routes[j].redirect.prefix           both a path and a prefix
//	gate.route.redirect.loop              ….routes[j].redirect                  leads back to its own route: same host and listener, a path the route matches
//	gate.accessList.country.invalid       allowCountries[k], denyCountries[k]   not two ASCII letters (ISO 3166-1 alpha-2)
//	gate.accessList.countries.noLookup    allowCountries, denyCountries         country rules without a CountryLookup
//	gate.accessList.user.name.invalid     users[k].name                         empty, or holding ':' or a control character
//	gate.accessList.user.hash.invalid     users[k].hash                         not a bcrypt hash
//	gate.accessList.realm.invalid         realm                                 not a valid header value
//	gate.ruleSet.rule.path.invalid        rules[j].pathPrefix, rules[j].pathExact  a path no request can match (CheckPrefix)
//	gate.ruleSet.rule.method.invalid      rules[j].methods[k]                   not a method token
//	gate.ruleSet.rule.action.unknown      rules[j].action                       not one of RuleActionNames
//	gate.ruleSet.rule.answer.unused       rules[j].status                       an answer on a rule whose action is not respond
//	gate.rateLimit.rate.invalid           requests, period                      not positive
//	gate.rateLimit.burst.invalid          burst                                 negative
//	gate.rateLimit.scope.unknown          scope                                 not one of RateLimitScopeNames
//	gate.rateLimit.tableSize.invalid      tableSize                             negative
//	gate.rateLimit.buckets.unknown        buckets                               not one of RateLimitBucketsNames
//	gate.rateLimit.store.missing          buckets                               cluster buckets on a State without a RateLimitStore
//	gate.forwardAuth.url.invalid          url                                   not an absolute http(s) URL without user info or fragment
//	gate.forwardAuth.timeout.invalid      timeout                               negative
//	gate.forwardAuth.header.invalid       requestHeaders[k], identityHeaders[k] not a header name (identity headers: none with "_")
const (
	CodeServerInvalid                  = "gate.server.invalid"
	CodeAnswerStatusInvalid            = "gate.answer.status.invalid"
	CodeAnswerContentTypeInvalid       = "gate.answer.contentType.invalid"
	CodeAnswerBodyTooLarge             = "gate.answer.body.tooLarge"
	CodePrefixInvalid                  = "gate.prefix.invalid"
	CodeMaxPasswordChecksInvalid       = "gate.maxPasswordChecks.invalid"
	CodeHTTPSPortInvalid               = "gate.httpsPort.invalid"
	CodeHostNamesEmpty                 = "gate.host.names.empty"
	CodeHostNameInvalid                = "gate.host.name.invalid"
	CodeHostNameDuplicate              = "gate.host.name.duplicate"
	CodeHostKindUnknown                = "gate.host.kind.unknown"
	CodeHostRedirectToInvalid          = "gate.host.redirect.to.invalid"
	CodeHostRedirectToLoop             = "gate.host.redirect.to.loop"
	CodeHostRedirectStatusInvalid      = "gate.host.redirect.status.invalid"
	CodeHostTLSMinVersionInvalid       = "gate.host.tls.minVersion.invalid"
	CodeHostTLSAltSvcInvalid           = "gate.host.tls.altSvc.invalid"
	CodeHostTLSClientCAsMissing        = "gate.host.tls.clientCAs.missing"
	CodeHostHSTSMaxAgeInvalid          = "gate.host.hsts.maxAge.invalid"
	CodeHostHTTPSRedirectStatusInvalid = "gate.host.httpsRedirect.status.invalid"
	CodeHostHTTPSRedirectPortInvalid   = "gate.host.httpsRedirect.port.invalid"
	CodeHostLimitsInvalid              = "gate.host.limits.invalid"
	CodeChainPolicyMissing             = "gate.chain.policy.missing"
	CodeChainModeUnknown               = "gate.chain.mode.unknown"
	CodeRoutePrefixInvalid             = "gate.route.prefix.invalid"
	CodeRoutePrefixDuplicate           = "gate.route.prefix.duplicate"
	CodeRouteTargetMissing             = "gate.route.target.missing"
	CodeRoutePathAllowUnknown          = "gate.route.pathAllow.unknown"
	CodeRouteMaxBodyBytesInvalid       = "gate.route.maxBodyBytes.invalid"
	CodeRoutePathTypeUnknown           = "gate.route.pathType.unknown"
	CodeRouteRegexInvalid              = "gate.route.regex.invalid"
	CodeRouteRegexEmpty                = "gate.route.regex.empty"
	CodeRouteTemplateSegmentInvalid    = "gate.route.template.segment.invalid"
	CodeRouteTemplateNameInvalid       = "gate.route.template.name.invalid"
	CodeRouteTemplateNameDuplicate     = "gate.route.template.name.duplicate"
	CodeRouteTemplateCatchAllInvalid   = "gate.route.template.catchAll.invalid"
	CodeRouteMatchMethodInvalid        = "gate.route.match.method.invalid"
	CodeRouteMatchHeaderNameInvalid    = "gate.route.match.header.name.invalid"
	CodeRouteMatchHeaderOwned          = "gate.route.match.header.owned"
	CodeRouteMatchHeaderTypeUnknown    = "gate.route.match.header.type.unknown"
	CodeRouteMatchQueryNameInvalid     = "gate.route.match.query.name.invalid"
	CodeRouteMatchQueryTypeUnknown     = "gate.route.match.query.type.unknown"
	CodeRouteMatchValueMissing         = "gate.route.match.value.missing"
	CodeRouteMatchValueUnused          = "gate.route.match.value.unused"
	CodeRouteMatchValueInvalid         = "gate.route.match.value.invalid"
	CodeRouteMatchDuplicate            = "gate.route.match.duplicate"
	CodeRouteTargetPathValueUnknown    = "gate.route.target.pathValue.unknown"
	CodeRouteAnswerConflict            = "gate.route.answer.conflict"
	CodeRouteRedirectStatusInvalid     = "gate.route.redirect.status.invalid"
	CodeRouteRedirectSchemeInvalid     = "gate.route.redirect.scheme.invalid"
	CodeRouteRedirectHostInvalid       = "gate.route.redirect.host.invalid"
	CodeRouteRedirectPortInvalid       = "gate.route.redirect.port.invalid"
	CodeRouteRedirectPathInvalid       = "gate.route.redirect.path.invalid"
	CodeRouteRedirectPrefixInvalid     = "gate.route.redirect.prefix.invalid"
	CodeRouteRedirectPathConflict      = "gate.route.redirect.path.conflict"
	CodeRouteRedirectLoop              = "gate.route.redirect.loop"
	CodeAccessListCountryInvalid       = "gate.accessList.country.invalid"
	CodeAccessListCountriesNoLookup    = "gate.accessList.countries.noLookup"
	CodeAccessListUserNameInvalid      = "gate.accessList.user.name.invalid"
	CodeAccessListUserHashInvalid      = "gate.accessList.user.hash.invalid"
	CodeAccessListRealmInvalid         = "gate.accessList.realm.invalid"
	CodeRuleSetRulePathInvalid         = "gate.ruleSet.rule.path.invalid"
	CodeRuleSetRuleMethodInvalid       = "gate.ruleSet.rule.method.invalid"
	CodeRuleSetRuleActionUnknown       = "gate.ruleSet.rule.action.unknown"
	CodeRuleSetRuleAnswerUnused        = "gate.ruleSet.rule.answer.unused"
	CodeRateLimitRateInvalid           = "gate.rateLimit.rate.invalid"
	CodeRateLimitBurstInvalid          = "gate.rateLimit.burst.invalid"
	CodeRateLimitScopeUnknown          = "gate.rateLimit.scope.unknown"
	CodeRateLimitTableSizeInvalid      = "gate.rateLimit.tableSize.invalid"
	CodeRateLimitBucketsUnknown        = "gate.rateLimit.buckets.unknown"
	CodeRateLimitStoreMissing          = "gate.rateLimit.store.missing"
	CodeForwardAuthURLInvalid          = "gate.forwardAuth.url.invalid"
	CodeForwardAuthTimeoutInvalid      = "gate.forwardAuth.timeout.invalid"
	CodeForwardAuthHeaderInvalid       = "gate.forwardAuth.header.invalid"
)

// MaxAnswerBody is the largest body of an answer the gate gives itself
// (the default answer, a fixed host's, a respond rule's) and of robots.txt.
const MaxAnswerBody = 64 << 10

var (
	hostKindNames         = enum.Names[HostKind]{"proxy", "redirect", "fixed"}
	modeNames             = enum.Names[Mode]{"enforce", "shadow", "off"}
	ruleActionNames       = enum.Names[RuleAction]{"deny", "allow", "respond"}
	rateLimitScopeNames   = enum.Names[RateLimitScope]{"shared", "route"}
	rateLimitBucketsNames = enum.Names[RateLimitBuckets]{"local", "cluster"}
)

// String returns the kind's name: "proxy", "redirect" or "fixed".
func (k HostKind) String() string { return hostKindNames.Name(k) }

// ParseHostKind returns the kind a name stands for.
func ParseHostKind(name string) (HostKind, bool) { return hostKindNames.Parse(name) }

// HostKindNames returns the names of the host kinds, the default first:
// the names a config document uses.
func HostKindNames() []string { return hostKindNames }

// String returns the mode's name: "enforce", "shadow" or "off".
func (m Mode) String() string { return modeNames.Name(m) }

// ParseMode returns the mode a name stands for.
func ParseMode(name string) (Mode, bool) { return modeNames.Parse(name) }

// ModeNames returns the names of the modes, the default first: the names
// a config document uses.
func ModeNames() []string { return modeNames }

// String returns the action's name: "deny", "allow" or "respond".
func (a RuleAction) String() string { return ruleActionNames.Name(a) }

// ParseRuleAction returns the action a name stands for.
func ParseRuleAction(name string) (RuleAction, bool) { return ruleActionNames.Parse(name) }

// RuleActionNames returns the names of the rule actions, the default
// first: the names a config document uses.
func RuleActionNames() []string { return ruleActionNames }

// String returns the scope's name: "shared" or "route".
func (s RateLimitScope) String() string { return rateLimitScopeNames.Name(s) }

// ParseRateLimitScope returns the scope a name stands for.
func ParseRateLimitScope(name string) (RateLimitScope, bool) { return rateLimitScopeNames.Parse(name) }

// RateLimitScopeNames returns the names of the rate-limit scopes, the
// default first: the names a config document uses.
func RateLimitScopeNames() []string { return rateLimitScopeNames }

// String returns the buckets' name: "local" or "cluster".
func (b RateLimitBuckets) String() string { return rateLimitBucketsNames.Name(b) }

// ParseRateLimitBuckets returns the buckets a name stands for.
func ParseRateLimitBuckets(name string) (RateLimitBuckets, bool) {
	return rateLimitBucketsNames.Parse(name)
}

// RateLimitBucketsNames returns the names of where rate-limit buckets
// live, the default first: the names a config document uses.
func RateLimitBucketsNames() []string { return rateLimitBucketsNames }

var tlsVersions = [...]struct {
	name string
	v    uint16
}{{"1.2", tls.VersionTLS12}, {"1.3", tls.VersionTLS13}}

// ParseTLSVersion returns the TLS version a name ("1.2", "1.3") stands
// for, as [TLSPolicy.MinVersion] takes it.
func ParseTLSVersion(name string) (uint16, bool) {
	for _, t := range tlsVersions {
		if t.name == name {
			return t.v, true
		}
	}
	return 0, false
}

// TLSVersionNames returns the names of the TLS versions a host may require
// at least: the names a config document uses.
func TLSVersionNames() []string {
	out := make([]string, len(tlsVersions))
	for i, t := range tlsVersions {
		out[i] = t.name
	}
	return out
}

func knownTLSVersion(v uint16) bool {
	for _, t := range tlsVersions {
		if t.v == v {
			return true
		}
	}
	return v == 0
}
