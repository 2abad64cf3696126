package gatewayapi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/gatewayapi"
	"github.com/paduraksa/paduraksa/internal/gwconformance"
	"github.com/paduraksa/paduraksa/simulate"
)

// TestExplainRouteFields: what the publisher refuses in the translation
// of weights, redirects, rewrites, mirrors and timeouts is said at the
// objects' path of the field it came from.
func TestExplainRouteFields(t *testing.T) {
	backends := string(gwconformance.Backends(map[string]int{"svc-a": 9001, "svc-b": 9002, "svc-c": 9003}))
	ok := "      backendRefs: [{name: svc-a, port: 8080}]"
	for _, c := range []struct {
		name, objects, code, path string
	}{
		{"mirror to the backend", gw + route("    - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: svc-a, port: 8080}}}]\n"+ok),
			"route.mirror.self", "HTTPRoute default/shop: spec.rules[0].filters[0].requestMirror.backendRef"},
		{"mirror to a side", gw + route("    - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: svc-b, port: 8080}}}]\n      backendRefs: [{name: svc-a, port: 8080}, {name: svc-b, port: 8080}]"),
			"route.mirror.self", "HTTPRoute default/shop: spec.rules[0].filters[0].requestMirror.backendRef"},
		{"redirect to itself", gw + route("    - matches: [{path: {value: /a}}]\n      filters: [{type: RequestRedirect, requestRedirect: {statusCode: 301}}]"),
			"gate.route.redirect.loop", "HTTPRoute default/shop: spec.rules[0].filters[0].requestRedirect"},
		{"redirect path", gw + route("    - filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: \"/a//b\"}}}]"),
			"gate.route.redirect.path.invalid", "HTTPRoute default/shop: spec.rules[0].filters[0].requestRedirect.path.replaceFullPath"},
		{"rewrite path", gw + route("    - filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: \"x\"}}}]\n"+ok),
			"proxy.rewrite.path.invalid", "HTTPRoute default/shop: spec.rules[0].filters[0].urlRewrite.path.replaceFullPath"},
		{"backendRequest past request", gw + route("    - timeouts: {request: 1s, backendRequest: 2s}\n"+ok),
			"proxy.timeouts.perTry.invalid", "HTTPRoute default/shop: spec.rules[0].timeouts.backendRequest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs, err := gatewayapi.Decode([]byte(c.objects + "---\n" + backends))
			if err != nil {
				t.Fatal(err)
			}
			res, err := gatewayapi.Translate(objs, gatewayapi.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = simulate.Run(simulate.DraftTarget(&res.Document), simulate.Probe{URL: "http://shop.example/"})
			var refused *simulate.DraftRefused
			if !errors.As(err, &refused) {
				t.Fatalf("published (%v); want %s at %s", err, c.code, c.path)
			}
			var got []string
			for _, p := range res.Explain(refused.Errors) {
				if strings.HasSuffix(p.Code, c.code) && p.Path == c.path {
					return
				}
				got = append(got, p.Code+" at "+p.Path)
			}
			t.Errorf("want %s at %q; got %v", c.code, c.path, got)
		})
	}
}
