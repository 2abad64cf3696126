package gatewayapi

import (
	"slices"

	"github.com/paduraksa/paduraksa/internal/problem"
)

// ValidationError is one problem of the objects: a stable Code (the
// Code* constants below), the Path of the object and its field
// ("HTTPRoute default/shop: spec.rules[1].filters[0]"; for an object that
// did not decode, its place in the input: "objects[3] (ConfigMap
// default/x)") and a message. It is the library's one problem type
// (config.ValidationError), so errors.As finds it whichever package
// reported it.
type ValidationError = problem.Error

// Problem codes of [Decode] and [Translate]. Every object, field and value
// the translation cannot express in the library's document is refused with
// one of them; none is dropped. Codes are stable: tools and tests may
// branch on them. The codes ending in ".unsupported" name what the
// document cannot say.
//
//	code                                          path (after "Kind namespace/name: ")   meaning
//	gatewayapi.input.size                         ""                                     larger than MaxSize
//	gatewayapi.object.syntax                      objects[i]                             not YAML or JSON
//	gatewayapi.object.kind.missing                objects[i] (...)                       no apiVersion or kind
//	gatewayapi.object.kind.unknown                objects[i] (ConfigMap default/x)       a kind or version not read
//	gatewayapi.object.invalid                     objects[i] (HTTPRoute default/shop)    a field its type does not have, given twice, or of the wrong type
//	gatewayapi.object.name.missing                metadata.name                          an object without a name
//	gatewayapi.object.duplicate                   metadata.name                          the same kind, namespace and name again
//	gatewayapi.gateway.field.unsupported          spec.addresses, spec.tls, ...          addresses, infrastructure, tls or allowedListeners: the daemon's flags say where it listens
//	gatewayapi.listener.protocol.unsupported      spec.listeners[i].protocol             not HTTP or HTTPS
//	gatewayapi.listener.port.conflict             spec.listeners[i].port                 a second port for one protocol: the edge has one HTTP and one HTTPS listener
//	gatewayapi.listener.duplicate                 spec.listeners[i]                      a name, or a protocol and hostname, given twice
//	gatewayapi.listener.tls.missing               spec.listeners[i].tls                  HTTPS without a certificate
//	gatewayapi.listener.tls.passthrough           spec.listeners[i].tls.mode             TLS passthrough: the edge terminates TLS
//	gatewayapi.listener.tls.certificateRefs.many  spec.listeners[i].tls.certificateRefs  more than one certificate: a host has one
//	gatewayapi.listener.tls.options.unsupported   spec.listeners[i].tls.options          implementation options
//	gatewayapi.listener.allowedRoutes.unsupported spec.listeners[i].allowedRoutes...     a namespace selector, or route kinds without HTTPRoute
//	gatewayapi.certificateRef.kind.unsupported    spec.listeners[i].tls.certificateRefs[j]  not a core Secret
//	gatewayapi.certificateRef.unknown             spec.listeners[i].tls.certificateRefs[j]  no Secret in the objects nor in Options.Certificates
//	gatewayapi.secret.invalid                     data                                   not a kubernetes.io/tls Secret with a tls.crt and tls.key that load
//	gatewayapi.secret.directory.missing           spec.listeners[i].tls.certificateRefs[j]  a Secret of the objects, and no Options.SecretDir to write it to
//	gatewayapi.ref.notPermitted                   ...backendRefs[j], ...certificateRefs[j]  another namespace, and no ReferenceGrant there allows it
//	gatewayapi.route.parentRefs.missing           spec.parentRefs                        attached to nothing
//	gatewayapi.route.parentRef.kind.unsupported   spec.parentRefs[i]                     not a Gateway
//	gatewayapi.route.parentRef.unknown            spec.parentRefs[i]                     no such Gateway in the objects
//	gatewayapi.route.parentRef.listener.unknown   spec.parentRefs[i]                     its sectionName or port names no listener
//	gatewayapi.route.parentRef.notAllowed         spec.parentRefs[i]                     the listeners' allowedRoutes refuse the route
//	gatewayapi.route.hostnames.noMatch            spec.hostnames                         no hostname the listeners take
//	gatewayapi.route.field.unsupported            spec.useDefaultGateways                a field not translated
//	gatewayapi.host.protocols.differ              spec.parentRefs[i]                     a hostname served otherwise over HTTP than over HTTPS, which one host cannot be
//	gatewayapi.match.type.unknown                 spec.rules[i].matches[j].path.type...  a match type the API does not have
//	gatewayapi.match.header.duplicate             spec.rules[i].matches[j].headers[k]    a header name again (in any case)
//	gatewayapi.match.query.duplicate              spec.rules[i].matches[j].queryParams[k]  a parameter name again
//	gatewayapi.rule.timeouts.invalid              spec.rules[i].timeouts.request, ...    not a Gateway API Duration (GEP-2257)
//	gatewayapi.rule.retry.unsupported             spec.rules[i].retry                    retries on status codes
//	gatewayapi.rule.sessionPersistence.unsupported spec.rules[i].sessionPersistence      session persistence per rule
//	gatewayapi.filter.type.unknown                spec.rules[i].filters[j].type          a filter type the API does not have
//	gatewayapi.filter.config.invalid              spec.rules[i].filters[j]               its type's block missing, or another type's block given
//	gatewayapi.filter.duplicate                   spec.rules[i].filters[j]               a header modifier or rewrite given twice
//	gatewayapi.filter.header.duplicate            spec.rules[i].filters[j].requestHeaderModifier.set[k]  a header name the modifier names again
//	gatewayapi.filter.extensionRef.unsupported    spec.rules[i].filters[j]               an implementation's filter
//	gatewayapi.filter.cors.unsupported            spec.rules[i].filters[j]               CORS
//	gatewayapi.filter.externalAuth.unsupported    spec.rules[i].filters[j]               external authorization
//	gatewayapi.filter.requestRedirect.unsupported spec.rules[i].filters[j]               a redirect beside backendRefs, or to HTTPS where the host is served over HTTPS too
//	gatewayapi.filter.replacePrefixMatch.invalid  ...filters[j].urlRewrite.path.replacePrefixMatch  ReplacePrefixMatch on a rule with a path match other than PathPrefix
//	gatewayapi.filter.requestMirror.unsupported   spec.rules[i].filters[j]               a second RequestMirror: a route has one mirror
//	gatewayapi.backendRef.kind.unsupported        spec.rules[i].backendRefs[j]           not a core Service
//	gatewayapi.backendRef.port.missing            spec.rules[i].backendRefs[j].port      a Service needs a port
//	gatewayapi.backendRef.port.unknown            spec.rules[i].backendRefs[j].port      the Service has no such port
//	gatewayapi.backendRef.unknown                 spec.rules[i].backendRefs[j]           no destinations known: no EndpointSlice, Service or Options.Destinations entry
//	gatewayapi.backendRef.filters.unsupported     spec.rules[i].backendRefs[j].filters   filters per backend
//	gatewayapi.backend.appProtocol.unsupported    ports[i].appProtocol                   not http or kubernetes.io/h2c
//	gatewayapi.service.type.unsupported           spec.type                              an ExternalName Service
//	gatewayapi.endpointSlice.service.missing      metadata.labels                        an EndpointSlice without the kubernetes.io/service-name label
const (
	CodeInputSize             = "gatewayapi.input.size"
	CodeObjectSyntax          = "gatewayapi.object.syntax"
	CodeObjectKindMissing     = "gatewayapi.object.kind.missing"
	CodeObjectKindUnknown     = "gatewayapi.object.kind.unknown"
	CodeObjectInvalid         = "gatewayapi.object.invalid"
	CodeObjectNameMissing     = "gatewayapi.object.name.missing"
	CodeObjectDuplicate       = "gatewayapi.object.duplicate"
	CodeGatewayFieldUnsupport = "gatewayapi.gateway.field.unsupported"

	CodeListenerProtocol      = "gatewayapi.listener.protocol.unsupported"
	CodeListenerPortConflict  = "gatewayapi.listener.port.conflict"
	CodeListenerDuplicate     = "gatewayapi.listener.duplicate"
	CodeListenerTLSMissing    = "gatewayapi.listener.tls.missing"
	CodeListenerPassthrough   = "gatewayapi.listener.tls.passthrough"
	CodeListenerCertsMany     = "gatewayapi.listener.tls.certificateRefs.many"
	CodeListenerTLSOptions    = "gatewayapi.listener.tls.options.unsupported"
	CodeListenerAllowedRoutes = "gatewayapi.listener.allowedRoutes.unsupported"

	CodeCertificateRefKind    = "gatewayapi.certificateRef.kind.unsupported"
	CodeCertificateRefUnknown = "gatewayapi.certificateRef.unknown"
	CodeSecretInvalid         = "gatewayapi.secret.invalid"
	CodeSecretDirMissing      = "gatewayapi.secret.directory.missing"
	CodeRefNotPermitted       = "gatewayapi.ref.notPermitted"

	CodeRouteParentRefsMissing   = "gatewayapi.route.parentRefs.missing"
	CodeRouteParentRefKind       = "gatewayapi.route.parentRef.kind.unsupported"
	CodeRouteParentRefUnknown    = "gatewayapi.route.parentRef.unknown"
	CodeRouteParentRefListener   = "gatewayapi.route.parentRef.listener.unknown"
	CodeRouteParentRefNotAllowed = "gatewayapi.route.parentRef.notAllowed"
	CodeRouteHostnamesNoMatch    = "gatewayapi.route.hostnames.noMatch"
	CodeRouteFieldUnsupported    = "gatewayapi.route.field.unsupported"
	CodeHostProtocolsDiffer      = "gatewayapi.host.protocols.differ"

	CodeMatchTypeUnknown      = "gatewayapi.match.type.unknown"
	CodeMatchHeaderDup        = "gatewayapi.match.header.duplicate"
	CodeMatchQueryDup         = "gatewayapi.match.query.duplicate"
	CodeRuleTimeouts          = "gatewayapi.rule.timeouts.invalid"
	CodeRuleRetry             = "gatewayapi.rule.retry.unsupported"
	CodeRuleSessionPersist    = "gatewayapi.rule.sessionPersistence.unsupported"
	CodeFilterTypeUnknown     = "gatewayapi.filter.type.unknown"
	CodeFilterConfigInvalid   = "gatewayapi.filter.config.invalid"
	CodeFilterDuplicate       = "gatewayapi.filter.duplicate"
	CodeFilterHeaderDup       = "gatewayapi.filter.header.duplicate"
	CodeFilterExtensionRef    = "gatewayapi.filter.extensionRef.unsupported"
	CodeFilterCORS            = "gatewayapi.filter.cors.unsupported"
	CodeFilterExternalAuth    = "gatewayapi.filter.externalAuth.unsupported"
	CodeFilterRedirect        = "gatewayapi.filter.requestRedirect.unsupported"
	CodeFilterPrefixMatchOnly = "gatewayapi.filter.replacePrefixMatch.invalid"
	CodeFilterMirror          = "gatewayapi.filter.requestMirror.unsupported"

	CodeBackendRefKind       = "gatewayapi.backendRef.kind.unsupported"
	CodeBackendRefPortMiss   = "gatewayapi.backendRef.port.missing"
	CodeBackendRefPortUnk    = "gatewayapi.backendRef.port.unknown"
	CodeBackendRefUnknown    = "gatewayapi.backendRef.unknown"
	CodeBackendRefFilters    = "gatewayapi.backendRef.filters.unsupported"
	CodeBackendAppProtocol   = "gatewayapi.backend.appProtocol.unsupported"
	CodeServiceType          = "gatewayapi.service.type.unsupported"
	CodeEndpointSliceService = "gatewayapi.endpointSlice.service.missing"
)

