package snapshot

// Problem codes of [ValidationError] that the document itself owns: its
// syntax, the values only it spells (durations, addresses, prefixes, pins),
// IDs, duplicates, references between objects, and which blocks go
// together. Every other setting belongs to the package whose behaviour it
// changes, and its problems carry that package's code at the document's
// path: "health.passive.window.invalid" at
// "upstreams[2].health.passive.window", "gate.host.name.duplicate" at
// "hosts[1].names[0]", "proxy.header.name.reserved" at
// "hosts[0].routes[1].headers.request[0].name". A name the document does
// not know (a policy, a mode) is reported with the owner's "unknown" code.
// The owners list their codes: balance/errors.go, health/errors.go,
// gate/problems.go, proxy/problems.go, tlsselect/config.go. A file the
// document names (certificates[i].certFile, .keyFile,
// hosts[i].tls.clientCAs) that the file rules refuse carries tlsselect's
// file code at that path: file.notRegular (a directory, device, FIFO or
// socket, after symlinks), file.tooLarge (over tlsselect.MaxFileSize, or
// the document's files together over 64 MiB), file.timeout (not read
// within Compiler.FileTimeout), file.busy (refused at once: earlier
// reads hang in the kernel); see tlsselect/files.go.
//
// Codes are stable: tools and tests may branch on them. Paths use the
// document's JSON names; i, j and k stand for list indexes.
//
//	code                                  path                                        meaning
//	document.syntax                       ""                                          not JSON or YAML; trailing data; Msg has the line and column when known
//	document.size                         ""                                          larger than MaxDocumentSize
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
//	certificate.source.missing            certificates[i], certificates[i].acme       no files, no acme and no source of the gateway's own; acme without Compiler.ACME, or beside files
//	host.tls.clientCAs.unreadable         hosts[i].tls.clientCAs                      the client CA file is missing, cannot be read, or holds no PEM certificate (refused by the file rules: tlsselect's file.* codes)
//	host.tls.unused                       hosts[i].tls                                a tls block on a host without a certificate when there is no default certificate: no handshake is made for it
//	route.id.invalid                      hosts[i].routes[j].id                       not 1-128 of [A-Za-z0-9._-]
//	route.id.duplicate                    hosts[i].routes[j].id                       the same ID earlier in the host
//	route.allowInPath.duplicate           hosts[i].routes[j].allowInPath[k]           a name listed twice
//	route.upstream.missing                hosts[i].routes[j].upstream                 no upstream named
//	route.upstream.unknown                hosts[i].routes[j].upstream                 no upstream has this ID
//	route.policy.unknown                  hosts[i].routes[j].policies[k]              no policy has this ID
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
//	upstream.http.version.plainText       upstreams[i].http.version                   "2" for http:// destinations only, without versionPolicy exact: they get HTTP/1.1 (a warning when https:// ones share the upstream)
//	accessList.prefix.invalid             accessLists[i].allow[k], .deny[k]           not an IP address or CIDR prefix (host bits must be zero)
//	policy.id.missing                     accessLists[i].id, ruleSets[i].id, ...      empty ID
//	policy.id.invalid                     rateLimits[i].id, ...                       not 1-128 of [A-Za-z0-9._-]
//	policy.id.duplicate                   forwardAuths[i].id, ...                     an ID of an earlier policy (the four kinds share one namespace)
//	ruleSet.rule.respond.missing          ruleSets[i].rules[j].respond                action respond without a respond block
//	ruleSet.rule.respond.unexpected       ruleSets[i].rules[j].respond                a respond block on a rule whose action is not respond
//	rateLimit.scope.missing               rateLimits[i].scope                         no scope: shared and route mean different limits, so one must be chosen
//	compile.internal                      any                                         a document the owners accepted and the compiler could not build: a bug
const (
	CodeDocumentSyntax          = "document.syntax"
	CodeDocumentSize            = "document.size"
	CodeDocumentEmpty           = "document.empty"
	CodeDocumentFieldUnknown    = "document.field.unknown"
	CodeDocumentFieldType       = "document.field.type"
	CodeDocumentFieldDuplicate  = "document.field.duplicate"
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
	CodeUpstreamHTTPVersionPlainText      = "upstream.http.version.plainText"

	CodeAccessListPrefixInvalid = "accessList.prefix.invalid"

	CodePolicyIDMissing   = "policy.id.missing"
	CodePolicyIDInvalid   = "policy.id.invalid"
	CodePolicyIDDuplicate = "policy.id.duplicate"

	CodeRuleSetRuleRespondMissing    = "ruleSet.rule.respond.missing"
	CodeRuleSetRuleRespondUnexpected = "ruleSet.rule.respond.unexpected"
	CodeRateLimitScopeMissing        = "rateLimit.scope.missing"

	// CodeCompileInternal reports a document that the owners accepted and
	// the compiler could not build: a bug, reported rather than served.
	CodeCompileInternal = "compile.internal"
)

// allCodes lists every code of the document's own, in the order of the
// table above, but compile.internal, which no valid document reaches; the
// tests check that each one has a case.
var allCodes = [...]string{
	CodeDocumentSyntax, CodeDocumentSize, CodeDocumentEmpty, CodeDocumentFieldUnknown,
	CodeDocumentFieldType, CodeDocumentFieldDuplicate, CodeDocumentDurationInvalid,
	CodeGlobalTrustedProxyInvalid, CodeGlobalProbeSourceInvalid,
	CodeHostRedirectMissing, CodeHostRedirectUnexpected, CodeHostFixedMissing, CodeHostFixedUnexpected,
	CodeHostRoutesEmpty, CodeHostRoutesUnexpected, CodeHostForwardingUnused, CodeHostAccessListUnknown,
	CodeHostPolicyUnknown, CodeHostHSTSMaxAgeMissing, CodeCertificateSourceMissing, CodeHostClientCAsUnreadable,
	CodeHostTLSUnused,
	CodeRouteIDInvalid, CodeRouteIDDuplicate, CodeRouteAllowInPathDuplicate, CodeRouteUpstreamMissing,
	CodeRouteUpstreamUnknown, CodeRoutePolicyUnknown,
	CodeUpstreamIDMissing, CodeUpstreamIDInvalid, CodeUpstreamIDDuplicate,
	CodeUpstreamDestinationIDMissing, CodeUpstreamDestinationIDInvalid, CodeUpstreamDestinationIDDuplicate,
	CodeUpstreamDestinationAddressInvalid, CodeUpstreamDestinationHealthInvalid, CodeUpstreamDestinationHealthScheme,
	CodeUpstreamHTTPTLSPinInvalid, CodeUpstreamHTTPVersionPlainText,
	CodeAccessListPrefixInvalid, CodePolicyIDMissing, CodePolicyIDInvalid, CodePolicyIDDuplicate,
	CodeRuleSetRuleRespondMissing, CodeRuleSetRuleRespondUnexpected, CodeRateLimitScopeMissing,
}
