package snapshot

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/paduraksa/paduraksa/balance"
	"github.com/paduraksa/paduraksa/config"
	"github.com/paduraksa/paduraksa/gate"
	"github.com/paduraksa/paduraksa/health"
	"github.com/paduraksa/paduraksa/proxy"
	"github.com/paduraksa/paduraksa/tlsselect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testPin = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// richDocument returns a valid document that uses every block: the
// document of ../config/testdata/valid.json (and valid.yaml), which
// package config's tests hold to its Go value.
func richDocument() *config.Document {
	data, err := os.ReadFile("../config/testdata/valid.json")
	if err != nil {
		panic(err)
	}
	doc, err := config.Decode(data)
	if err != nil {
		panic(err)
	}
	return doc
}

// codeCase is one bad document: either data for Decode, or a change to
// richDocument for Validate. The result must be exactly one problem, with
// the document's code or the owning package's.
type codeCase struct {
	code, path string
	data       string
	change     func(d *config.Document)
}

func codeCases() []codeCase {
	return []codeCase{
		{code: config.CodeDocumentSyntax, data: `{"hosts": [}`},
		{code: config.CodeDocumentSize, data: strings.Repeat(" ", config.MaxDocumentSize) + "{}"},
		{code: config.CodeDocumentEmpty, data: " \n"},
		{code: config.CodeDocumentFieldUnknown, path: "hosts[0].routes[1].bogus", data: `{"hosts":[{"routes":[{},{"upstream":"u","bogus":1}]}]}`},
		{code: config.CodeDocumentFieldType, path: "upstreams[0].health.active.threshold", data: `{"upstreams":[{"health":{"active":{"threshold":"3"}}}]}`},
		{code: config.CodeDocumentFieldDuplicate, path: "global.server", data: `{"global":{"server":"a","server":"b"}}`},
		{code: config.CodeDocumentDurationInvalid, path: "upstreams[0].health.active.interval", change: func(d *config.Document) {
			d.Upstreams[0].Health.Active.Interval = "15"
		}},
		{code: config.CodeDocumentDurationInvalid, path: "upstreams[0].http.idleTimeout", change: func(d *config.Document) {
			d.Upstreams[0].HTTP.IdleTimeout = "-1s"
		}},

		{code: config.CodeGlobalTrustedProxyInvalid, path: "global.trustedProxies[3]", change: func(d *config.Document) {
			d.Global.TrustedProxies = append(d.Global.TrustedProxies, "10.0.0.1/8")
		}},
		{code: gate.CodeAnswerStatusInvalid, path: "global.defaultAnswer.status", change: func(d *config.Document) { d.Global.DefaultAnswer.Status = 99 }},
		{code: gate.CodeAnswerContentTypeInvalid, path: "global.defaultAnswer.contentType", change: func(d *config.Document) {
			d.Global.DefaultAnswer.ContentType = "text/plain\r\nX-Evil: 1"
		}},
		{code: gate.CodeAnswerBodyTooLarge, path: "global.defaultAnswer.body", change: func(d *config.Document) {
			d.Global.DefaultAnswer.Body = strings.Repeat("x", gate.MaxAnswerBody+1)
		}},
		{code: gate.CodeServerInvalid, path: "global.server", change: func(d *config.Document) { d.Global.Server = "edge\n" }},

		{code: gate.CodeHostNamesEmpty, path: "hosts[1].names", change: func(d *config.Document) { d.Hosts[1].Names = nil }},
		{code: gate.CodeHostNameInvalid, path: "hosts[0].names[1]", change: func(d *config.Document) { d.Hosts[0].Names[1] = "www example.com" }},
		{code: gate.CodeHostNameDuplicate, path: "hosts[1].names[1]", change: func(d *config.Document) {
			d.Hosts[1].Names = append(d.Hosts[1].Names, "WWW.Example.COM.")
		}},
		{code: gate.CodeHostKindUnknown, path: "hosts[0].kind", change: func(d *config.Document) { d.Hosts[0].Kind = "Proxy" }},
		{code: config.CodeHostRedirectMissing, path: "hosts[2].redirect", change: func(d *config.Document) { d.Hosts[2].Redirect = nil }},
		{code: config.CodeHostRedirectUnexpected, path: "hosts[0].redirect", change: func(d *config.Document) {
			d.Hosts[0].Redirect = &config.Redirect{To: "https://example.org"}
		}},
		{code: gate.CodeHostRedirectToInvalid, path: "hosts[2].redirect.to", change: func(d *config.Document) { d.Hosts[2].Redirect.To = "ftp://example.com" }},
		{code: gate.CodeHostNameInvalid, path: "hosts[0].names[1]", change: func(d *config.Document) { d.Hosts[0].Names[1] = "www..example.com" }},
		{code: gate.CodeHostRedirectToLoop, path: "hosts[2].redirect.to", change: func(d *config.Document) { d.Hosts[2].Redirect.To = "https://OLD.example.com:8443" }},
		{code: gate.CodeHostRedirectStatusInvalid, path: "hosts[2].redirect.status", change: func(d *config.Document) { d.Hosts[2].Redirect.Status = 200 }},
		{code: config.CodeHostFixedMissing, path: "hosts[3].fixed", change: func(d *config.Document) { d.Hosts[3].Fixed = nil }},
		{code: config.CodeHostFixedUnexpected, path: "hosts[2].fixed", change: func(d *config.Document) { d.Hosts[2].Fixed = &config.FixedAnswer{} }},
		{code: gate.CodeAnswerStatusInvalid, path: "hosts[3].fixed.status", change: func(d *config.Document) { d.Hosts[3].Fixed.Status = 600 }},
		{code: gate.CodeAnswerContentTypeInvalid, path: "hosts[3].fixed.contentType", change: func(d *config.Document) {
			d.Hosts[3].Fixed.ContentType = "text/plain\x00"
		}},
		{code: gate.CodeAnswerBodyTooLarge, path: "hosts[3].fixed.body", change: func(d *config.Document) {
			d.Hosts[3].Fixed.Body = strings.Repeat("x", gate.MaxAnswerBody+1)
		}},
		{code: config.CodeHostRoutesEmpty, path: "hosts[1].routes", change: func(d *config.Document) { d.Hosts[1].Routes = nil }},
		{code: config.CodeHostRoutesUnexpected, path: "hosts[3].routes", change: func(d *config.Document) {
			d.Hosts[3].Routes = []config.Route{{Upstream: "web"}}
		}},
		{code: config.CodeHostForwardingUnused, path: "hosts[3].headers.request", change: func(d *config.Document) {
			d.Hosts[3].Headers.Request = []config.HeaderRule{{Name: "X-Env", Value: "prod"}}
		}},
		{code: config.CodeHostForwardingUnused, path: "hosts[2].compression", change: func(d *config.Document) { d.Hosts[2].Compression.Enabled = true }},
		{code: config.CodeHostAccessListUnknown, path: "hosts[0].accessList", change: func(d *config.Document) { d.Hosts[0].AccessList = "Office" }},
		{code: CodeCertificateSourceMissing, path: "certificates[0]", change: func(d *config.Document) {
			d.Certificates = []config.Certificate{{ID: "main"}}
		}},
		{code: CodeHostClientCAsUnreadable, path: "hosts[0].tls.clientCAs", change: func(d *config.Document) {
			d.Certificates = []config.Certificate{{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"}}
			d.Hosts[0].Certificate = "main"
			d.Hosts[0].TLS = &config.HostTLS{ClientAuth: "required", ClientCAs: "testdata/tls/missing.pem"}
		}},
		{code: tlsselect.CodeFileNotRegular, path: "hosts[0].tls.clientCAs", change: func(d *config.Document) {
			d.Certificates = []config.Certificate{{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"}}
			d.Hosts[0].Certificate = "main"
			d.Hosts[0].TLS = &config.HostTLS{ClientAuth: "required", ClientCAs: "testdata/tls"}
		}},
		{code: tlsselect.CodeFileNotRegular, path: "certificates[0].keyFile", change: func(d *config.Document) {
			d.Certificates = []config.Certificate{{ID: "main", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata"}}
			d.Hosts[0].Certificate = "main"
		}},
		{code: gate.CodeServerInvalid, path: "hosts[0].server", change: func(d *config.Document) { d.Hosts[0].Server = "a\rb" }},

		{code: config.CodeRouteIDInvalid, path: "hosts[0].routes[0].id", change: func(d *config.Document) { d.Hosts[0].Routes[0].ID = "api v2" }},
		{code: config.CodeRouteIDDuplicate, path: "hosts[0].routes[1].id", change: func(d *config.Document) { d.Hosts[0].Routes[1].ID = "api" }},
		{code: gate.CodeRoutePrefixInvalid, path: "hosts[0].routes[0].path", change: func(d *config.Document) { d.Hosts[0].Routes[0].Path = "/a/../api" }},
		{code: gate.CodeRoutePrefixInvalid, path: "hosts[0].routes[0].path", change: func(d *config.Document) { d.Hosts[0].Routes[0].Path = "/api;v=1" }},
		{code: gate.CodeRoutePrefixInvalid, path: "hosts[0].routes[0].path", change: func(d *config.Document) { d.Hosts[0].Routes[0].Path = "/a\\pi" }},
		{code: gate.CodeRoutePrefixDuplicate, path: "hosts[0].routes[3].path", change: func(d *config.Document) {
			d.Hosts[0].Routes = append(d.Hosts[0].Routes, config.Route{Path: "/api/", Upstream: "web"})
		}},
		{code: gate.CodeRoutePrefixDuplicate, path: "hosts[0].routes[3].path", change: func(d *config.Document) {
			d.Hosts[0].Routes = append(d.Hosts[0].Routes, config.Route{Path: "/API", Upstream: "web"})
		}},
		{code: gate.CodeRouteMatchDuplicate, path: "hosts[0].routes[3]", change: func(d *config.Document) {
			rt := d.Hosts[0].Routes[2]
			rt.ID, rt.Path, rt.Rewrite = "again", "/API/V1/{x}/{**y}", config.Rewrite{}
			rt.Match.Headers = []config.HeaderMatch{rt.Match.Headers[1], {Name: "x-canary", Value: "1"}}
			d.Hosts[0].Routes = append(d.Hosts[0].Routes, rt)
		}},
		{code: gate.CodeRoutePathTypeUnknown, path: "hosts[0].routes[0].pathType", change: func(d *config.Document) { d.Hosts[0].Routes[0].PathType = "Exact" }},
		{code: gate.CodeRouteRegexInvalid, path: "hosts[0].routes[0].path", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].PathType, d.Hosts[0].Routes[0].Path = "regex", "/api/(v1"
		}},
		{code: gate.CodeRouteRegexEmpty, path: "hosts[0].routes[0].path", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].PathType, d.Hosts[0].Routes[0].Path = "regex", "(/api)?"
		}},
		{code: gate.CodeRouteTemplateNameDuplicate, path: "hosts[0].routes[2].path", change: func(d *config.Document) { d.Hosts[0].Routes[2].Path = "/api/{id}/{rest}/{**ID}" }},
		{code: gate.CodeRouteTemplateCatchAllInvalid, path: "hosts[0].routes[2].path", change: func(d *config.Document) { d.Hosts[0].Routes[2].Path = "/api/{**rest}/{id}" }},
		{code: gate.CodeRouteMatchMethodInvalid, path: "hosts[0].routes[2].match.methods[1]", change: func(d *config.Document) { d.Hosts[0].Routes[2].Match.Methods[1] = "GET /" }},
		{code: gate.CodeRouteMatchHeaderNameInvalid, path: "hosts[0].routes[2].match.headers[0].name", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Match.Headers[0].Name = "X_Canary"
		}},
		{code: gate.CodeRouteMatchHeaderTypeUnknown, path: "hosts[0].routes[2].match.headers[0].type", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Match.Headers[0].Type = "equals"
		}},
		{code: gate.CodeRouteMatchValueUnused, path: "hosts[0].routes[2].match.headers[1].value", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Match.Headers[1].Value = "1"
		}},
		{code: gate.CodeRouteMatchQueryTypeUnknown, path: "hosts[0].routes[2].match.query[0].type", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Match.Query[0].Type = "absent"
		}},
		{code: gate.CodeRouteMatchValueInvalid, path: "hosts[0].routes[2].match.query[0].value", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Match.Query[0].Value = "[0-9"
		}},
		{code: gate.CodeRouteTargetPathValueUnknown, path: "hosts[0].routes[2].rewrite.template", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Rewrite.Template = "/items/{item}"
		}},
		{code: proxy.CodeRewriteTemplateInvalid, path: "hosts[0].routes[2].rewrite.template", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Rewrite.Template = "/items/{id}/../{rest}"
		}},
		{code: proxy.CodeRewriteTemplateConflict, path: "hosts[0].routes[2].rewrite.template", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Rewrite.AddPrefix = "/v2"
		}},
		{code: config.CodeRouteBackendsConflict, path: "hosts[0].routes[0].backends", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Backends = []config.Backend{{Upstream: "api"}, {Upstream: "web"}}
		}},
		{code: config.CodeRouteBackendUpstreamMissing, path: "hosts[0].routes[0].backends[1].upstream", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Upstream, d.Hosts[0].Routes[0].Backends = "", []config.Backend{{Upstream: "api"}, {}}
		}},
		{code: config.CodeRouteBackendUpstreamUnknown, path: "hosts[0].routes[0].backends[1].upstream", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Upstream, d.Hosts[0].Routes[0].Backends = "", []config.Backend{{Upstream: "api"}, {Upstream: "canary"}}
		}},
		{code: config.CodeRouteBackendUpstreamDuplicate, path: "hosts[0].routes[0].backends[1].upstream", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Upstream, d.Hosts[0].Routes[0].Backends = "", []config.Backend{{Upstream: "api"}, {Upstream: "api"}}
		}},
		{code: config.CodeRouteSplitUnexpected, path: "hosts[0].routes[0].split", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Split.Sticky.Client = true
		}},
		{code: config.CodeRouteSplitForceUpstreamUnknown, path: "hosts[0].routes[0].split.force[0].upstream", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Upstream, d.Hosts[0].Routes[0].Backends = "", []config.Backend{{Upstream: "api"}, {Upstream: "web"}}
			d.Hosts[0].Routes[0].Split.Force = []config.Force{{Header: "X-Canary", Value: "always", Upstream: "canary"}}
		}},
		{code: config.CodeRouteMirrorUpstreamMissing, path: "hosts[0].routes[0].mirror.upstream", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Mirror = &config.Mirror{}
		}},
		{code: config.CodeRouteMirrorUpstreamUnknown, path: "hosts[0].routes[0].mirror.upstream", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Mirror = &config.Mirror{Upstream: "shadow"}
		}},
		{code: config.CodeRouteMirrorSelf, path: "hosts[0].routes[0].mirror.upstream", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Mirror = &config.Mirror{Upstream: "api"}
		}},
		{code: config.CodeRouteMirrorSelf, path: "hosts[0].routes[0].mirror.upstream", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Upstream, d.Hosts[0].Routes[0].Backends = "", []config.Backend{{Upstream: "api"}, {Upstream: "web"}}
			d.Hosts[0].Routes[0].Mirror = &config.Mirror{Upstream: "web"}
		}},
		{code: proxy.CodeSplitWeightsZero, path: "hosts[0].routes[0].backends", change: func(d *config.Document) {
			zero := 0
			d.Hosts[0].Routes[0].Upstream, d.Hosts[0].Routes[0].Backends = "", []config.Backend{{Upstream: "api", Weight: &zero}}
		}},
		{code: proxy.CodeSplitWeightInvalid, path: "hosts[0].routes[0].backends[1].weight", change: func(d *config.Document) {
			neg := -1
			d.Hosts[0].Routes[0].Upstream, d.Hosts[0].Routes[0].Backends = "", []config.Backend{{Upstream: "api"}, {Upstream: "web", Weight: &neg}}
		}},
		{code: proxy.CodeSplitStickyConflict, path: "hosts[0].routes[0].split.sticky", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Upstream, d.Hosts[0].Routes[0].Backends = "", []config.Backend{{Upstream: "api"}, {Upstream: "web"}}
			d.Hosts[0].Routes[0].Split.Sticky = config.Sticky{Cookie: "side", Client: true}
		}},
		{code: proxy.CodeSplitForceNameInvalid, path: "hosts[0].routes[0].split.force[0].header", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Upstream, d.Hosts[0].Routes[0].Backends = "", []config.Backend{{Upstream: "api"}, {Upstream: "web"}}
			d.Hosts[0].Routes[0].Split.Force = []config.Force{{Header: "X Canary", Value: "always", Upstream: "web"}}
		}},
		{code: proxy.CodeMirrorPercentInvalid, path: "hosts[0].routes[0].mirror.percent", change: func(d *config.Document) {
			p := 101.0
			d.Hosts[0].Routes[0].Mirror = &config.Mirror{Upstream: "web", Percent: &p}
		}},
		{code: proxy.CodeMirrorMaxInFlightInvalid, path: "hosts[0].routes[0].mirror.maxInFlight", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Mirror = &config.Mirror{Upstream: "web", MaxInFlight: -1}
		}},
		{code: config.CodeDocumentDurationInvalid, path: "hosts[0].routes[0].mirror.timeout", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Mirror = &config.Mirror{Upstream: "web", Timeout: "5"}
		}},
		// A route's filters, timeouts and own answers.
		{code: config.CodeRouteAnswerConflict, path: "hosts[0].routes[0].backends", change: func(d *config.Document) {
			r := &d.Hosts[0].Routes[0]
			r.Upstream, r.Backends, r.Fixed = "", []config.Backend{{Upstream: "api"}, {Upstream: "web"}}, &config.FixedAnswer{}
		}},
		{code: config.CodeRouteForwardingUnused, path: "hosts[0].routes[0].mirror", change: func(d *config.Document) {
			r := &d.Hosts[0].Routes[0]
			r.Upstream, r.Fixed, r.Mirror = "", &config.FixedAnswer{}, &config.Mirror{Upstream: "web"}
		}},
		{code: config.CodeRouteAnswerConflict, path: "hosts[0].routes[0].upstream", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Fixed = &config.FixedAnswer{Status: 503}
		}},
		{code: config.CodeRouteForwardingUnused, path: "hosts[0].routes[0].timeouts", change: func(d *config.Document) {
			r := &d.Hosts[0].Routes[0]
			r.Upstream, r.Fixed, r.Timeouts.Request = "", &config.FixedAnswer{}, "1s"
		}},
		{code: config.CodeRouteReplacePrefixConflict, path: "hosts[0].routes[0].rewrite.replacePrefix", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Rewrite = config.Rewrite{StripPrefix: true, ReplacePrefix: "/v2"}
		}},
		{code: config.CodeRouteReplacePrefixPathType, path: "hosts[0].routes[2].rewrite.replacePrefix", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Rewrite = config.Rewrite{ReplacePrefix: "/v2"}
		}},
		{code: config.CodeDocumentDurationInvalid, path: "hosts[0].routes[0].timeouts.perTry", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Timeouts.PerTry = "5"
		}},
		{code: proxy.CodeTimeoutsPerTryInvalid, path: "hosts[0].routes[0].timeouts.perTry", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Timeouts = config.RouteTimeouts{Request: "1s", PerTry: "2s"}
		}},
		{code: proxy.CodeRewritePathConflict, path: "hosts[0].routes[0].rewrite.path", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Rewrite = config.Rewrite{StripPrefix: true, Path: "/x"}
		}},
		{code: proxy.CodeRewriteQueryConflict, path: `hosts[0].routes[0].rewrite.query.remove[0]`, change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Rewrite.Query = config.RewriteQuery{Set: map[string]string{"a": "1"}, Remove: []string{"a"}}
		}},
		{code: gate.CodeRouteRedirectLoop, path: "hosts[0].routes[0].redirect", change: func(d *config.Document) {
			r := &d.Hosts[0].Routes[0]
			r.Upstream, r.Redirect = "", &config.RouteRedirect{Prefix: "/api/v2"}
		}},
		{code: gate.CodeRouteRedirectStatusInvalid, path: "hosts[0].routes[0].redirect.status", change: func(d *config.Document) {
			r := &d.Hosts[0].Routes[0]
			r.Upstream, r.Redirect = "", &config.RouteRedirect{Host: "new.example", Status: 300}
		}},
		{code: config.CodeRouteStripPrefixPathType, path: "hosts[0].routes[2].rewrite.stripPrefix", change: func(d *config.Document) {
			d.Hosts[0].Routes[2].Rewrite = config.Rewrite{StripPrefix: true}
		}},
		{code: gate.CodeRoutePathAllowUnknown, path: "hosts[0].routes[0].allowInPath[1]", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].AllowInPath = []string{"encodedSlash", "EncodedHash"}
		}},
		{code: config.CodeRouteAllowInPathDuplicate, path: "hosts[0].routes[0].allowInPath[1]", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].AllowInPath = []string{"emptySegments", "emptySegments"}
		}},
		{code: config.CodeRouteUpstreamMissing, path: "hosts[1].routes[0].upstream", change: func(d *config.Document) { d.Hosts[1].Routes[0].Upstream = "" }},
		{code: config.CodeRouteUpstreamUnknown, path: "hosts[1].routes[0].upstream", change: func(d *config.Document) { d.Hosts[1].Routes[0].Upstream = "Web" }},
		{code: proxy.CodeRouteHostHeaderUnknown, path: "hosts[0].routes[0].hostHeader", change: func(d *config.Document) { d.Hosts[0].Routes[0].HostHeader = "Original" }},
		{code: proxy.CodeRouteHostNameInvalid, path: "hosts[0].routes[0].hostName", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].HostHeader, d.Hosts[0].Routes[0].HostName = "custom", "bad name:99999"
		}},
		{code: proxy.CodeRouteHostNameUnused, path: "hosts[0].routes[0].hostName", change: func(d *config.Document) { d.Hosts[0].Routes[0].HostName = "api.internal" }},
		{code: proxy.CodeRewriteStripPrefixRoot, path: "hosts[1].routes[0].rewrite.stripPrefix", change: func(d *config.Document) { d.Hosts[1].Routes[0].Rewrite.StripPrefix = true }},
		{code: proxy.CodeRewriteAddPrefixInvalid, path: "hosts[0].routes[0].rewrite.addPrefix", change: func(d *config.Document) { d.Hosts[0].Routes[0].Rewrite.AddPrefix = "/a/%2e%2e" }},
		{code: proxy.CodeRetryAttemptsInvalid, path: "hosts[0].routes[0].retry.attempts", change: func(d *config.Document) { d.Hosts[0].Routes[0].Retry.Attempts = 6 }},
		{code: proxy.CodeRetryBodyLimitInvalid, path: "hosts[0].routes[0].retry.bodyLimit", change: func(d *config.Document) { d.Hosts[0].Routes[0].Retry.BodyLimit = -1 }},
		{code: proxy.CodeRetryBudgetInvalid, path: "hosts[0].routes[0].retry.budget", change: func(d *config.Document) { d.Hosts[0].Routes[0].Retry.Budget = 1.5 }},
		{code: proxy.CodeCompressionMinimumSize, path: "hosts[0].compression.minimumSize", change: func(d *config.Document) { d.Hosts[0].Compression.MinimumSize = 2 << 20 }},
		{code: proxy.CodeCompressionEncodingUnknown, path: "hosts[0].compression.encodings[1]", change: func(d *config.Document) {
			d.Hosts[0].Compression.Encodings = []string{"gzip", "deflate"}
		}},
		{code: proxy.CodeSiteRequestIDUnknown, path: "hosts[0].requestId", change: func(d *config.Document) { d.Hosts[0].RequestID = "always" }},
		{code: proxy.CodeHeadersTooMany, path: "hosts[0].headers.response", change: func(d *config.Document) {
			for k := range 33 {
				d.Hosts[0].Headers.Response = append(d.Hosts[0].Headers.Response, config.HeaderRule{Name: "X-H" + strconv.Itoa(k), Value: "v"})
			}
		}},
		{code: proxy.CodeHeaderNameInvalid, path: "hosts[0].headers.request[0].name", change: func(d *config.Document) {
			d.Hosts[0].Headers.Request = []config.HeaderRule{{Name: "X Bad", Value: "v"}}
		}},
		{code: proxy.CodeHeaderNameReserved, path: "hosts[0].routes[0].headers.request[0].name", change: func(d *config.Document) {
			d.Hosts[0].Routes[0].Headers.Request = []config.HeaderRule{{Name: "X-Forwarded-For", Value: "1.2.3.4"}}
		}},
		{code: proxy.CodeHeaderNameDuplicate, path: "hosts[0].headers.response[1].name", change: func(d *config.Document) {
			d.Hosts[0].Headers.Response = []config.HeaderRule{{Name: "X-Frame-Options", Value: "DENY"}, {Name: "x-frame-options", Operation: "remove"}}
		}},
		{code: proxy.CodeHeaderOpInvalid, path: "hosts[0].headers.response[0].operation", change: func(d *config.Document) {
			d.Hosts[0].Headers.Response = []config.HeaderRule{{Name: "Set-Cookie", Value: "a=b"}}
		}},
		{code: proxy.CodeHeaderOpInvalid, path: "hosts[0].routes[1].headers.response[0].operation", change: func(d *config.Document) {
			d.Hosts[0].Routes[1].Headers.Response = []config.HeaderRule{{Name: "X-A", Operation: "delete"}}
		}},
		{code: proxy.CodeHeaderValueInvalid, path: "hosts[0].headers.request[0].value", change: func(d *config.Document) {
			d.Hosts[0].Headers.Request = []config.HeaderRule{{Name: "X-Env", Value: "a\r\nb"}}
		}},
		{code: proxy.CodeHeaderValueUnexpected, path: "hosts[0].headers.request[0].value", change: func(d *config.Document) {
			d.Hosts[0].Headers.Request = []config.HeaderRule{{Name: "X-Env", Operation: "remove", Value: "x"}}
		}},

		{code: config.CodeUpstreamIDMissing, path: "upstreams[2].id", change: func(d *config.Document) { d.Upstreams = append(d.Upstreams, config.Upstream{}) }},
		{code: config.CodeUpstreamIDInvalid, path: "upstreams[2].id", change: func(d *config.Document) {
			d.Upstreams = append(d.Upstreams, config.Upstream{ID: "web/2"})
		}},
		{code: config.CodeUpstreamIDDuplicate, path: "upstreams[2].id", change: func(d *config.Document) {
			d.Upstreams = append(d.Upstreams, config.Upstream{ID: "api"})
		}},
		{code: config.CodeUpstreamDestinationIDMissing, path: "upstreams[1].destinations[1].id", change: func(d *config.Document) {
			d.Upstreams[1].Destinations[1].ID = ""
		}},
		{code: config.CodeUpstreamDestinationIDInvalid, path: "upstreams[1].destinations[1].id", change: func(d *config.Document) {
			d.Upstreams[1].Destinations[1].ID = strings.Repeat("w", 129)
		}},
		{code: config.CodeUpstreamDestinationIDDuplicate, path: "upstreams[1].destinations[1].id", change: func(d *config.Document) {
			d.Upstreams[1].Destinations[1].ID = "w1"
		}},
		{code: config.CodeUpstreamDestinationAddressInvalid, path: "upstreams[1].destinations[0].address", change: func(d *config.Document) {
			d.Upstreams[1].Destinations[0].Address = "http://web-1.internal:8080/app"
		}},
		{code: config.CodeUpstreamDestinationHealthInvalid, path: "upstreams[0].destinations[0].health", change: func(d *config.Document) {
			d.Upstreams[0].Destinations[0].Health = "10.0.1.1:9090"
		}},
		{code: config.CodeUpstreamDestinationHealthScheme, path: "upstreams[0].destinations[0].health", change: func(d *config.Document) {
			d.Upstreams[0].Destinations[0].Health = "https://10.0.1.1:9443"
		}},
		{code: balance.CodePolicyUnknown, path: "upstreams[1].loadBalancing", change: func(d *config.Document) { d.Upstreams[1].LoadBalancing = "Fastest" }},
		{code: balance.CodePolicyUnknown, path: "upstreams[1].loadBalancing", change: func(d *config.Document) { d.Upstreams[1].LoadBalancing = "ZoneAware" }},
		{code: proxy.CodeClientVersionUnknown, path: "upstreams[0].http.version", change: func(d *config.Document) { d.Upstreams[0].HTTP.Version = "3" }},
		{code: CodeUpstreamHTTPVersionPlainText, path: "upstreams[1].http.version", change: func(d *config.Document) { d.Upstreams[1].HTTP.Version = "2" }},
		{code: proxy.CodeClientVersionPolicyUnknown, path: "upstreams[0].http.versionPolicy", change: func(d *config.Document) {
			d.Upstreams[0].HTTP.VersionPolicy = "orHigher"
		}},
		{code: proxy.CodeClientConnectTimeoutInvalid, path: "upstreams[0].http.connectTimeout", change: func(d *config.Document) {
			d.Upstreams[0].HTTP.ConnectTimeout = "99ms"
		}},
		{code: proxy.CodeClientHTTP1Unknown, path: "upstreams[0].http.http1Client", change: func(d *config.Document) { d.Upstreams[0].HTTP.HTTP1Client = "curl" }},
		{code: proxy.CodeClientTrustUnknown, path: "upstreams[1].http.tls.trust", change: func(d *config.Document) { d.Upstreams[1].HTTP.TLS.Trust = "none" }},
		{code: proxy.CodeClientPinsMissing, path: "upstreams[0].http.tls.pins", change: func(d *config.Document) { d.Upstreams[0].HTTP.TLS.Pins = nil }},
		{code: proxy.CodeClientPinsUnexpected, path: "upstreams[1].http.tls.pins", change: func(d *config.Document) {
			d.Upstreams[1].HTTP.TLS.Pins = []string{testPin}
		}},
		{code: config.CodeUpstreamHTTPTLSPinInvalid, path: "upstreams[0].http.tls.pins[1]", change: func(d *config.Document) {
			d.Upstreams[0].HTTP.TLS.Pins = append(d.Upstreams[0].HTTP.TLS.Pins, testPin[:62])
		}},
		{code: proxy.CodeClientServerNameInvalid, path: "upstreams[0].http.tls.serverName", change: func(d *config.Document) {
			d.Upstreams[0].HTTP.TLS.ServerName = "*.internal"
		}},
		{code: config.CodeUpstreamHTTPTLSClientCertificateUnknown, path: "upstreams[0].http.tls.clientCertificate", change: func(d *config.Document) {
			d.Upstreams[0].Destinations = d.Upstreams[0].Destinations[1:]
			d.Upstreams[0].HTTP.TLS.ClientCertificate = "nope"
		}},
		{code: config.CodeUpstreamHTTPTLSClientCertificatePlainHTTP, path: "upstreams[1].http.tls.clientCertificate", change: func(d *config.Document) {
			d.Certificates = []config.Certificate{{ID: "edge", CertFile: "testdata/tls/cert.pem", KeyFile: "testdata/tls/key.pem"}}
			d.Upstreams[1].HTTP.TLS.ClientCertificate = "edge"
		}},
		{code: CodeUpstreamCAFileUnreadable, path: "upstreams[1].http.tls.caFile", change: func(d *config.Document) {
			d.Upstreams[1].HTTP.TLS = config.UpstreamTLS{Trust: "caFile", CAFile: "testdata/tls/missing.pem"}
		}},
		{code: proxy.CodeClientCAsMissing, path: "upstreams[1].http.tls.caFile", change: func(d *config.Document) { d.Upstreams[1].HTTP.TLS.Trust = "caFile" }},
		{code: proxy.CodeClientCAsUnexpected, path: "upstreams[1].http.tls.caFile", change: func(d *config.Document) {
			d.Upstreams[1].HTTP.TLS.CAFile = "testdata/tls/cert.pem"
		}},
		{code: proxy.CodeClientCAsEmpty, path: "upstreams[1].http.tls.caFile", change: func(d *config.Document) {
			d.Upstreams[1].HTTP.TLS = config.UpstreamTLS{Trust: "caFile", CAFile: "testdata/tls/key.pem"}
		}},
		{code: proxy.CodeClientProxyProtocolUnknown, path: "upstreams[0].http.proxyProtocol", change: func(d *config.Document) { d.Upstreams[0].HTTP.ProxyProtocol = "v3" }},
		// Circuit breakers.
		{code: proxy.CodeLimitInvalid, path: "upstreams[0].limits.maxInFlight", change: func(d *config.Document) { d.Upstreams[0].Limits.MaxInFlight = -1 }},
		{code: proxy.CodeLimitInvalid, path: "upstreams[0].limits.maxRetriesInFlight", change: func(d *config.Document) {
			d.Upstreams[0].Limits.MaxRetriesInFlight = proxy.MaxLimit + 1
		}},
		{code: proxy.CodeLimitInvalid, path: "upstreams[0].limits.maxPending", change: func(d *config.Document) { d.Upstreams[0].Limits.MaxPending = -1 }},
		{code: proxy.CodeLimitInvalid, path: "upstreams[0].limits.maxConnectionsPerDestination", change: func(d *config.Document) {
			d.Upstreams[0].Limits.MaxConnectionsPerDestination = -1
		}},
		{code: proxy.CodeRetryConnectFailuresUnknown, path: "hosts[0].routes[0].retry.connectFailures", change: func(d *config.Document) { d.Hosts[0].Routes[0].Retry.ConnectFailures = "sometimes" }},
		{code: health.CodeOutlierPercentInvalid, path: "upstreams[0].health.outlier.maxEjectionPercent", change: func(d *config.Document) { d.Upstreams[0].Health.Outlier.MaxEjectionPercent = 101 }},
		{code: health.CodeOutlierEjectionTimeInvalid, path: "upstreams[0].health.outlier.maxEjectionTime", change: func(d *config.Document) {
			d.Upstreams[0].Health.Outlier.BaseEjectionTime, d.Upstreams[0].Health.Outlier.MaxEjectionTime = "1m", "10s"
		}},
		{code: health.CodeActivePathInvalid, path: "upstreams[0].health.active.path", change: func(d *config.Document) {
			d.Upstreams[0].Health.Active.Path = "/healthz?deep=1"
		}},
		{code: health.CodeActiveQueryInvalid, path: "upstreams[0].health.active.query", change: func(d *config.Document) {
			d.Upstreams[0].Health.Active.Query = "deep=1#x"
		}},
		{code: health.CodeActivePolicyUnknown, path: "upstreams[0].health.active.policy", change: func(d *config.Document) {
			d.Upstreams[0].Health.Active.Policy = "consecutiveFailures"
		}},
		{code: health.CodeActiveThresholdInvalid, path: "upstreams[0].health.active.threshold", change: func(d *config.Document) {
			d.Upstreams[0].Health.Active.Threshold = -1
		}},
		{code: health.CodePassivePolicyUnknown, path: "upstreams[0].health.passive.policy", change: func(d *config.Document) {
			d.Upstreams[0].Health.Passive.Policy = "TransportFailureRateWith5xx"
		}},
		{code: health.CodePassiveWindowInvalid, path: "upstreams[0].health.passive.window", change: func(d *config.Document) {
			d.Upstreams[0].Health.Passive.Window = "1ns"
		}},
		{code: health.CodePassiveMinRequestsInvalid, path: "upstreams[0].health.passive.minRequests", change: func(d *config.Document) {
			d.Upstreams[0].Health.Passive.MinRequests = -1
		}},
		{code: health.CodePassiveFailureRateInvalid, path: "upstreams[0].health.passive.failureRate", change: func(d *config.Document) {
			d.Upstreams[0].Health.Passive.FailureRate = 1
		}},
		{code: health.CodeAvailabilityUnknown, path: "upstreams[0].health.availability", change: func(d *config.Document) {
			d.Upstreams[0].Health.Availability = "Always"
		}},
		{code: health.CodeProbeFirstInactive, path: "upstreams[0].health.probeFirst", change: func(d *config.Document) {
			d.Upstreams[0].Health.Active.Enabled = false
		}},
		{code: health.CodeActiveThresholdInvalid, path: `upstreams[1].metadata["ConsecutiveFailuresHealthPolicy.Threshold"]`, change: func(d *config.Document) {
			d.Upstreams[1].Metadata = map[string]string{health.MetadataThreshold: "0"}
		}},
		{code: config.CodeDocumentDurationInvalid, path: "upstreams[0].health.slowStart", change: func(d *config.Document) {
			d.Upstreams[0].Health.SlowStart = "-30s"
		}},
		{code: balance.CodeAffinityModeUnknown, path: "upstreams[0].affinity.mode", change: func(d *config.Document) { d.Upstreams[0].Affinity.Mode = "Cookie" }},
		{code: balance.CodeAffinityFailurePolicyUnknown, path: "upstreams[0].affinity.failurePolicy", change: func(d *config.Document) {
			d.Upstreams[0].Affinity.FailurePolicy = "Fail"
		}},
		{code: balance.CodeAffinityKeyNameInvalid, path: "upstreams[0].affinity.key", change: func(d *config.Document) { d.Upstreams[0].Affinity.Key = "sticky;x" }},
		{code: balance.CodeAffinityCookiePathInvalid, path: "upstreams[0].affinity.cookie.path", change: func(d *config.Document) {
			d.Upstreams[0].Affinity.Cookie.Path = "/;Domain=evil.com"
		}},
		{code: balance.CodeAffinityCookieDomainInvalid, path: "upstreams[0].affinity.cookie.domain", change: func(d *config.Document) {
			d.Upstreams[0].Affinity.Cookie.Domain = "example.com;x"
		}},
		{code: balance.CodeAffinityCookieSecureUnknown, path: "upstreams[1].affinity.cookie.secure", change: func(d *config.Document) {
			d.Upstreams[1].Affinity.Cookie.Secure = "Sometimes"
		}},
		{code: balance.CodeAffinityCookieSameSiteUnknown, path: "upstreams[0].affinity.cookie.sameSite", change: func(d *config.Document) {
			d.Upstreams[0].Affinity.Cookie.SameSite = "none"
		}},
		{code: balance.CodeAffinityCookieSameSiteInsecure, path: "upstreams[0].affinity.cookie.sameSite", change: func(d *config.Document) {
			d.Upstreams[0].Affinity.Cookie.Secure = "SameAsRequest"
		}},
		{code: balance.CodeAffinityCookieMaxAgeInvalid, path: "upstreams[0].affinity.cookie.maxAge", change: func(d *config.Document) {
			d.Upstreams[0].Affinity.Cookie.MaxAge = "1500ms"
		}},

		{code: config.CodePolicyIDMissing, path: "accessLists[1].id", change: func(d *config.Document) {
			d.AccessLists = append(d.AccessLists, config.AccessList{Deny: []string{"203.0.113.0/24"}})
		}},
		{code: config.CodePolicyIDInvalid, path: "accessLists[1].id", change: func(d *config.Document) {
			d.AccessLists = append(d.AccessLists, config.AccessList{ID: "office:2"})
		}},
		{code: config.CodePolicyIDDuplicate, path: "accessLists[1].id", change: func(d *config.Document) {
			d.AccessLists = append(d.AccessLists, config.AccessList{ID: "office"})
		}},
		{code: config.CodeAccessListPrefixInvalid, path: "accessLists[0].deny[0]", change: func(d *config.Document) {
			d.AccessLists[0].Deny[0] = "198.51.100.300"
		}},
		{code: gate.CodeAccessListCountriesNoLookup, path: "accessLists[0].denyCountries", change: func(d *config.Document) {
			d.AccessLists[0].DenyCountries = []string{"XX"}
		}},

		{code: config.CodeGlobalProbeSourceInvalid, path: "global.probeSources[0]", change: func(d *config.Document) { d.Global.ProbeSources = []string{"lb"} }},
		{code: config.CodeHostPolicyUnknown, path: "hosts[0].policies[1]", change: func(d *config.Document) {
			addPolicies(d)
			d.Hosts[0].Policies = []string{"waf", "nope"}
		}},
		// tlsselect reads the minimum version for the handshake before the
		// gate reads it for the re-check: its code is the one reported.
		{code: tlsselect.CodeMinVersionInvalid, path: "hosts[0].tls.minVersion", change: func(d *config.Document) {
			withHostCertificate(d)
			d.Hosts[0].TLS = &config.HostTLS{MinVersion: "1.1"}
		}},
		{code: gate.CodeHostTLSAltSvcInvalid, path: "hosts[0].tls.altSvc", change: func(d *config.Document) {
			withHostCertificate(d)
			d.Hosts[0].TLS = &config.HostTLS{AltSvc: `h3=":443"`}
		}},
		{code: config.CodeHostTLSUnused, path: "hosts[0].tls", change: func(d *config.Document) {
			withCertificate(d) // served to no host
			d.Hosts[0].TLS = &config.HostTLS{ClientAuth: "required", ClientCAs: "testdata/tls/cert.pem"}
		}},
		{code: gate.CodeHostHSTSMaxAgeInvalid, path: "hosts[0].hsts.maxAge", change: func(d *config.Document) { d.Hosts[0].HSTS = &config.HSTS{MaxAge: "10ms"} }},
		{code: config.CodeHostHSTSMaxAgeMissing, path: "hosts[0].hsts.maxAge", change: func(d *config.Document) { d.Hosts[0].HSTS = &config.HSTS{Preload: true} }},
		{code: gate.CodeHostHTTPSRedirectStatusInvalid, path: "hosts[0].httpsRedirect.status", change: func(d *config.Document) {
			d.Hosts[0].HTTPSRedirect = &config.HTTPSRedirect{Status: 303}
		}},
		{code: gate.CodeHostHTTPSRedirectPortInvalid, path: "hosts[0].httpsRedirect.port", change: func(d *config.Document) {
			d.Hosts[0].HTTPSRedirect = &config.HTTPSRedirect{Port: 70000}
		}},
		{code: gate.CodeAnswerBodyTooLarge, path: "hosts[0].robots", change: func(d *config.Document) { d.Hosts[0].Robots = strings.Repeat("x", gate.MaxAnswerBody+1) }},
		{code: gate.CodeHostLimitsInvalid, path: "hosts[0].limits.maxHeaderCount", change: func(d *config.Document) {
			d.Hosts[0].Limits = &config.RequestLimits{MaxURIBytes: 100, MaxHeaderCount: -1}
		}},
		{code: config.CodeRoutePolicyUnknown, path: "hosts[0].routes[1].policies[0]", change: func(d *config.Document) { d.Hosts[0].Routes[1].Policies = []string{"nope"} }},
		{code: gate.CodeRouteMaxBodyBytesInvalid, path: "hosts[0].routes[0].maxBodyBytes", change: func(d *config.Document) { d.Hosts[0].Routes[0].MaxBodyBytes = -1 }},
		{code: config.CodePolicyIDMissing, path: "rateLimits[1].id", change: func(d *config.Document) {
			addPolicies(d)
			d.RateLimits = append(d.RateLimits, config.RateLimit{Requests: 1, Period: "1s", Scope: "shared"})
		}},
		{code: config.CodePolicyIDInvalid, path: "ruleSets[0].id", change: func(d *config.Document) {
			addPolicies(d)
			d.RuleSets[0].ID = "waf 1"
			d.Hosts[0].Policies[0] = "waf 1"
		}},
		{code: config.CodePolicyIDDuplicate, path: "forwardAuths[0].id", change: func(d *config.Document) {
			addPolicies(d)
			d.ForwardAuths[0].ID = "office"
			d.Hosts[0].Routes[0].Policies = []string{"office"}
		}},
		{code: gate.CodeChainModeUnknown, path: "rateLimits[0].mode", change: func(d *config.Document) {
			addPolicies(d)
			d.RateLimits[0].Mode = "dry"
		}},
		{code: gate.CodeAccessListUserNameInvalid, path: "accessLists[0].users[0].name", change: func(d *config.Document) {
			d.AccessLists[0].Users = []config.BasicUser{{Name: "a:b", PasswordHash: testBcrypt}}
		}},
		{code: gate.CodeAccessListUserHashInvalid, path: "accessLists[0].users[0].passwordHash", change: func(d *config.Document) {
			d.AccessLists[0].Users = []config.BasicUser{{Name: "ann", PasswordHash: "secret"}}
		}},
		{code: gate.CodeAccessListRealmInvalid, path: "accessLists[0].realm", change: func(d *config.Document) { d.AccessLists[0].Realm = "a\nb\x00" }},
		{code: gate.CodeRuleSetRuleActionUnknown, path: "ruleSets[0].rules[0].action", change: func(d *config.Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[0].Action = "block"
		}},
		{code: config.CodeRuleSetRuleRespondMissing, path: "ruleSets[0].rules[1].respond", change: func(d *config.Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[1].Respond = nil
		}},
		{code: config.CodeRuleSetRuleRespondUnexpected, path: "ruleSets[0].rules[0].respond", change: func(d *config.Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[0].Respond = &config.FixedAnswer{Status: 410}
		}},
		{code: gate.CodeAnswerStatusInvalid, path: "ruleSets[0].rules[1].respond.status", change: func(d *config.Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[1].Respond.Status = 99
		}},
		{code: gate.CodeRuleSetRuleMethodInvalid, path: "ruleSets[0].rules[1].methods[0]", change: func(d *config.Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[1].Methods = []string{"GE T"}
		}},
		{code: gate.CodeRuleSetRulePathInvalid, path: "ruleSets[0].rules[0].pathPrefix", change: func(d *config.Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[0].PathPrefix = "admin"
		}},
		{code: gate.CodeRuleSetRulePathInvalid, path: "ruleSets[0].rules[1].pathExact", change: func(d *config.Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[1].PathExact = "/x?y=1"
		}},
		{code: gate.CodeRateLimitRateInvalid, path: "rateLimits[0].period", change: func(d *config.Document) {
			addPolicies(d)
			d.RateLimits[0].Period = "0s"
		}},
		{code: gate.CodeRateLimitBurstInvalid, path: "rateLimits[0].burst", change: func(d *config.Document) {
			addPolicies(d)
			d.RateLimits[0].Burst = -1
		}},
		{code: config.CodeRateLimitScopeMissing, path: "rateLimits[0].scope", change: func(d *config.Document) {
			addPolicies(d)
			d.RateLimits[0].Scope = ""
		}},
		{code: gate.CodeRateLimitScopeUnknown, path: "rateLimits[0].scope", change: func(d *config.Document) {
			addPolicies(d)
			d.RateLimits[0].Scope = "host"
		}},
		{code: gate.CodeRateLimitBucketsUnknown, path: "rateLimits[0].buckets", change: func(d *config.Document) {
			addPolicies(d)
			d.RateLimits[0].Buckets = "fleet"
		}},
		{code: gate.CodeRateLimitStoreMissing, path: "rateLimits[0].buckets", change: func(d *config.Document) {
			addPolicies(d)
			d.RateLimits[0].Buckets = "cluster"
		}},
		{code: gate.CodeForwardAuthURLInvalid, path: "forwardAuths[0].url", change: func(d *config.Document) {
			addPolicies(d)
			d.ForwardAuths[0].URL = "auth.internal/check"
		}},
		{code: config.CodeDocumentDurationInvalid, path: "forwardAuths[0].timeout", change: func(d *config.Document) {
			addPolicies(d)
			d.ForwardAuths[0].Timeout = "soon"
		}},
		{code: gate.CodeForwardAuthHeaderInvalid, path: "forwardAuths[0].identityHeaders[0]", change: func(d *config.Document) {
			addPolicies(d)
			d.ForwardAuths[0].IdentityHeaders = []string{"X User"}
		}},
		{code: gate.CodeForwardAuthHeaderInvalid, path: "forwardAuths[0].identityHeaders[0]", change: func(d *config.Document) {
			addPolicies(d)
			d.ForwardAuths[0].IdentityHeaders = []string{"X_User"}
		}},
	}
}