// Codes returns every code of this package, in the order of the table
// above: for tools that list them, and for the tests that check each has
// a case.
func Codes() []string { return slices.Clone(codes[:]) }

var codes = [...]string{
	CodeInputSize, CodeObjectSyntax, CodeObjectKindMissing, CodeObjectKindUnknown, CodeObjectInvalid,
	CodeObjectNameMissing, CodeObjectDuplicate, CodeGatewayFieldUnsupport,
	CodeListenerProtocol, CodeListenerPortConflict, CodeListenerDuplicate, CodeListenerTLSMissing,
	CodeListenerPassthrough, CodeListenerCertsMany, CodeListenerTLSOptions, CodeListenerAllowedRoutes,
	CodeCertificateRefKind, CodeCertificateRefUnknown, CodeSecretInvalid, CodeSecretDirMissing, CodeRefNotPermitted,
	CodeRouteParentRefsMissing, CodeRouteParentRefKind, CodeRouteParentRefUnknown, CodeRouteParentRefListener,
	CodeRouteParentRefNotAllowed, CodeRouteHostnamesNoMatch, CodeRouteFieldUnsupported, CodeHostProtocolsDiffer,
	CodeMatchTypeUnknown, CodeMatchHeaderDup, CodeMatchQueryDup, CodeRuleTimeouts, CodeRuleRetry, CodeRuleSessionPersist,
	CodeFilterTypeUnknown, CodeFilterConfigInvalid, CodeFilterDuplicate, CodeFilterHeaderDup, CodeFilterExtensionRef,
	CodeFilterCORS, CodeFilterExternalAuth, CodeFilterRedirect, CodeFilterPrefixMatchOnly, CodeFilterMirror,
	CodeBackendRefKind, CodeBackendRefPortMiss, CodeBackendRefPortUnk,
	CodeBackendRefUnknown, CodeBackendRefFilters, CodeBackendAppProtocol, CodeServiceType, CodeEndpointSliceService,
}
