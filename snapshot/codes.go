package snapshot

// Problem codes of [ValidationError]. Codes are stable: tools and tests may
// branch on them. Paths use the document's JSON names; i, j and k stand for
// list indexes.
//
//	code                                            path                                              meaning
//	document.syntax                                 ""                                                not JSON or YAML; trailing data; Msg has the line and column when known
//	document.size                                   ""                                                larger than MaxDocumentSize
//	document.empty                                  ""                                                empty or null document (write {} for an empty config)
//	document.field.unknown                          hosts[i].routes[j].bogus                          a field the document does not have (names are case-sensitive)
//	document.field.type                             upstreams[i].health.active.threshold              a value of the wrong JSON type, or a number out of range
//	document.field.duplicate                        global.server                                     a field given twice in one object (YAML: path empty, line in Msg)
//	global.trustedProxy.invalid                     global.trustedProxies[i]                          not an IP address or CIDR prefix (host bits must be zero)
//	global.defaultAnswer.status.invalid             global.defaultAnswer.status                       not 200-599
//	global.defaultAnswer.contentType.invalid        global.defaultAnswer.contentType                  not a valid header value
//	global.defaultAnswer.body.tooLarge              global.defaultAnswer.body                         over 64 KiB
//	global.server.invalid                           global.server                                     not a valid header value
//	host.names.empty                                hosts[i].names                                    a host without names
//	host.name.invalid                               hosts[i].names[j]                                 not a host name, wildcard or IP literal
//	host.name.duplicate                             hosts[i].names[j]                                 the same canonical name earlier in this or another host
//	host.kind.invalid                               hosts[i].kind                                     not proxy, redirect or fixed
//	host.redirect.missing                           hosts[i].redirect                                 a redirect host without a redirect block
//	host.redirect.unexpected                        hosts[i].redirect                                 a redirect block on a host that is not a redirect host
//	host.redirect.to.invalid                        hosts[i].redirect.to                              not an absolute http(s) URL with a host; fragment, user info, or query with the path appended
//	host.redirect.to.loop                           hosts[i].redirect.to                              the target's host is this host, or a redirect host that leads back to it
//	host.redirect.status.invalid                    hosts[i].redirect.status                          not 301, 302, 303, 307 or 308
//	host.fixed.missing                              hosts[i].fixed                                    a fixed host without a fixed block
//	host.fixed.unexpected                           hosts[i].fixed                                    a fixed block on a host that is not a fixed host
//	host.fixed.status.invalid                       hosts[i].fixed.status                             not 200-599
//	host.fixed.contentType.invalid                  hosts[i].fixed.contentType                        not a valid header value
//	host.fixed.body.tooLarge                        hosts[i].fixed.body                               over 64 KiB
//	host.routes.empty                               hosts[i].routes                                   a proxy host without routes
//	host.routes.unexpected                          hosts[i].routes                                   routes on a redirect or fixed host
//	host.accessList.unknown                         hosts[i].accessList                               no access list has this ID
//	host.certificate.unknown                        hosts[i].certificate                              no certificate has this ID
//	host.server.invalid                             hosts[i].server                                   not a valid header value
//	route.id.invalid                                hosts[i].routes[j].id                             not 1-128 of [A-Za-z0-9._-]
//	route.id.duplicate                              hosts[i].routes[j].id                             the same ID earlier in the host
//	route.path.invalid                              hosts[i].routes[j].path                           not starting with "/"; "?", "#", "%", ";", "\\", "//", dot segments, controls or spaces
//	route.path.duplicate                            hosts[i].routes[j].path                           the same prefix ("/a" = "/a/" = "/A") earlier in the host
//	route.allowInPath.invalid                       hosts[i].routes[j].allowInPath[k]                 not a gate.PathAllow name, or listed twice
//	route.upstream.missing                          hosts[i].routes[j].upstream                       no upstream named
//	route.upstream.unknown                          hosts[i].routes[j].upstream                       no upstream has this ID
//	route.hostHeader.invalid                        hosts[i].routes[j].hostHeader                     not client, destination or custom
//	route.hostName.invalid                          hosts[i].routes[j].hostName                       custom without a host name or IP literal (optional port); a name with another mode
//	route.rewrite.stripPrefix.root                  hosts[i].routes[j].rewrite.stripPrefix            stripPrefix on the route "/"
//	route.rewrite.addPrefix.invalid                 hosts[i].routes[j].rewrite.addPrefix              not /segments of URL path characters; trailing /, empty, . or .. segment, loose escape, over 256 bytes
//	route.retry.attempts.invalid                    hosts[i].routes[j].retry.attempts                 not 0 to 5
//	route.retry.bodyLimit.invalid                   hosts[i].routes[j].retry.bodyLimit                not 0 to 1 MiB
//	route.retry.budget.invalid                      hosts[i].routes[j].retry.budget                   not 0 to 1
//	host.compression.minimumSize.invalid            hosts[i].compression.minimumSize                  not 0 to 1 MiB
//	host.compression.encoding.invalid               hosts[i].compression.encodings[k]                 not gzip, zstd or br, or listed twice
//	host.requestId.invalid                          hosts[i].requestId                                not pass, keep or generate
//	headers.tooMany                                 hosts[i].headers.request, ...routes[j].headers.response   over 32 rules in one direction of one layer
//	headers.name.invalid                            hosts[i].headers.request[k].name                  not 1-64 token characters
//	headers.name.reserved                           hosts[i].routes[j].headers.response[k].name       a name the proxy owns (hop-by-hop, Host, X-Forwarded-*, cf-*, X-Request-Id, HSTS, Alt-Svc, Location, ...)
//	headers.name.duplicate                          hosts[i].headers.request[k].name                  a second rule for the name in the same layer and direction
//	headers.operation.invalid                       hosts[i].headers.response[k].operation            not set, add or remove; Set-Cookie other than add
//	headers.value.invalid                           hosts[i].headers.request[k].value                 not 1-4096 visible characters without leading or trailing space
//	headers.value.unexpected                        hosts[i].headers.request[k].value                 a value on a remove
//	upstream.id.missing                             upstreams[i].id                                   empty ID
//	upstream.id.invalid                             upstreams[i].id                                   not 1-128 of [A-Za-z0-9._-]
//	upstream.id.duplicate                           upstreams[i].id                                   the same ID on an earlier upstream
//	upstream.destination.id.missing                 upstreams[i].destinations[j].id                   empty ID
//	upstream.destination.id.invalid                 upstreams[i].destinations[j].id                   not 1-128 of [A-Za-z0-9._-]
//	upstream.destination.id.duplicate               upstreams[i].destinations[j].id                   the same ID earlier in the upstream
//	upstream.destination.address.invalid           upstreams[i].destinations[j].address              see ParseAddress
//	upstream.destination.health.invalid            upstreams[i].destinations[j].health               see ParseAddress
//	upstream.loadBalancing.unknown                  upstreams[i].loadBalancing                        neither built in nor in ValidateOptions.LoadBalancing
//	upstream.http.version.invalid                   upstreams[i].http.version                         not "1.1" or "2"
//	upstream.http.versionPolicy.invalid             upstreams[i].http.versionPolicy                   not "orLower" or "exact"
//	upstream.http.connectTimeout.invalid            upstreams[i].http.connectTimeout                  not a duration between 100ms and 5m
//	upstream.http.idleTimeout.invalid               upstreams[i].http.idleTimeout                     not a duration >= 0
//	upstream.http.tls.trust.invalid                 upstreams[i].http.tls.trust                       not system, pinned or any
//	upstream.http.tls.pins.missing                  upstreams[i].http.tls.pins                        trust "pinned" without pins
//	upstream.http.tls.pins.unexpected               upstreams[i].http.tls.pins                        pins with a trust other than "pinned"
//	upstream.http.tls.pin.invalid                   upstreams[i].http.tls.pins[j]                     not a SHA-256 digest (32 bytes) in base64 or hex
//	upstream.http.tls.serverName.invalid            upstreams[i].http.tls.serverName                  not a host name or IP literal (wildcards refused)
//	upstream.health.active.interval.invalid         upstreams[i].health.active.interval               not a duration > 0
//	upstream.health.active.timeout.invalid          upstreams[i].health.active.timeout                not a duration > 0
//	upstream.health.active.path.invalid             upstreams[i].health.active.path                   not starting with "/"; "?", "#", controls or spaces
//	upstream.health.active.query.invalid            upstreams[i].health.active.query                  "#", controls or spaces
//	upstream.health.active.policy.unknown           upstreams[i].health.active.policy                 not ConsecutiveFailures
//	upstream.health.active.threshold.invalid        upstreams[i].health.active.threshold              negative; or the metadata key ConsecutiveFailuresHealthPolicy.Threshold (with a health monitor) not a whole number >= 1
//	upstream.health.passive.policy.unknown          upstreams[i].health.passive.policy                not TransportFailureRate or TransportFailureRateWith5xx
//	upstream.health.passive.window.invalid          upstreams[i].health.passive.window                not a duration > 0
//	upstream.health.passive.minRequests.invalid     upstreams[i].health.passive.minRequests           negative
//	upstream.health.passive.failureRate.invalid     upstreams[i].health.passive.failureRate           not 0 < rate < 1 (0 is the default); or the metadata key TransportFailureRateHealthPolicy.RateLimit (with a health monitor) not a decimal number in (0, 1)
//	upstream.health.passive.reactivationPeriod.invalid upstreams[i].health.passive.reactivationPeriod not a duration > 0
//	upstream.health.availability.unknown            upstreams[i].health.availability                  not HealthyOrPanic or HealthyAndUnknown
//	upstream.health.probeFirst.needsActive          upstreams[i].health.probeFirst                    probeFirst without active health enabled
//	upstream.health.slowStart.invalid               upstreams[i].health.slowStart                     not a duration >= 0
//	upstream.affinity.mode.unknown                  upstreams[i].affinity.mode                        not HashCookie, ArrCookie or Header
//	upstream.affinity.failurePolicy.unknown         upstreams[i].affinity.failurePolicy               not Redistribute or Return503
//	upstream.affinity.key.invalid                   upstreams[i].affinity.key                         not a cookie or header name (an HTTP token)
//	upstream.affinity.cookie.path.invalid           upstreams[i].affinity.cookie.path                 not starting with "/"; ";", controls or spaces
//	upstream.affinity.cookie.domain.invalid         upstreams[i].affinity.cookie.domain               not a host name
//	upstream.affinity.cookie.secure.unknown         upstreams[i].affinity.cookie.secure               not SameAsRequest, Always or Never
//	upstream.affinity.cookie.sameSite.unknown       upstreams[i].affinity.cookie.sameSite             not Lax, Strict, None or Unspecified
//	upstream.affinity.cookie.sameSite.needsSecure   upstreams[i].affinity.cookie.sameSite             SameSite None without secure "Always" (browsers drop such cookies)
//	upstream.affinity.cookie.maxAge.invalid         upstreams[i].affinity.cookie.maxAge               not a duration > 0
//	accessList.id.missing                           accessLists[i].id                                 empty ID
//	accessList.id.invalid                           accessLists[i].id                                 not 1-128 of [A-Za-z0-9._-]
//	accessList.id.duplicate                         accessLists[i].id                                 the same ID on an earlier access list
//	accessList.prefix.invalid                       accessLists[i].allow[j], accessLists[i].deny[j]   not an IP address or CIDR prefix (host bits must be zero)
//	certificate.id.missing                          certificates[i].id                                empty ID
//	certificate.id.invalid                          certificates[i].id                                not 1-128 of [A-Za-z0-9._-]
//	certificate.id.duplicate                        certificates[i].id                                the same ID on an earlier certificate
//	certificate.file.missing                        certificates[i].certFile, certificates[i].keyFile both files are required (existence is checked when loading)
//	global.probeSource.invalid                     global.probeSources[i]                            not an IP address or CIDR prefix
//	host.policy.unknown                             hosts[i].policies[j]                              no access list, rule set, rate limit or forward auth has the ID
//	host.tls.minVersion.invalid                     hosts[i].tls.minVersion                           not "1.2" or "1.3"
//	host.tls.altSvc.invalid                         hosts[i].tls.altSvc                               set without http3, or not a valid header value
//	host.hsts.maxAge.invalid                        hosts[i].hsts.maxAge                              not a duration of at least 1s
//	host.httpsRedirect.status.invalid               hosts[i].httpsRedirect.status                     not 301, 302, 307 or 308
//	host.httpsRedirect.port.invalid                 hosts[i].httpsRedirect.port                       not 1-65535
//	host.robots.tooLarge                            hosts[i].robots                                   over 64 KiB
//	host.limits.invalid                             hosts[i].limits.<field>                           negative
//	route.policy.unknown                            hosts[i].routes[j].policies[k]                    no policy has the ID
//	route.maxBodyBytes.invalid                      hosts[i].routes[j].maxBodyBytes                   negative
//	policy.id.missing                               ruleSets[i].id, rateLimits[i].id, forwardAuths[i].id  empty ID
//	policy.id.invalid                               ruleSets[i].id, rateLimits[i].id, forwardAuths[i].id  not 1-128 of [A-Za-z0-9._-]
//	policy.id.duplicate                             ruleSets[i].id, rateLimits[i].id, forwardAuths[i].id  an earlier policy of any kind (access lists included) has the ID
//	policy.mode.invalid                             accessLists[i].mode, ruleSets[i].mode, ...        not enforce, shadow or off
//	accessList.user.name.invalid                    accessLists[i].users[j].name                      empty, ':' or control characters
//	accessList.user.passwordHash.invalid            accessLists[i].users[j].passwordHash              not a bcrypt hash
//	accessList.realm.invalid                        accessLists[i].realm                              not a valid header value
//	ruleSet.rule.action.invalid                     ruleSets[i].rules[j].action                       not deny, allow or respond
//	ruleSet.rule.respond.invalid                    ruleSets[i].rules[j].respond[.status|...]         missing for respond, present otherwise, or an invalid answer
//	ruleSet.rule.method.invalid                     ruleSets[i].rules[j].methods[k]                   not a method token
//	ruleSet.rule.path.invalid                       ruleSets[i].rules[j].pathPrefix, .pathExact       a value no request path can match (see route.path.invalid)
//	rateLimit.rate.invalid                          rateLimits[i].requests, rateLimits[i].period      not positive
//	rateLimit.burst.invalid                         rateLimits[i].burst                               negative
//	rateLimit.scope.invalid                         rateLimits[i].scope                               missing, or not shared or route
//	forwardAuth.url.invalid                         forwardAuths[i].url                               not an absolute http(s) URL without user info or fragment
//	forwardAuth.timeout.invalid                     forwardAuths[i].timeout                           not a duration > 0
//	forwardAuth.header.invalid                      forwardAuths[i].requestHeaders[j], ...            not a header name
const (
	CodeDocumentSyntax         = "document.syntax"
	CodeDocumentSize           = "document.size"
	CodeDocumentEmpty          = "document.empty"
	CodeDocumentFieldUnknown   = "document.field.unknown"
	CodeDocumentFieldType      = "document.field.type"
	CodeDocumentFieldDuplicate = "document.field.duplicate"

	CodeGlobalTrustedProxyInvalid             = "global.trustedProxy.invalid"
	CodeGlobalDefaultAnswerStatusInvalid      = "global.defaultAnswer.status.invalid"
	CodeGlobalDefaultAnswerContentTypeInvalid = "global.defaultAnswer.contentType.invalid"
	CodeGlobalDefaultAnswerBodyTooLarge       = "global.defaultAnswer.body.tooLarge"
	CodeGlobalServerInvalid                   = "global.server.invalid"

	CodeHostNamesEmpty              = "host.names.empty"
	CodeHostNameInvalid             = "host.name.invalid"
	CodeHostNameDuplicate           = "host.name.duplicate"
	CodeHostKindInvalid             = "host.kind.invalid"
	CodeHostRedirectMissing         = "host.redirect.missing"
	CodeHostRedirectUnexpected      = "host.redirect.unexpected"
	CodeHostRedirectToInvalid       = "host.redirect.to.invalid"
	CodeHostRedirectToLoop          = "host.redirect.to.loop"
	CodeHostRedirectStatusInvalid   = "host.redirect.status.invalid"
	CodeHostFixedMissing            = "host.fixed.missing"
	CodeHostFixedUnexpected         = "host.fixed.unexpected"
	CodeHostFixedStatusInvalid      = "host.fixed.status.invalid"
	CodeHostFixedContentTypeInvalid = "host.fixed.contentType.invalid"
	CodeHostFixedBodyTooLarge       = "host.fixed.body.tooLarge"
	CodeHostRoutesEmpty             = "host.routes.empty"
	CodeHostRoutesUnexpected        = "host.routes.unexpected"
	CodeHostAccessListUnknown       = "host.accessList.unknown"
	CodeHostCertificateUnknown      = "host.certificate.unknown"
	CodeHostServerInvalid           = "host.server.invalid"

	CodeRouteIDInvalid          = "route.id.invalid"
	CodeRouteIDDuplicate        = "route.id.duplicate"
	CodeRoutePathInvalid        = "route.path.invalid"
	CodeRoutePathDuplicate      = "route.path.duplicate"
	CodeRouteAllowInPathInvalid = "route.allowInPath.invalid"
	CodeRouteUpstreamMissing    = "route.upstream.missing"
	CodeRouteUpstreamUnknown    = "route.upstream.unknown"

	CodeRouteHostHeaderInvalid            = "route.hostHeader.invalid"
	CodeRouteHostNameInvalid              = "route.hostName.invalid"
	CodeRouteRewriteStripPrefixRoot       = "route.rewrite.stripPrefix.root"
	CodeRouteRewriteAddPrefixInvalid      = "route.rewrite.addPrefix.invalid"
	CodeRouteRetryAttemptsInvalid         = "route.retry.attempts.invalid"
	CodeRouteRetryBodyLimitInvalid        = "route.retry.bodyLimit.invalid"
	CodeRouteRetryBudgetInvalid           = "route.retry.budget.invalid"
	CodeHostCompressionMinimumSizeInvalid = "host.compression.minimumSize.invalid"
	CodeHostCompressionEncodingInvalid    = "host.compression.encoding.invalid"
	CodeHostRequestIDInvalid              = "host.requestId.invalid"
	CodeHeadersTooMany                    = "headers.tooMany"
	CodeHeadersNameInvalid                = "headers.name.invalid"
	CodeHeadersNameReserved               = "headers.name.reserved"
	CodeHeadersNameDuplicate              = "headers.name.duplicate"
	CodeHeadersOperationInvalid           = "headers.operation.invalid"
	CodeHeadersValueInvalid               = "headers.value.invalid"
	CodeHeadersValueUnexpected            = "headers.value.unexpected"

	CodeUpstreamIDMissing                         = "upstream.id.missing"
	CodeUpstreamIDInvalid                         = "upstream.id.invalid"
	CodeUpstreamIDDuplicate                       = "upstream.id.duplicate"
	CodeUpstreamDestinationIDMissing              = "upstream.destination.id.missing"
	CodeUpstreamDestinationIDInvalid              = "upstream.destination.id.invalid"
	CodeUpstreamDestinationIDDuplicate            = "upstream.destination.id.duplicate"
	CodeUpstreamDestinationAddressInvalid         = "upstream.destination.address.invalid"
	CodeUpstreamDestinationHealthInvalid          = "upstream.destination.health.invalid"
	CodeUpstreamLoadBalancingUnknown              = "upstream.loadBalancing.unknown"
	CodeUpstreamHTTPVersionInvalid                = "upstream.http.version.invalid"
	CodeUpstreamHTTPVersionPolicyInvalid          = "upstream.http.versionPolicy.invalid"
	CodeUpstreamHTTPConnectTimeoutInvalid         = "upstream.http.connectTimeout.invalid"
	CodeUpstreamHTTPIdleTimeoutInvalid            = "upstream.http.idleTimeout.invalid"
	CodeUpstreamHTTPTLSTrustInvalid               = "upstream.http.tls.trust.invalid"
	CodeUpstreamHTTPTLSPinsMissing                = "upstream.http.tls.pins.missing"
	CodeUpstreamHTTPTLSPinsUnexpected             = "upstream.http.tls.pins.unexpected"
	CodeUpstreamHTTPTLSPinInvalid                 = "upstream.http.tls.pin.invalid"
	CodeUpstreamHTTPTLSServerNameInvalid          = "upstream.http.tls.serverName.invalid"
	CodeUpstreamHealthActiveIntervalInvalid       = "upstream.health.active.interval.invalid"
	CodeUpstreamHealthActiveTimeoutInvalid        = "upstream.health.active.timeout.invalid"
	CodeUpstreamHealthActivePathInvalid           = "upstream.health.active.path.invalid"
	CodeUpstreamHealthActiveQueryInvalid          = "upstream.health.active.query.invalid"
	CodeUpstreamHealthActivePolicyUnknown         = "upstream.health.active.policy.unknown"
	CodeUpstreamHealthActiveThresholdInvalid      = "upstream.health.active.threshold.invalid"
	CodeUpstreamHealthPassivePolicyUnknown        = "upstream.health.passive.policy.unknown"
	CodeUpstreamHealthPassiveWindowInvalid        = "upstream.health.passive.window.invalid"
	CodeUpstreamHealthPassiveMinRequestsInvalid   = "upstream.health.passive.minRequests.invalid"
	CodeUpstreamHealthPassiveFailureRateInvalid   = "upstream.health.passive.failureRate.invalid"
	CodeUpstreamHealthPassiveReactivationInvalid  = "upstream.health.passive.reactivationPeriod.invalid"
	CodeUpstreamHealthAvailabilityUnknown         = "upstream.health.availability.unknown"
	CodeUpstreamHealthProbeFirstNeedsActive       = "upstream.health.probeFirst.needsActive"
	CodeUpstreamHealthSlowStartInvalid            = "upstream.health.slowStart.invalid"
	CodeUpstreamAffinityModeUnknown               = "upstream.affinity.mode.unknown"
	CodeUpstreamAffinityFailurePolicyUnknown      = "upstream.affinity.failurePolicy.unknown"
	CodeUpstreamAffinityKeyInvalid                = "upstream.affinity.key.invalid"
	CodeUpstreamAffinityCookiePathInvalid         = "upstream.affinity.cookie.path.invalid"
	CodeUpstreamAffinityCookieDomainInvalid       = "upstream.affinity.cookie.domain.invalid"
	CodeUpstreamAffinityCookieSecureUnknown       = "upstream.affinity.cookie.secure.unknown"
	CodeUpstreamAffinityCookieSameSiteUnknown     = "upstream.affinity.cookie.sameSite.unknown"
	CodeUpstreamAffinityCookieSameSiteNeedsSecure = "upstream.affinity.cookie.sameSite.needsSecure"
	CodeUpstreamAffinityCookieMaxAgeInvalid       = "upstream.affinity.cookie.maxAge.invalid"

	CodeAccessListIDMissing     = "accessList.id.missing"
	CodeAccessListIDInvalid     = "accessList.id.invalid"
	CodeAccessListIDDuplicate   = "accessList.id.duplicate"
	CodeAccessListPrefixInvalid = "accessList.prefix.invalid"

	CodeCertificateIDMissing   = "certificate.id.missing"
	CodeCertificateIDInvalid   = "certificate.id.invalid"
	CodeCertificateIDDuplicate = "certificate.id.duplicate"
	CodeCertificateFileMissing = "certificate.file.missing"

	CodeGlobalProbeSourceInvalid          = "global.probeSource.invalid"
	CodeHostPolicyUnknown                 = "host.policy.unknown"
	CodeHostTLSMinVersionInvalid          = "host.tls.minVersion.invalid"
	CodeHostTLSAltSvcInvalid              = "host.tls.altSvc.invalid"
	CodeHostHSTSMaxAgeInvalid             = "host.hsts.maxAge.invalid"
	CodeHostHTTPSRedirectStatusInvalid    = "host.httpsRedirect.status.invalid"
	CodeHostHTTPSRedirectPortInvalid      = "host.httpsRedirect.port.invalid"
	CodeHostRobotsTooLarge                = "host.robots.tooLarge"
	CodeHostLimitsInvalid                 = "host.limits.invalid"
	CodeRoutePolicyUnknown                = "route.policy.unknown"
	CodeRouteMaxBodyBytesInvalid          = "route.maxBodyBytes.invalid"
	CodePolicyIDMissing                   = "policy.id.missing"
	CodePolicyIDInvalid                   = "policy.id.invalid"
	CodePolicyIDDuplicate                 = "policy.id.duplicate"
	CodePolicyModeInvalid                 = "policy.mode.invalid"
	CodeAccessListUserNameInvalid         = "accessList.user.name.invalid"
	CodeAccessListUserPasswordHashInvalid = "accessList.user.passwordHash.invalid"
	CodeAccessListRealmInvalid            = "accessList.realm.invalid"
	CodeRuleSetRuleActionInvalid          = "ruleSet.rule.action.invalid"
	CodeRuleSetRuleRespondInvalid         = "ruleSet.rule.respond.invalid"
	CodeRuleSetRuleMethodInvalid          = "ruleSet.rule.method.invalid"
	CodeRuleSetRulePathInvalid            = "ruleSet.rule.path.invalid"
	CodeRateLimitRateInvalid              = "rateLimit.rate.invalid"
	CodeRateLimitBurstInvalid             = "rateLimit.burst.invalid"
	CodeRateLimitScopeInvalid             = "rateLimit.scope.invalid"
	CodeForwardAuthURLInvalid             = "forwardAuth.url.invalid"
	CodeForwardAuthTimeoutInvalid         = "forwardAuth.timeout.invalid"
	CodeForwardAuthHeaderInvalid          = "forwardAuth.header.invalid"
)