// testBcrypt is a bcrypt hash (of "secret", cost 4).
const testBcrypt = "$2a$04$9g3HXQT6Xq8bRr0qy3bQ2uTzK3dxN7Zb4SuN6bzYpU3TtR9c4s6Hy"

// addPolicies adds a valid rule set, rate limit and forward auth that
// hosts[0] and its first route use.
func addPolicies(d *config.Document) {
	d.RuleSets = append(d.RuleSets, config.RuleSet{ID: "waf", Mode: "shadow", Rules: []config.Rule{
		{PathPrefix: "/wp-"},
		{PathExact: "/admin", Methods: []string{"DELETE"}, Action: "respond", Respond: &config.FixedAnswer{Status: 405}},
	}})
	d.RateLimits = append(d.RateLimits, config.RateLimit{ID: "rl", Requests: 10, Period: "1s", Scope: "route", ExemptProbes: true})
	d.ForwardAuths = append(d.ForwardAuths, config.ForwardAuth{ID: "sso", URL: "http://auth.internal/check", Timeout: "2s",
		RequestHeaders: []string{"Authorization"}, IdentityHeaders: []string{"X-User"}})
	d.Hosts[0].Policies = []string{"waf", "rl"}
	d.Hosts[0].Routes[0].Policies = []string{"sso", "office"}
}

