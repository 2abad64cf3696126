package config

import (
	"slices"

	"github.com/paduraksa/paduraksa/internal/strictdecode"
)

// Problem codes of [ValidationError] that the document itself owns: its
// syntax ([Decode]), the values only it spells (durations, addresses,
// prefixes, pins), IDs, duplicates, references between objects, and which
// blocks go together ([Check]). Every other setting belongs to the
// package whose behaviour it changes, and its problems carry that
// package's code at the document's path: "health.passive.window.invalid" at
// "upstreams[2].health.passive.window", "gate.host.name.duplicate" at
// "hosts[1].names[0]", "proxy.header.name.reserved" at
// "hosts[0].routes[1].headers.request[0].name". A name the document does
// not know (a policy, a mode) is reported with the owner's "unknown" code.
// The owners list their codes: balance/errors.go, health/errors.go,
// gate/problems.go, proxy/problems.go, tlsselect/config.go. What only a
// compile can tell (a certificate's source, a file it reads, an HTTP
// version the destinations cannot be spoken to in) carries the codes of
// package snapshot, listed in snapshot/codes.go.
//
// Codes are stable: tools and tests may branch on them. Paths use the
// document's JSON names; i, j and k stand for list indexes.
//
//	code                                  path                                        meaning
//	document.syntax                       ""                                          not JSON or YAML; trailing data; Msg has the line and column when known
//	document.size                         "", upstreams, ...                          larger than MaxDocumentSize; or lists of more elements than its bytes carry (at the list)
//	document.problems.tooMany             ""                                          more than 1000 problems: the first 1000 come before it
//	document.empty                        ""                                          empty or null document (write {} for an empty config)
//	document.field.unknown                hosts[i].routes[j].bogus                    a field the document does not have (names are case-sensitive)
//	document.field.type                   upstreams[i].health.active.threshold        a value of the wrong JSON type, or a number out of range
//	document.field.duplicate              global.server                               a field given twice in one object (YAML: path empty, line in Msg)
//	document.duration.invalid             upstreams[i].http.connectTimeout, ...       not a duration in Go syntax ("10s", "1m30s"), or negative
//	global.trustedProxy.invalid           global.trustedProxies[i]                    not an IP address or CIDR prefix (host bits must be zero)
//	global.probeSource.invalid            global.probeSources[i]                      the same, for a probe source
//	host.redirect.missing                 hosts[i].redirect                           a redirect host without a redirect block
//	host.redirect.unexpected              hosts[i].redirect                           a redirect block on a host that is not a redirect host
//	host.fixed.missing                    hosts[i].fixed                              a fixed host without a fixed block
//	host.fixed.unexpected                 hosts[i].fixed                              a fixed block on a host that is not a fixed host
//	host.routes.empty                     hosts[i].routes                             a proxy host without routes
//	host.routes.unexpected                hosts[i].routes                             routes on a redirect or fixed host
//	host.forwarding.unused                hosts[i].headers.request, .compression, ... request headers, compression or keepUnderscoreHeaders on a host that forwards nothing
//	host.accessList.unknown               hosts[i].accessList                         no access list has this ID
//	host.policy.unknown                   hosts[i].policies[j]                        no policy has this ID
//	host.hsts.maxAge.missing              hosts[i].hsts.maxAge                        an hsts block without a max-age (it would send nothing)
//	host.tls.unused                       hosts[i].tls                                a tls block on a host without a certificate when there is no default certificate: no handshake is made for it
//	route.id.invalid                      hosts[i].routes[j].id                       not 1-128 of [A-Za-z0-9._-]
//	route.id.duplicate                    hosts[i].routes[j].id                       the same ID earlier in the host
//	route.allowInPath.duplicate           hosts[i].routes[j].allowInPath[k]           a name listed twice
//	route.upstream.missing                hosts[i].routes[j].upstream                 no upstream named
//	route.upstream.unknown                hosts[i].routes[j].upstream                 no upstream has this ID
//	route.policy.unknown                  hosts[i].routes[j].policies[k]              no policy has this ID
//	route.rewrite.stripPrefix.pathType    hosts[i].routes[j].rewrite.stripPrefix      stripPrefix on a template or regex path, which is no prefix to strip
//	route.backends.conflict               hosts[i].routes[j].backends                 both upstream and backends
//	route.backend.upstream.missing        hosts[i].routes[j].backends[k].upstream     a backend without an upstream
//	route.backend.upstream.unknown        hosts[i].routes[j].backends[k].upstream     no upstream has this ID
//	route.backend.upstream.duplicate      hosts[i].routes[j].backends[k].upstream     the same upstream on an earlier backend
//	route.split.unexpected                hosts[i].routes[j].split                    a split on a route without backends
//	route.split.force.upstream.unknown    hosts[i].routes[j].split.force[k].upstream  not one of the route's backends
//	route.mirror.upstream.missing         hosts[i].routes[j].mirror.upstream          a mirror without an upstream
//	route.mirror.upstream.unknown         hosts[i].routes[j].mirror.upstream          no upstream has this ID
//	route.mirror.self                     hosts[i].routes[j].mirror.upstream          the route's own upstream, or one of its backends
//	route.answer.conflict                 hosts[i].routes[j].fixed, ….upstream        more than one of upstream, backends, redirect and fixed
//	route.forwarding.unused               hosts[i].routes[j].rewrite, .retry, .timeouts, .hostHeader, .hostName, .mirror  forwarding settings on a redirect or fixed route
//	route.rewrite.replacePrefix.conflict  hosts[i].routes[j].rewrite.replacePrefix    replacePrefix with stripPrefix
//	route.rewrite.replacePrefix.pathType  hosts[i].routes[j].rewrite.replacePrefix    replacePrefix on an exact, template or regex path
//	upstream.id.missing                   upstreams[i].id                             empty ID
//	upstream.id.invalid                   upstreams[i].id                             not 1-128 of [A-Za-z0-9._-]
//	upstream.id.duplicate                 upstreams[i].id                             the same ID on an earlier upstream
//	upstream.destination.id.missing       upstreams[i].destinations[j].id             empty ID
//	upstream.destination.id.invalid       upstreams[i].destinations[j].id             not 1-128 of [A-Za-z0-9._-]
//	upstream.destination.id.duplicate     upstreams[i].destinations[j].id             the same ID earlier in the upstream
//	upstream.destination.address.invalid  upstreams[i].destinations[j].address        see ParseAddress
//	upstream.destination.health.invalid   upstreams[i].destinations[j].health         see ParseAddress
//	upstream.destination.health.scheme    upstreams[i].destinations[j].health         another scheme than the address's: probes speak the destination's
//	upstream.http.tls.pin.invalid         upstreams[i].http.tls.pins[j]               not a SHA-256 digest (32 bytes) in base64 or hex
//	upstream.http.tls.clientCertificate.unknown  upstreams[i].http.tls.clientCertificate  no certificate of certificates[] has this ID
//	upstream.http.tls.clientCertificate.plainHTTP  upstreams[i].http.tls.clientCertificate  a destination is http://: no TLS connection would present it
//	accessList.prefix.invalid             accessLists[i].allow[k], .deny[k]           not an IP address or CIDR prefix (host bits must be zero)
//	policy.id.missing                     accessLists[i].id, ruleSets[i].id, ...      empty ID
//	policy.id.invalid                     rateLimits[i].id, ...                       not 1-128 of [A-Za-z0-9._-]
//	policy.id.duplicate                   forwardAuths[i].id, ...                     an ID of an earlier policy (the four kinds share one namespace)
//	ruleSet.rule.respond.missing          ruleSets[i].rules[j].respond                action respond without a respond block
//	ruleSet.rule.respond.unexpected       ruleSets[i].rules[j].respond                a respond block on a rule whose action is not respond
//	rateLimit.scope.missing               rateLimits[i].scope                         no scope: shared and route mean different limits, so one must be chosen
const (
	CodeDocumentSyntax          = strictdecode.CodeSyntax
	CodeDocumentSize            = strictdecode.CodeSize
	CodeDocumentTooManyProblems = strictdecode.CodeTooManyProblems
	CodeDocumentEmpty           = strictdecode.CodeEmpty
	CodeDocumentFieldUnknown    = strictdecode.CodeFieldUnknown
	CodeDocumentFieldType       = strictdecode.CodeFieldType
	CodeDocumentFieldDuplicate  = strictdecode.CodeFieldDuplicate
	CodeDocumentDurationInvalid = "document.duration.invalid"

	CodeGlobalTrustedProxyInvalid = "global.trustedProxy.invalid"
	CodeGlobalProbeSourceInvalid  = "global.probeSource.invalid"

	CodeHostRedirectMissing    = "host.redirect.missing"
	CodeHostRedirectUnexpected = "host.redirect.unexpected"
	CodeHostFixedMissing       = "host.fixed.missing"
	CodeHostFixedUnexpected    = "host.fixed.unexpected"
	CodeHostRoutesEmpty        = "host.routes.empty"
	CodeHostRoutesUnexpected   = "host.routes.unexpected"
	CodeHostForwardingUnused   = "host.forwarding.unused"
	CodeHostAccessListUnknown  = "host.accessList.unknown"
	CodeHostPolicyUnknown      = "host.policy.unknown"
	CodeHostHSTSMaxAgeMissing  = "host.hsts.maxAge.missing"
	CodeHostTLSUnused          = "host.tls.unused"

	CodeRouteIDInvalid            = "route.id.invalid"
	CodeRouteIDDuplicate          = "route.id.duplicate"
	CodeRouteAllowInPathDuplicate = "route.allowInPath.duplicate"
	CodeRouteUpstreamMissing      = "route.upstream.missing"
	CodeRouteUpstreamUnknown      = "route.upstream.unknown"
	CodeRoutePolicyUnknown        = "route.policy.unknown"
	CodeRouteStripPrefixPathType  = "route.rewrite.stripPrefix.pathType"

	CodeRouteBackendsConflict          = "route.backends.conflict"
	CodeRouteBackendUpstreamMissing    = "route.backend.upstream.missing"
	CodeRouteBackendUpstreamUnknown    = "route.backend.upstream.unknown"
	CodeRouteBackendUpstreamDuplicate  = "route.backend.upstream.duplicate"
	CodeRouteSplitUnexpected           = "route.split.unexpected"
	CodeRouteSplitForceUpstreamUnknown = "route.split.force.upstream.unknown"
	CodeRouteMirrorUpstreamMissing     = "route.mirror.upstream.missing"
	CodeRouteMirrorUpstreamUnknown     = "route.mirror.upstream.unknown"
	CodeRouteMirrorSelf                = "route.mirror.self"
	CodeRouteAnswerConflict            = "route.answer.conflict"
	CodeRouteForwardingUnused          = "route.forwarding.unused"
	CodeRouteReplacePrefixConflict     = "route.rewrite.replacePrefix.conflict"
	CodeRouteReplacePrefixPathType     = "route.rewrite.replacePrefix.pathType"

	CodeUpstreamIDMissing                 = "upstream.id.missing"
	CodeUpstreamIDInvalid                 = "upstream.id.invalid"
	CodeUpstreamIDDuplicate               = "upstream.id.duplicate"
	CodeUpstreamDestinationIDMissing      = "upstream.destination.id.missing"
	CodeUpstreamDestinationIDInvalid      = "upstream.destination.id.invalid"
	CodeUpstreamDestinationIDDuplicate    = "upstream.destination.id.duplicate"
	CodeUpstreamDestinationAddressInvalid = "upstream.destination.address.invalid"
	CodeUpstreamDestinationHealthInvalid  = "upstream.destination.health.invalid"
	CodeUpstreamDestinationHealthScheme   = "upstream.destination.health.scheme"
	CodeUpstreamHTTPTLSPinInvalid         = "upstream.http.tls.pin.invalid"

	CodeUpstreamHTTPTLSClientCertificateUnknown   = "upstream.http.tls.clientCertificate.unknown"
	CodeUpstreamHTTPTLSClientCertificatePlainHTTP = "upstream.http.tls.clientCertificate.plainHTTP"

	CodeAccessListPrefixInvalid = "accessList.prefix.invalid"

	CodePolicyIDMissing   = "policy.id.missing"
	CodePolicyIDInvalid   = "policy.id.invalid"
	CodePolicyIDDuplicate = "policy.id.duplicate"

	CodeRuleSetRuleRespondMissing    = "ruleSet.rule.respond.missing"
	CodeRuleSetRuleRespondUnexpected = "ruleSet.rule.respond.unexpected"
	CodeRateLimitScopeMissing        = "rateLimit.scope.missing"
)

