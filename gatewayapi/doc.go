// Package gatewayapi translates Kubernetes Gateway API objects (Gateway
// and HTTPRoute, gateway.networking.k8s.io/v1, as sigs.k8s.io/gateway-api
// v1.6.3 types them) into the library's document (config.Document). It is
// named after the API it reads, not after Kubernetes: it reads files of
// objects, and no cluster.
//
// It is a module of its own (github.com/paduraksa/paduraksa/gatewayapi),
// so that an importer of the core packages does not pull the Kubernetes
// modules the API types need.
//
// # Reading
//
// [Decode] reads YAML (or JSON) documents separated by "---" lines,
// strictly, as Kubernetes does (sigs.k8s.io/yaml's UnmarshalStrict into
// the API types): an unknown field, or an unknown kind, is refused with
// the object's place, "objects[3] (Service default/x)". Besides Gateways
// and HTTPRoutes it reads ReferenceGrants, EndpointSlices
// (discovery.k8s.io/v1), Services and Secrets (v1).
//
// # Translating
//
// [Translate] maps the objects onto one document:
//
//   - A Gateway's HTTP and HTTPS listeners are the edge's plain HTTP and
//     HTTPS listeners (the reference daemon's -http and -https): one port
//     per protocol, reported in [Result.HTTP] and [Result.HTTPS]; the HTTPS
//     port is the document's global.httpsPort. Other protocols, TLS
//     passthrough and a Gateway's addresses are refused.
//   - An HTTPRoute attaches to listeners by its parentRefs (name,
//     sectionName, port), within the listeners' allowedRoutes. Its
//     hostnames intersect the listener's as the specification says; each
//     hostname the intersection leaves is one host of the document ("*"
//     for a route and listener with none), and its routes are the rules
//     of every route attached with that hostname, oldest route first. A
//     request for a name chooses the most specific host (an exact name,
//     then the longest wildcard, then "*"), as Gateway implementations
//     choose a virtual host: a rule of a wildcard route does not serve a
//     name another route names exactly.
//   - A hostname is one host on both listeners, so it is served alike
//     over HTTP and HTTPS, or over HTTP only by a rule that redirects
//     every request to HTTPS (the host's httpsRedirect); otherwise it is
//     refused (gatewayapi.host.protocols.differ).
//   - Each match of a rule is one route of the document (ID
//     "namespace.name.rRULE.mMATCH"): the path (PathPrefix, Exact,
//     RegularExpression as RE2), the method, header and query matches.
//     The gate's precedence is the specification's.
//   - A rule's backendRefs are the route's target: one of weight above 0
//     is its upstream, several its backends with their weights (absent
//     is 1, 0 takes none; a Service port named twice takes the sum). One
//     upstream per Service port (ID "namespace.name.port"), whose
//     destinations are [Options.Destinations]' entry for it or else the
//     ready endpoints of the EndpointSlices labelled
//     kubernetes.io/service-name with the Service's name, on the slice
//     port the Service port names (by name when the Service is in the
//     objects, by number otherwise). An endpoint that is terminating
//     but still serving is a drained destination beside ready ones (no
//     new requests, those in flight finish), and a destination like the
//     others when no endpoint is ready (kube-proxy's rule for
//     terminating endpoints), so that a rollout that replaces every
//     endpoint fails no request. appProtocol kubernetes.io/h2c is
//     HTTP/2 without TLS. A rule with no backendRef, or whose every
//     weight is 0, and a route without rules, answer 500 as the API
//     says: the route's fixed answer. A backendRef that is invalid (an
//     unknown Service, another kind, another namespace without a grant)
//     is refused, not served as a share of 500s.
//   - RequestHeaderModifier and ResponseHeaderModifier are the route's
//     header rules. URLRewrite's hostname is its hostHeader custom, its
//     path its rewrite: ReplaceFullPath the rewrite's path,
//     ReplacePrefixMatch its replacePrefix (on PathPrefix matches only;
//     an empty one takes the prefix off).
//   - RequestRedirect is the route's redirect: scheme, hostname, port,
//     the path (full, or the matched prefix replaced) and statusCode
//     (302 when absent). Without a port, a scheme's redirect goes to its
//     well-known port, and one without a scheme to the port the request
//     reached (the Gateway listener's). A redirect of every request to
//     HTTPS that is all a hostname's HTTP listener serves is the host's
//     httpsRedirect.
//   - RequestMirror is the route's mirror, to an upstream of its
//     backendRef's Service, of the requests its percent or fraction says
//     (all by default); a route has one mirror.
//   - A rule's timeouts are the route's: request its timeouts.request,
//     backendRequest its timeouts.perTry ("0s" none). Both end at the
//     answer's head, where the API's backendRequest ends at the end of
//     the answer.
//   - A listener's certificateRefs name a Secret: [Options.Certificates]
//     maps it onto certificate files the embedder keeps; or a
//     kubernetes.io/tls Secret in the objects is written, by
//     [Result.WriteSecrets] only, under [Options.SecretDir]. Translate
//     itself writes nothing, and without a directory such a Secret is
//     refused.
//   - References to another namespace need a ReferenceGrant there.
//
// Whatever the document cannot express is refused with a code and the
// object's path ("HTTPRoute default/shop: spec.rules[1].filters[0]"), and
// nothing is dropped: every code is in problems.go.
//
// The document is checked by the publisher as any other;
// [Result.Explain] says where in the objects a problem it finds is.
package gatewayapi