func TestValidateCodes(t *testing.T) {
	known := knownCodes(t)
	for _, tc := range codeCases() {
		t.Run(tc.code, func(t *testing.T) {
			var probs []*ValidationError
			if tc.change == nil {
				_, err := config.Decode([]byte(tc.data))
				require.Error(t, err)
				probs = strictProblems(t, err)
			} else {
				doc := richDocument()
				tc.change(doc)
				probs = Validate(doc)
			}
			require.Len(t, probs, 1, "problems: %v", probs)
			assert.Equal(t, tc.code, probs[0].Code)
			assert.Equal(t, tc.path, probs[0].Path)
			assert.NotEmpty(t, probs[0].Msg)
			assert.True(t, known[probs[0].Code], "the code %s is declared nowhere", probs[0].Code)
			t.Log(probs[0])
		})
	}
}

// TestCheckIsTheDocumentsOwn: every case of a code of the document's own
// is found by config.Check alone, with the same code and path as the
// compile reports it, and the owners' codes are not: the compile leaves
// the document's checks to config's checker.
func TestCheckIsTheDocumentsOwn(t *testing.T) {
	own := map[string]bool{}
	for _, c := range config.Codes() {
		own[c] = true
	}
	for _, tc := range codeCases() {
		if tc.change == nil {
			continue
		}
		t.Run(tc.code+" "+tc.path, func(t *testing.T) {
			doc := richDocument()
			tc.change(doc)
			probs := config.Check(doc)
			if !own[tc.code] {
				for _, p := range probs {
					assert.True(t, own[p.Code], "Check reports %v, which is not the document's own", p)
				}
				return
			}
			require.Len(t, probs, 1, "problems: %v", probs)
			assert.Equal(t, tc.code, probs[0].Code)
			assert.Equal(t, tc.path, probs[0].Path)
		})
	}
}