// allCodes lists every code, in the order of the table above; the tests
// check that each one has a case.
var allCodes = [...]string{
	CodeDocumentSyntax, CodeDocumentSize, CodeDocumentEmpty,
	CodeDocumentFieldUnknown, CodeDocumentFieldType, CodeDocumentFieldDuplicate,

	CodeGlobalTrustedProxyInvalid, CodeGlobalDefaultAnswerStatusInvalid,
	CodeGlobalDefaultAnswerContentTypeInvalid, CodeGlobalDefaultAnswerBodyTooLarge,
	CodeGlobalServerInvalid,

	CodeHostNamesEmpty, CodeHostNameInvalid, CodeHostNameDuplicate, CodeHostKindInvalid,
	CodeHostRedirectMissing, CodeHostRedirectUnexpected, CodeHostRedirectToInvalid, CodeHostRedirectToLoop,
	CodeHostRedirectStatusInvalid, CodeHostFixedMissing, CodeHostFixedUnexpected,
	CodeHostFixedStatusInvalid, CodeHostFixedContentTypeInvalid, CodeHostFixedBodyTooLarge,
	CodeHostRoutesEmpty, CodeHostRoutesUnexpected, CodeHostAccessListUnknown,
	CodeHostCertificateUnknown, CodeHostServerInvalid,

	CodeRouteIDInvalid, CodeRouteIDDuplicate, CodeRoutePathInvalid, CodeRoutePathDuplicate, CodeRouteAllowInPathInvalid,
	CodeRouteUpstreamMissing, CodeRouteUpstreamUnknown,

	CodeRouteHostHeaderInvalid, CodeRouteHostNameInvalid, CodeRouteRewriteStripPrefixRoot,
	CodeRouteRewriteAddPrefixInvalid, CodeRouteRetryAttemptsInvalid, CodeRouteRetryBodyLimitInvalid,
	CodeRouteRetryBudgetInvalid, CodeHostCompressionMinimumSizeInvalid,
	CodeHostCompressionEncodingInvalid, CodeHostRequestIDInvalid,
	CodeHeadersTooMany, CodeHeadersNameInvalid, CodeHeadersNameReserved, CodeHeadersNameDuplicate,
	CodeHeadersOperationInvalid, CodeHeadersValueInvalid, CodeHeadersValueUnexpected,

	CodeUpstreamIDMissing, CodeUpstreamIDInvalid, CodeUpstreamIDDuplicate,
	CodeUpstreamDestinationIDMissing, CodeUpstreamDestinationIDInvalid,
	CodeUpstreamDestinationIDDuplicate, CodeUpstreamDestinationAddressInvalid,
	CodeUpstreamDestinationHealthInvalid, CodeUpstreamLoadBalancingUnknown,
	CodeUpstreamHTTPVersionInvalid, CodeUpstreamHTTPVersionPolicyInvalid,
	CodeUpstreamHTTPConnectTimeoutInvalid, CodeUpstreamHTTPIdleTimeoutInvalid,
	CodeUpstreamHTTPTLSTrustInvalid, CodeUpstreamHTTPTLSPinsMissing,
	CodeUpstreamHTTPTLSPinsUnexpected, CodeUpstreamHTTPTLSPinInvalid,
	CodeUpstreamHTTPTLSServerNameInvalid,
	CodeUpstreamHealthActiveIntervalInvalid, CodeUpstreamHealthActiveTimeoutInvalid,
	CodeUpstreamHealthActivePathInvalid, CodeUpstreamHealthActiveQueryInvalid,
	CodeUpstreamHealthActivePolicyUnknown, CodeUpstreamHealthActiveThresholdInvalid,
	CodeUpstreamHealthPassivePolicyUnknown, CodeUpstreamHealthPassiveWindowInvalid,
	CodeUpstreamHealthPassiveMinRequestsInvalid, CodeUpstreamHealthPassiveFailureRateInvalid,
	CodeUpstreamHealthPassiveReactivationInvalid, CodeUpstreamHealthAvailabilityUnknown,
	CodeUpstreamHealthProbeFirstNeedsActive, CodeUpstreamHealthSlowStartInvalid,
	CodeUpstreamAffinityModeUnknown, CodeUpstreamAffinityFailurePolicyUnknown,
	CodeUpstreamAffinityKeyInvalid, CodeUpstreamAffinityCookiePathInvalid,
	CodeUpstreamAffinityCookieDomainInvalid, CodeUpstreamAffinityCookieSecureUnknown,
	CodeUpstreamAffinityCookieSameSiteUnknown, CodeUpstreamAffinityCookieSameSiteNeedsSecure,
	CodeUpstreamAffinityCookieMaxAgeInvalid,

	CodeAccessListIDMissing, CodeAccessListIDInvalid, CodeAccessListIDDuplicate,
	CodeAccessListPrefixInvalid,

	CodeCertificateIDMissing, CodeCertificateIDInvalid, CodeCertificateIDDuplicate,
	CodeCertificateFileMissing,

	CodeGlobalProbeSourceInvalid, CodeHostPolicyUnknown, CodeHostTLSMinVersionInvalid,
	CodeHostTLSAltSvcInvalid, CodeHostHSTSMaxAgeInvalid, CodeHostHTTPSRedirectStatusInvalid,
	CodeHostHTTPSRedirectPortInvalid, CodeHostRobotsTooLarge, CodeHostLimitsInvalid,
	CodeRoutePolicyUnknown, CodeRouteMaxBodyBytesInvalid,
	CodePolicyIDMissing, CodePolicyIDInvalid, CodePolicyIDDuplicate, CodePolicyModeInvalid,
	CodeAccessListUserNameInvalid, CodeAccessListUserPasswordHashInvalid, CodeAccessListRealmInvalid,
	CodeRuleSetRuleActionInvalid, CodeRuleSetRuleRespondInvalid, CodeRuleSetRuleMethodInvalid, CodeRuleSetRulePathInvalid,
	CodeRateLimitRateInvalid, CodeRateLimitBurstInvalid, CodeRateLimitScopeInvalid,
	CodeForwardAuthURLInvalid, CodeForwardAuthTimeoutInvalid, CodeForwardAuthHeaderInvalid,
}
