package proxy

import (
	"github.com/paduraksa/paduraksa/internal/problem"
)

// ValidationError is one problem of a forwarding config: a stable Code
// (one of the Code* constants), a Path relative to the config that was
// validated ("rewrite.addPrefix", "requestHeaders[2].name"), so a caller
// that embeds the config can put its own path in front, and a Msg for
// people. It is the one problem type of the library's configs: errors.As
// finds it whichever package reported it.
type ValidationError = problem.Error

// Codes of [ValidationError]. Paths are relative to the config named; a
// header rule's path is its list and index ("responseHeaders[1].value").
// They are stable: tools and tests may branch on them.
//
//	code                                 path                               meaning
//	proxy.route.cluster.missing          cluster, cluster.upstream, ...     RouteConfig (or a Route) without a cluster, its runtime state or its transport
//	proxy.route.hostHeader.unknown       hostHeader                         not one of HostHeaderNames
//	proxy.route.hostName.invalid         hostName                           HostCustom without a host name or IP literal (optional port)
//	proxy.route.hostName.unused          hostName                           a host name with another Host mode
//	proxy.rewrite.stripPrefix.root       rewrite.stripPrefix                "/": there is no prefix to strip
//	proxy.rewrite.stripPrefix.invalid    rewrite.stripPrefix                not a prefix the gate can match (gate.CheckPrefix)
//	proxy.rewrite.addPrefix.invalid      rewrite.addPrefix                  not /segments of URL path characters; trailing /, empty, . or .. segment, loose escape, over 256 bytes
//	proxy.rewrite.template.invalid       rewrite.template                   not starting with /; a brace without its pair, a bad value name; filled, not a path of URL path characters without empty, . or .. segments; over 256 bytes
//	proxy.rewrite.template.conflict      rewrite.template                   a template with stripPrefix or addPrefix
//	proxy.rewrite.replacePrefix.invalid  rewrite.replacePrefix              not / or, its trailing / dropped, what addPrefix takes
//	proxy.rewrite.replacePrefix.conflict rewrite.replacePrefix              with addPrefix or template
//	proxy.rewrite.path.invalid           rewrite.path                       not starting with /; not a path of URL path characters and valid escapes without empty, . or .. segments; over 256 bytes
//	proxy.rewrite.path.conflict          rewrite.path                       with stripPrefix, addPrefix, replacePrefix or template
//	proxy.rewrite.query.tooMany          rewrite.query                      over MaxQueryRules names in set, add and remove together
//	proxy.rewrite.query.name.invalid     rewrite.query.set["n"], .remove[k] an empty name, or over MaxQueryNameBytes
//	proxy.rewrite.query.value.invalid    rewrite.query.add["n"], ...        a value over MaxQueryValueLen bytes
//	proxy.rewrite.query.conflict         rewrite.query.add["n"], ...        a name in two of set, add and remove
//	proxy.timeouts.request.invalid       timeouts.request                   negative
//	proxy.timeouts.perTry.invalid        timeouts.perTry                    negative, or longer than the request timeout
//	proxy.retry.attempts.invalid         retry.attempts                     not 0 to MaxRetryAttempts
//	proxy.retry.bodyLimit.invalid        retry.bodyLimit                    not 0 to 1 MiB
//	proxy.retry.budget.invalid           retry.budget                       not a share in [0, 1]
//	proxy.headers.tooMany                requestHeaders, responseHeaders    over MaxHeaderRules in one direction once a route's rules merge over its site's
//	proxy.header.name.invalid            ...Headers[k].name                 not 1-64 token characters
//	proxy.header.name.reserved           ...Headers[k].name                 a name the proxy or the framing owns (see HeaderRule)
//	proxy.header.name.duplicate          ...Headers[k].name                 a second rule for the name in the same list
//	proxy.header.op.invalid              ...Headers[k].op                   not set, add or remove; Set-Cookie other than add
//	proxy.header.value.invalid           ...Headers[k].value                not 1-4096 visible characters without leading or trailing space
//	proxy.header.value.unexpected        ...Headers[k].value                a value on a remove
//	proxy.compression.minimumSize.invalid compression.minimumSize           not 0 to 1 MiB
//	proxy.compression.encoding.unknown   compression.encodings[k]           not one of EncodingNames
//	proxy.compression.encoding.duplicate compression.encodings[k]           listed twice
//	proxy.site.requestID.unknown         requestID                          not one of RequestIDModeNames
//	proxy.client.version.unknown         version                            not one of HTTPVersionNames
//	proxy.client.versionPolicy.unknown   versionPolicy                      not one of VersionPolicyNames
//	proxy.client.connectTimeout.invalid  connectTimeout                     not 0 (the default) or MinConnectTimeout to MaxConnectTimeout
//	proxy.client.responseHeaderTimeout.invalid responseHeaderTimeout        negative
//	proxy.client.trust.unknown           trust                              not one of TrustNames
//	proxy.client.pins.missing            pins                               TrustPinned without a pin
//	proxy.client.pins.unexpected         pins                               pins with another trust
//	proxy.client.pins.invalid            pins                               not a whole number of 32-byte pins
//	proxy.client.serverName.invalid      serverName                         not a host name or IP literal
//	proxy.client.http1.unknown           http1                              not one of HTTP1ClientNames
//	proxy.route.mirror.invalid           mirror                             a Mirror not made by NewMirror
//	proxy.route.mirror.self              mirror                             a mirror to the route's own upstream
//	proxy.split.sides.missing            sides                              a split without sides (or a Split not made by NewSplit)
//	proxy.split.sides.tooMany            sides                              over MaxSplitSides
//	proxy.split.side.route.missing       sides[k].route                     a side without a route
//	proxy.split.weight.invalid           sides[k].weight                    not 0 to MaxSplitWeight
//	proxy.split.weights.zero             sides                              the weights sum to 0: no request could be placed
//	proxy.split.sticky.conflict          sticky                             more than one of cookie, header and client
//	proxy.split.sticky.name.invalid      sticky.cookie, sticky.header       not a token
//	proxy.split.force.key.invalid        force[k]                           neither or both of header and cookie
//	proxy.split.force.name.invalid       force[k].header, force[k].cookie   not a token
//	proxy.split.force.value.missing      force[k].value                     no value to compare
//	proxy.split.force.side.invalid       force[k].side                      not the index of a side
//	proxy.mirror.percent.invalid         percent                            not 0 to 100
//	proxy.mirror.maxBodyBytes.invalid    maxBodyBytes                       not 0 to MaxMirrorBodyBytes
//	proxy.mirror.maxInFlight.invalid     maxInFlight                        not 0 to MaxMirrorInFlight
//	proxy.mirror.hostName.invalid        hostName                           not a host name or IP literal with an optional port
//	proxy.mirror.timeout.invalid         timeout                            negative
//	proxy.client.cas.missing             cas                                TrustCAFile without CAs
//	proxy.client.cas.unexpected          cas                                CAs with another trust
//	proxy.client.cas.empty               cas                                CAs holding no PEM certificate
//	proxy.client.certificates.missing    certificates                       a ClientCertificate without Certificates to look it up in
//	proxy.client.proxyProtocol.unknown   proxyProtocol                      not one of ProxyProtocolNames
//	proxy.limit.invalid                  maxInFlight, maxPending, ...       a circuit breaker's threshold not 0 (none) to MaxLimit
//	proxy.limits.stats.missing           cluster.stats                      a cluster with Limits but no Stats to count them in
const (
	CodeRouteClusterMissing                = "proxy.route.cluster.missing"
	CodeRouteHostHeaderUnknown             = "proxy.route.hostHeader.unknown"
	CodeRouteHostNameInvalid               = "proxy.route.hostName.invalid"
	CodeRouteHostNameUnused                = "proxy.route.hostName.unused"
	CodeRewriteStripPrefixRoot             = "proxy.rewrite.stripPrefix.root"
	CodeRewriteStripPrefixInvalid          = "proxy.rewrite.stripPrefix.invalid"
	CodeRewriteAddPrefixInvalid            = "proxy.rewrite.addPrefix.invalid"
	CodeRewriteTemplateInvalid             = "proxy.rewrite.template.invalid"
	CodeRewriteTemplateConflict            = "proxy.rewrite.template.conflict"
	CodeRewriteReplacePrefixInvalid        = "proxy.rewrite.replacePrefix.invalid"
	CodeRewriteReplacePrefixConflict       = "proxy.rewrite.replacePrefix.conflict"
	CodeRewritePathInvalid                 = "proxy.rewrite.path.invalid"
	CodeRewritePathConflict                = "proxy.rewrite.path.conflict"
	CodeRewriteQueryTooMany                = "proxy.rewrite.query.tooMany"
	CodeRewriteQueryNameInvalid            = "proxy.rewrite.query.name.invalid"
	CodeRewriteQueryValueInvalid           = "proxy.rewrite.query.value.invalid"
	CodeRewriteQueryConflict               = "proxy.rewrite.query.conflict"
	CodeTimeoutsRequestInvalid             = "proxy.timeouts.request.invalid"
	CodeTimeoutsPerTryInvalid              = "proxy.timeouts.perTry.invalid"
	CodeRetryAttemptsInvalid               = "proxy.retry.attempts.invalid"
	CodeRetryBodyLimitInvalid              = "proxy.retry.bodyLimit.invalid"
	CodeRetryBudgetInvalid                 = "proxy.retry.budget.invalid"
	CodeRetryConnectFailuresUnknown        = "proxy.retry.connectFailures.unknown"
	CodeHeadersTooMany                     = "proxy.headers.tooMany"
	CodeHeaderNameInvalid                  = "proxy.header.name.invalid"
	CodeHeaderNameReserved                 = "proxy.header.name.reserved"
	CodeHeaderNameDuplicate                = "proxy.header.name.duplicate"
	CodeHeaderOpInvalid                    = "proxy.header.op.invalid"
	CodeHeaderValueInvalid                 = "proxy.header.value.invalid"
	CodeHeaderValueUnexpected              = "proxy.header.value.unexpected"
	CodeCompressionMinimumSize             = "proxy.compression.minimumSize.invalid"
	CodeCompressionEncodingUnknown         = "proxy.compression.encoding.unknown"
	CodeCompressionEncodingDuplicate       = "proxy.compression.encoding.duplicate"
	CodeSiteRequestIDUnknown               = "proxy.site.requestID.unknown"
	CodeClientVersionUnknown               = "proxy.client.version.unknown"
	CodeClientVersionPolicyUnknown         = "proxy.client.versionPolicy.unknown"
	CodeClientConnectTimeoutInvalid        = "proxy.client.connectTimeout.invalid"
	CodeClientResponseHeaderTimeoutInvalid = "proxy.client.responseHeaderTimeout.invalid"
	CodeClientTrustUnknown                 = "proxy.client.trust.unknown"
	CodeClientPinsMissing                  = "proxy.client.pins.missing"
	CodeClientPinsUnexpected               = "proxy.client.pins.unexpected"
	CodeClientPinsInvalid                  = "proxy.client.pins.invalid"
	CodeClientServerNameInvalid            = "proxy.client.serverName.invalid"
	CodeClientHTTP1Unknown                 = "proxy.client.http1.unknown"

	CodeRouteMirrorInvalid         = "proxy.route.mirror.invalid"
	CodeRouteMirrorSelf            = "proxy.route.mirror.self"
	CodeSplitSidesMissing          = "proxy.split.sides.missing"
	CodeSplitSidesTooMany          = "proxy.split.sides.tooMany"
	CodeSplitSideRouteMissing      = "proxy.split.side.route.missing"
	CodeSplitWeightInvalid         = "proxy.split.weight.invalid"
	CodeSplitWeightsZero           = "proxy.split.weights.zero"
	CodeSplitStickyConflict        = "proxy.split.sticky.conflict"
	CodeSplitStickyNameInvalid     = "proxy.split.sticky.name.invalid"
	CodeSplitForceKeyInvalid       = "proxy.split.force.key.invalid"
	CodeSplitForceNameInvalid      = "proxy.split.force.name.invalid"
	CodeSplitForceValueMissing     = "proxy.split.force.value.missing"
	CodeSplitForceSideInvalid      = "proxy.split.force.side.invalid"
	CodeMirrorPercentInvalid       = "proxy.mirror.percent.invalid"
	CodeMirrorMaxBodyBytesInvalid  = "proxy.mirror.maxBodyBytes.invalid"
	CodeMirrorMaxInFlightInvalid   = "proxy.mirror.maxInFlight.invalid"
	CodeMirrorHostNameInvalid      = "proxy.mirror.hostName.invalid"
	CodeMirrorTimeoutInvalid       = "proxy.mirror.timeout.invalid"
	CodeClientCAsMissing           = "proxy.client.cas.missing"
	CodeClientCAsUnexpected        = "proxy.client.cas.unexpected"
	CodeClientCAsEmpty             = "proxy.client.cas.empty"
	CodeClientCertificatesMissing  = "proxy.client.certificates.missing"
	CodeClientProxyProtocolUnknown = "proxy.client.proxyProtocol.unknown"
)

// Codes of the circuit breakers ([Limits], [ClientConfig.MaxPending],
// [ClientConfig.MaxConnsPerDestination]).
const (
	CodeLimitInvalid       = "proxy.limit.invalid"
	CodeLimitsStatsMissing = "proxy.limits.stats.missing"
)