func TestRedirectLoopThroughAnotherHost(t *testing.T) {
	d := richDocument()
	// old.example.com -> x.old.example.com (a wildcard redirect host) ->
	// old.example.com: both loop; a redirect to a proxy host does not.
	d.Hosts = append(d.Hosts,
		config.Host{Names: []string{"*.old.example.com"}, Kind: "redirect", Redirect: &config.Redirect{To: "http://old.example.com"}},
		config.Host{Names: []string{"moved.example.com"}, Kind: "redirect", Redirect: &config.Redirect{To: "https://www.example.com"}})
	d.Hosts[2].Redirect.To = "https://x.old.example.com"
	assert.Equal(t, []string{gate.CodeHostRedirectToLoop + " hosts[2].redirect.to", gate.CodeHostRedirectToLoop + " hosts[4].redirect.to"},
		codePaths(Validate(d)))
}

func TestEveryCodeHasACase(t *testing.T) {
	cases := map[string]bool{}
	for _, tc := range codeCases() {
		cases[tc.code] = true
	}
	known := map[string]bool{}
	for _, c := range append(config.Codes(), allCodes[:]...) {
		assert.False(t, known[c], "code %s listed twice", c)
		known[c] = true
		assert.True(t, cases[c], "code %s has no case in codeCases", c)
	}
	owners := ownerCodes(t)
	for c := range cases {
		assert.True(t, known[c] || owners[c], "case for %s, which no package declares", c)
	}
}

