package gatewayapi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/gatewayapi"
	"github.com/paduraksa/paduraksa/internal/gwconformance"
)

const gw = `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: gw}
spec:
  gatewayClassName: paduraksa
  listeners: [{name: http, protocol: HTTP, port: 80}]
---
`

// route is an HTTPRoute named shop attached to gw, of the rules given.
func route(rules string) string {
	return `apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: shop}
spec:
  parentRefs: [{name: gw}]
  hostnames: [shop.example]
  rules:
` + rules + "\n"
}

// TestRefusals: whatever the document cannot express is refused with
// its code at the object's path, and nothing is dropped.
func TestRefusals(t *testing.T) {
	backends := string(gwconformance.Backends(map[string]int{"svc-a": 9001, "svc-b": 9002, "svc-c": 9003}))
	ok := "      backendRefs: [{name: svc-a, port: 8080}]"
	okRule := "    - backendRefs: [{name: svc-a, port: 8080}]"
	for _, c := range []struct {
		name, objects, code, path string
	}{
		{"unknown kind", gw + "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", gatewayapi.CodeObjectKindUnknown, "objects[1] (ConfigMap default/x)"},
		{"unknown field", gw + route("    - bogus: 1\n"+ok), gatewayapi.CodeObjectInvalid, "objects[1] (HTTPRoute default/shop)"},
		{"listener protocol", strings.Replace(gw, "protocol: HTTP", "protocol: TCP", 1), gatewayapi.CodeListenerProtocol, "Gateway default/gw: spec.listeners[0].protocol"},
		{"listener port", strings.Replace(gw, "port: 80}]", "port: 80}, {name: h2, protocol: HTTP, port: 81, hostname: a.example}]", 1), gatewayapi.CodeListenerPortConflict, "Gateway default/gw: spec.listeners[1].port"},
		{"https without tls", strings.Replace(gw, "protocol: HTTP, port: 80", "protocol: HTTPS, port: 443", 1), gatewayapi.CodeListenerTLSMissing, "Gateway default/gw: spec.listeners[0].tls"},
		{"passthrough", strings.Replace(gw, "protocol: HTTP, port: 80", "protocol: HTTPS, port: 443, tls: {mode: Passthrough}", 1), gatewayapi.CodeListenerPassthrough, "Gateway default/gw: spec.listeners[0].tls.mode"},
		{"secret without directory", strings.Replace(gw, "protocol: HTTP, port: 80", "protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: cert}]}", 1) + secretYAML(t), gatewayapi.CodeSecretDirMissing, "Gateway default/gw: spec.listeners[0].tls.certificateRefs[0]"},
		{"secret unknown", strings.Replace(gw, "protocol: HTTP, port: 80", "protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: nope}]}", 1), gatewayapi.CodeCertificateRefUnknown, "Gateway default/gw: spec.listeners[0].tls.certificateRefs[0]"},
		{"parent unknown", gw + strings.Replace(route(okRule), "name: gw}", "name: other}", 1), gatewayapi.CodeRouteParentRefUnknown, "HTTPRoute default/shop: spec.parentRefs[0]"},
		{"parent section", gw + strings.Replace(route(okRule), "name: gw}", "name: gw, sectionName: https}", 1), gatewayapi.CodeRouteParentRefListener, "HTTPRoute default/shop: spec.parentRefs[0]"},
		{"other namespace not allowed", gw + strings.Replace(strings.Replace(route(okRule), "{name: shop}", "{name: shop, namespace: team}", 1), "name: gw}", "name: gw, namespace: default}", 1), gatewayapi.CodeRouteParentRefNotAllowed, "HTTPRoute team/shop: spec.parentRefs[0]"},
		{"extensionRef", gw + route("    - filters: [{type: ExtensionRef, extensionRef: {group: x.io, kind: Auth, name: a}}]\n"+ok), gatewayapi.CodeFilterExtensionRef, "HTTPRoute default/shop: spec.rules[0].filters[0]"},
		{"CORS", gw + route("    - filters: [{type: CORS, cors: {allowOrigins: [\"https://a.example\"]}}]\n"+ok), gatewayapi.CodeFilterCORS, "HTTPRoute default/shop: spec.rules[0].filters[0]"},
		{"filter without block", gw + route("    - filters: [{type: RequestHeaderModifier}]\n"+ok), gatewayapi.CodeFilterConfigInvalid, "HTTPRoute default/shop: spec.rules[0].filters[0]"},
		{"redirect beside backends", gw + route("    - filters: [{type: RequestRedirect, requestRedirect: {hostname: new.example}}]\n"+ok), gatewayapi.CodeFilterRedirect, "HTTPRoute default/shop: spec.rules[0].filters[0]"},
		{"https redirect beside rules", gw + route("    - filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]\n"+okRule+"\n      matches: [{path: {value: /api}}]"), gatewayapi.CodeFilterRedirect, "HTTPRoute default/shop: spec.rules[0].filters[0]"},
		{"rewrite prefix of exact", gw + route("    - matches: [{path: {type: Exact, value: /v1}}]\n      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}]\n"+ok), gatewayapi.CodeFilterPrefixMatchOnly, "HTTPRoute default/shop: spec.rules[0].filters[0].urlRewrite.path.replacePrefixMatch"},
		{"redirect prefix of regex", gw + route("    - matches: [{path: {value: /v1}}, {path: {type: RegularExpression, value: \"/v[0-9]+\"}}]\n      filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /v2}}}]"), gatewayapi.CodeFilterPrefixMatchOnly, "HTTPRoute default/shop: spec.rules[0].filters[0].requestRedirect.path.replacePrefixMatch"},
		{"path modifier without value", gw + route("    - filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath}}}]\n"+ok), gatewayapi.CodeFilterConfigInvalid, "HTTPRoute default/shop: spec.rules[0].filters[0].urlRewrite.path"},
		{"two mirrors", gw + route("    - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: svc-b, port: 8080}}}, {type: RequestMirror, requestMirror: {backendRef: {name: svc-c, port: 8080}}}]\n"+ok), gatewayapi.CodeFilterMirror, "HTTPRoute default/shop: spec.rules[0].filters[1]"},
		{"mirror percent and fraction", gw + route("    - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: svc-b, port: 8080}, percent: 10, fraction: {numerator: 1}}}]\n"+ok), gatewayapi.CodeFilterConfigInvalid, "HTTPRoute default/shop: spec.rules[0].filters[0].requestMirror"},
		{"mirror fraction over 1", gw + route("    - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: svc-b, port: 8080}, fraction: {numerator: 3, denominator: 2}}}]\n"+ok), gatewayapi.CodeFilterConfigInvalid, "HTTPRoute default/shop: spec.rules[0].filters[0].requestMirror.fraction"},
		{"mirror unknown", gw + route("    - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: svc-x, port: 8080}}}]\n"+ok), gatewayapi.CodeBackendRefUnknown, "HTTPRoute default/shop: spec.rules[0].filters[0].requestMirror.backendRef"},
		{"timeout not a Gateway API duration", gw + route("    - timeouts: {request: 1.5s}\n"+ok), gatewayapi.CodeRuleTimeouts, "HTTPRoute default/shop: spec.rules[0].timeouts.request"},
		{"backendRequest not a Gateway API duration", gw + route("    - timeouts: {backendRequest: 10us}\n"+ok), gatewayapi.CodeRuleTimeouts, "HTTPRoute default/shop: spec.rules[0].timeouts.backendRequest"},
		{"one of several backends unknown", gw + route("    - backendRefs: [{name: svc-a, port: 8080, weight: 90}, {name: svc-x, port: 8080, weight: 10}]"), gatewayapi.CodeBackendRefUnknown, "HTTPRoute default/shop: spec.rules[0].backendRefs[1]"},
		{"backend kind", gw + route("    - backendRefs: [{group: x.io, kind: Bucket, name: b}]"), gatewayapi.CodeBackendRefKind, "HTTPRoute default/shop: spec.rules[0].backendRefs[0]"},
		{"backend other namespace", gw + route("    - backendRefs: [{name: svc-a, namespace: other, port: 8080}]"), gatewayapi.CodeRefNotPermitted, "HTTPRoute default/shop: spec.rules[0].backendRefs[0]"},
		{"backend unknown", gw + route("    - backendRefs: [{name: svc-x, port: 8080}]"), gatewayapi.CodeBackendRefUnknown, "HTTPRoute default/shop: spec.rules[0].backendRefs[0]"},
		{"backend port", gw + route("    - backendRefs: [{name: svc-a, port: 9090}]"), gatewayapi.CodeBackendRefPortUnk, "HTTPRoute default/shop: spec.rules[0].backendRefs[0].port"},
		{"header match twice", gw + route("    - matches: [{headers: [{name: X-A, value: \"1\"}, {name: x-a, value: \"2\"}]}]\n"+ok), gatewayapi.CodeMatchHeaderDup, "HTTPRoute default/shop: spec.rules[0].matches[0].headers[1].name"},
		{"https only beside http", strings.Replace(gw, "port: 80}]", "port: 80, hostname: a.example}, {name: https, protocol: HTTPS, port: 443, tls: {certificateRefs: [{name: cert}]}}]", 1) +
			strings.Replace(route(okRule), "name: gw}", "name: gw, sectionName: https}", 1), gatewayapi.CodeHostProtocolsDiffer, "HTTPRoute default/shop: spec.parentRefs[0]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs, err := gatewayapi.Decode([]byte(c.objects + "---\n" + backends))
			if err == nil {
				_, err = gatewayapi.Translate(objs, gatewayapi.Options{Certificates: map[gatewayapi.ObjectRef]gatewayapi.CertificateFiles{
					{Namespace: "default", Name: "cert"}: {CertFile: "/etc/x.crt", KeyFile: "/etc/x.key"},
				}})
			}
			if c.name == "secret without directory" {
				// the Secret is in the objects, not in Options.Certificates
				objs, derr := gatewayapi.Decode([]byte(c.objects + "---\n" + backends))
				if derr != nil {
					t.Fatal(derr)
				}
				_, err = gatewayapi.Translate(objs, gatewayapi.Options{})
			}
			if err == nil {
				t.Fatalf("translated; want %s at %s", c.code, c.path)
			}
			var found bool
			for _, e := range unwrap(err) {
				if e.Code == c.code && e.Path == c.path {
					found = true
				}
			}
			if !found {
				t.Errorf("want %s at %q; got:\n%v", c.code, c.path, err)
			}
		})
	}
}

func unwrap(err error) []*gatewayapi.ValidationError {
	var out []*gatewayapi.ValidationError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			out = append(out, unwrap(e)...)
		}
		return out
	}
	var v *gatewayapi.ValidationError
	if errors.As(err, &v) {
		out = append(out, v)
	}
	return out
}