// Codes returns every code of the document's own, in the order of the
// table above: for tools that list them, and for the tests that check
// each one has a case.
func Codes() []string { return slices.Clone(codes[:]) }

var codes = [...]string{
	CodeDocumentSyntax, CodeDocumentSize, CodeDocumentEmpty, CodeDocumentFieldUnknown,
	CodeDocumentFieldType, CodeDocumentFieldDuplicate, CodeDocumentDurationInvalid,
	CodeGlobalTrustedProxyInvalid, CodeGlobalProbeSourceInvalid,
	CodeHostRedirectMissing, CodeHostRedirectUnexpected, CodeHostFixedMissing, CodeHostFixedUnexpected,
	CodeHostRoutesEmpty, CodeHostRoutesUnexpected, CodeHostForwardingUnused, CodeHostAccessListUnknown,
	CodeHostPolicyUnknown, CodeHostHSTSMaxAgeMissing, CodeHostTLSUnused,
	CodeRouteIDInvalid, CodeRouteIDDuplicate, CodeRouteAllowInPathDuplicate, CodeRouteUpstreamMissing,
	CodeRouteUpstreamUnknown, CodeRoutePolicyUnknown, CodeRouteStripPrefixPathType,
	CodeRouteBackendsConflict, CodeRouteBackendUpstreamMissing, CodeRouteBackendUpstreamUnknown,
	CodeRouteBackendUpstreamDuplicate, CodeRouteSplitUnexpected, CodeRouteSplitForceUpstreamUnknown,
	CodeRouteMirrorUpstreamMissing, CodeRouteMirrorUpstreamUnknown, CodeRouteMirrorSelf,
	CodeRouteAnswerConflict, CodeRouteForwardingUnused, CodeRouteReplacePrefixConflict, CodeRouteReplacePrefixPathType,
	CodeUpstreamIDMissing, CodeUpstreamIDInvalid, CodeUpstreamIDDuplicate,
	CodeUpstreamDestinationIDMissing, CodeUpstreamDestinationIDInvalid, CodeUpstreamDestinationIDDuplicate,
	CodeUpstreamDestinationAddressInvalid, CodeUpstreamDestinationHealthInvalid, CodeUpstreamDestinationHealthScheme,
	CodeUpstreamHTTPTLSPinInvalid,
	CodeUpstreamHTTPTLSClientCertificateUnknown, CodeUpstreamHTTPTLSClientCertificatePlainHTTP,
	CodeAccessListPrefixInvalid, CodePolicyIDMissing, CodePolicyIDInvalid, CodePolicyIDDuplicate,
	CodeRuleSetRuleRespondMissing, CodeRuleSetRuleRespondUnexpected, CodeRateLimitScopeMissing,
}