// TestCodesDocumented checks that the table in codes.go lists every code
// of the compile's (package config's test does the same for its own).
func TestCodesDocumented(t *testing.T) {
	src, err := os.ReadFile("codes.go")
	require.NoError(t, err)
	for _, c := range append(allCodes[:], CodeCompileInternal, CodePublisherZero) {
		assert.Contains(t, string(src), "//\t"+c+" ", "code %s is not in the table", c)
	}
}

func TestValidateRichDocument(t *testing.T) {
	assert.Empty(t, Validate(richDocument()))
	for _, name := range []string{"../config/testdata/valid.json", "../config/testdata/valid.yaml"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(name)
			require.NoError(t, err)
			doc, err := config.Decode(data)
			require.NoError(t, err)
			assert.Equal(t, richDocument(), doc)
			assert.Empty(t, Validate(doc))
		})
	}
}

func TestValidateZeroAndNil(t *testing.T) {
	assert.Empty(t, Validate(&config.Document{}))
	assert.Empty(t, Validate(nil))
}

func TestValidateReportsEveryProblem(t *testing.T) {
	doc := richDocument()
	doc.Global.TrustedProxies[1] = "192.0.2.300"
	doc.Hosts[0].Names = append(doc.Hosts[0].Names, "Example.com")
	doc.Hosts[1].Routes[0].Upstream = "nope"
	doc.Hosts[2].Redirect.Status = 304
	doc.Upstreams[0].Destinations[1].Address = "ftp://a"
	doc.Upstreams[1].HTTP.ConnectTimeout = "1h"
	doc.Upstreams[1].Health.Passive.FailureRate = 1
	doc.Certificates = []config.Certificate{{ID: "main"}}

	probs := Validate(doc)
	assert.Equal(t, []string{
		config.CodeUpstreamDestinationAddressInvalid + " upstreams[0].destinations[1].address",
		proxy.CodeClientConnectTimeoutInvalid + " upstreams[1].http.connectTimeout",
		health.CodePassiveFailureRateInvalid + " upstreams[1].health.passive.failureRate",
		CodeCertificateSourceMissing + " certificates[0]",
		config.CodeGlobalTrustedProxyInvalid + " global.trustedProxies[1]",
		config.CodeRouteUpstreamUnknown + " hosts[1].routes[0].upstream",
		gate.CodeHostNameDuplicate + " hosts[0].names[2]",
		gate.CodeHostRedirectStatusInvalid + " hosts[2].redirect.status",
	}, codePaths(probs))

	err := joinProblems(probs)
	assert.Equal(t, probs, Problems(err))
	assert.Equal(t, probs, Problems(fmt.Errorf("publish: %w", err)))
	assert.Contains(t, err.Error(), `hosts[1].routes[0].upstream: unknown upstream "nope" (route.upstream.unknown)`)
}

// TestCheckKnowsRegisteredPolicies: a compiler's Check accepts the
// balancing policies registered on it, and every built-in name balance
// exports; ZoneAware, which no package has, is refused.
func TestCheckKnowsRegisteredPolicies(t *testing.T) {
	doc := richDocument()
	doc.Upstreams[1].LoadBalancing = "Fastest"
	assert.Equal(t, []string{balance.CodePolicyUnknown + " upstreams[1].loadBalancing"}, codePaths(Validate(doc)))
	c := Compiler{Policies: new(balance.Policies)}
	require.NoError(t, c.Policies.Register("Fastest", func(balance.Config) (balance.Policy, error) { return balance.Random{}, nil }))
	assert.Empty(t, c.Check(doc))
	for _, name := range balance.PolicyNames() {
		doc.Upstreams[1].LoadBalancing = name
		assert.Empty(t, Validate(doc), name)
	}
}

func TestValidateHostNames(t *testing.T) {
	tests := []struct {
		names []string
		dup   bool // the last name collides with an earlier one
	}{
		{names: []string{"a.com", "*.a.com"}},
		{names: []string{"a.com", "A.COM"}, dup: true},
		{names: []string{"*.a.com", "*.A.com."}, dup: true},
		{names: []string{"bücher.example", "xn--bcher-kva.example"}, dup: true},
		{names: []string{"192.0.2.1", "[::ffff:192.0.2.1]"}, dup: true},
		{names: []string{"2001:db8::1", "[2001:DB8::1]"}, dup: true},
		{names: []string{"a.com", "b.a.com"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.names, ","), func(t *testing.T) {
			doc := &config.Document{Upstreams: []config.Upstream{{ID: "u"}}}
			for _, n := range tt.names {
				doc.Hosts = append(doc.Hosts, config.Host{Names: []string{n}, Routes: []config.Route{{Upstream: "u"}}})
			}
			probs := Validate(doc)
			if !tt.dup {
				assert.Empty(t, probs)
				return
			}
			require.Len(t, probs, 1)
			assert.Equal(t, gate.CodeHostNameDuplicate, probs[0].Code)
			assert.Equal(t, fmt.Sprintf("hosts[%d].names[0]", len(tt.names)-1), probs[0].Path)
		})
	}
}

func TestValidationErrorText(t *testing.T) {
	e := &ValidationError{Code: config.CodeRouteUpstreamUnknown, Path: "hosts[2].routes[0].upstream", Msg: `unknown upstream "x"`}
	assert.Equal(t, `hosts[2].routes[0].upstream: unknown upstream "x" (route.upstream.unknown)`, e.Error())
	e = &ValidationError{Code: config.CodeDocumentEmpty, Msg: "empty document"}
	assert.Equal(t, `empty document (document.empty)`, e.Error())
	assert.Nil(t, Problems(nil))
	var p *health.ValidationError
	assert.True(t, errors.As(joinProblems([]*ValidationError{e}), &p), "one type for every package")
}

// benchDocument returns n hosts h<i>.example.com, each with one route to
// its own upstream of two destinations.
func benchDocument(n int) *config.Document {
	doc := &config.Document{Hosts: make([]config.Host, n), Upstreams: make([]config.Upstream, n)}
	for i := range n {
		id := fmt.Sprintf("u%d", i)
		doc.Hosts[i] = config.Host{
			Names:  []string{fmt.Sprintf("h%d.example.com", i)},
			Routes: []config.Route{{ID: "r", Path: "/", Upstream: id}},
		}
		doc.Upstreams[i] = config.Upstream{ID: id, Destinations: []config.Destination{
			{ID: "d0", Address: fmt.Sprintf("http://10.%d.%d.1:8080", i/250, i%250)},
			{ID: "d1", Address: fmt.Sprintf("http://10.%d.%d.2:8080", i/250, i%250)},
		}}
	}
	return doc
}

var benchSizes = []int{100, 500, 2000}

func BenchmarkValidate(b *testing.B) {
	for _, n := range benchSizes {
		doc := benchDocument(n)
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if probs := Validate(doc); len(probs) > 0 {
					b.Fatal(probs[0])
				}
			}
		})
	}
}

// BenchmarkValidateCanonical is the cost of checking a publish: validate,
// then the canonical form compared with the current one.
func BenchmarkValidateCanonical(b *testing.B) {
	for _, n := range benchSizes {
		doc := benchDocument(n)
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if probs := Validate(doc); len(probs) > 0 {
					b.Fatal(probs[0])
				}
				if _, err := config.Canonical(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
