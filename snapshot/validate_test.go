package snapshot

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testPin = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// richDocument returns a valid document that uses every block; it is the
// document of testdata/valid.json and testdata/valid.yaml.
func richDocument() *Document {
	no := false
	return &Document{
		Global: Global{
			TrustedProxies:      []string{"10.0.0.0/8", "192.0.2.7", "2001:db8::/32"},
			TrustForwardedProto: true,
			Zone:                "eu-1",
			Server:              "edge",
			DefaultAnswer:       &FixedAnswer{Status: 404, Body: "no such host\n"},
		},
		Hosts: []Host{
			{
				Names: []string{"example.com", "www.example.com"},
				Routes: []Route{
					{ID: "api", Path: "/api", Upstream: "api"},
					{ID: "web", Upstream: "web"},
				},
				AccessList: "office", Certificate: "main", Server: "example",
			},
			{Names: []string{"*.example.com"}, Routes: []Route{{Path: "/", Upstream: "web"}}},
			{Names: []string{"old.example.com"}, Kind: KindRedirect, Redirect: &Redirect{To: "https://example.com", Status: 301}},
			{Names: []string{"status.example.com"}, Kind: KindFixed, Fixed: &FixedAnswer{Status: 503, ContentType: "text/plain", Body: "maintenance\n"}},
		},
		Upstreams: []Upstream{
			{
				ID: "api",
				Destinations: []Destination{
					{ID: "a1", Address: "http://10.0.1.1:8080", Health: "http://10.0.1.1:9090"},
					{ID: "a2", Address: "https://[2001:db8::2]", Metadata: map[string]string{"zone": "eu-1"}},
				},
				LoadBalancing: "LeastRequests",
				HTTP: UpstreamHTTP{
					Version: "2", VersionPolicy: "exact", ConnectTimeout: "5s", IdleTimeout: "10m",
					TLS: UpstreamTLS{Trust: "pinned", Pins: []string{testPin}, ServerName: "api.internal"},
				},
				Health: HealthCheck{
					Active: ActiveHealth{Enabled: true, Interval: "10s", Timeout: "2s", Path: "/healthz", Query: "deep=1",
						Policy: "ConsecutiveFailures", Threshold: 3},
					Passive: PassiveHealth{Enabled: true, Policy: "TransportFailureRateWith5xx", Window: "30s",
						MinRequests: 20, FailureRate: 0.5, ReactivationPeriod: "2m"},
					Availability: "HealthyAndUnknown", ProbeFirst: true, SlowStart: "30s",
				},
				Affinity: Affinity{
					Enabled: true, Mode: "HashCookie", FailurePolicy: "Return503", Key: "sticky",
					Cookie: AffinityCookie{Path: "/", Domain: "example.com", HTTPOnly: &no, Secure: "Always", SameSite: "None", MaxAge: "1h"},
				},
				Metadata: map[string]string{"team": "api"},
			},
			{
				ID: "web",
				Destinations: []Destination{
					{ID: "w1", Address: "http://web-1.internal:8080"},
					{ID: "w2", Address: "http://web-2.internal:8080"},
				},
			},
		},
		AccessLists: []AccessList{
			{ID: "office", Allow: []string{"198.51.100.0/24", "2001:db8:1::/48"}, Deny: []string{"198.51.100.66"}},
		},
		Certificates: []Certificate{
			{ID: "main", CertFile: "/etc/paduraksa/example.crt", KeyFile: "/etc/paduraksa/example.key"},
		},
	}
}

// codeCase is one bad document: either data for Decode, or a change to
// richDocument for Validate. The result must be exactly one problem.
type codeCase struct {
	code, path string
	data       string
	change     func(d *Document)
}

func codeCases() []codeCase {
	return []codeCase{
		{code: CodeDocumentSyntax, data: `{"hosts": [}`},
		{code: CodeDocumentSize, data: strings.Repeat(" ", MaxDocumentSize) + "{}"},
		{code: CodeDocumentEmpty, data: " \n"},
		{code: CodeDocumentFieldUnknown, path: "hosts[0].routes[1].bogus", data: `{"hosts":[{"routes":[{},{"upstream":"u","bogus":1}]}]}`},
		{code: CodeDocumentFieldType, path: "upstreams[0].health.active.threshold", data: `{"upstreams":[{"health":{"active":{"threshold":"3"}}}]}`},
		{code: CodeDocumentFieldDuplicate, path: "global.server", data: `{"global":{"server":"a","server":"b"}}`},

		{code: CodeGlobalTrustedProxyInvalid, path: "global.trustedProxies[3]", change: func(d *Document) {
			d.Global.TrustedProxies = append(d.Global.TrustedProxies, "10.0.0.1/8")
		}},
		{code: CodeGlobalDefaultAnswerStatusInvalid, path: "global.defaultAnswer.status", change: func(d *Document) { d.Global.DefaultAnswer.Status = 99 }},
		{code: CodeGlobalDefaultAnswerContentTypeInvalid, path: "global.defaultAnswer.contentType", change: func(d *Document) {
			d.Global.DefaultAnswer.ContentType = "text/plain\r\nX-Evil: 1"
		}},
		{code: CodeGlobalDefaultAnswerBodyTooLarge, path: "global.defaultAnswer.body", change: func(d *Document) {
			d.Global.DefaultAnswer.Body = strings.Repeat("x", MaxFixedBody+1)
		}},
		{code: CodeGlobalServerInvalid, path: "global.server", change: func(d *Document) { d.Global.Server = "edge\n" }},

		{code: CodeHostNamesEmpty, path: "hosts[1].names", change: func(d *Document) { d.Hosts[1].Names = nil }},
		{code: CodeHostNameInvalid, path: "hosts[0].names[1]", change: func(d *Document) { d.Hosts[0].Names[1] = "www example.com" }},
		{code: CodeHostNameDuplicate, path: "hosts[1].names[1]", change: func(d *Document) {
			d.Hosts[1].Names = append(d.Hosts[1].Names, "WWW.Example.COM.")
		}},
		{code: CodeHostKindInvalid, path: "hosts[0].kind", change: func(d *Document) { d.Hosts[0].Kind = "Proxy" }},
		{code: CodeHostRedirectMissing, path: "hosts[2].redirect", change: func(d *Document) { d.Hosts[2].Redirect = nil }},
		{code: CodeHostRedirectUnexpected, path: "hosts[0].redirect", change: func(d *Document) {
			d.Hosts[0].Redirect = &Redirect{To: "https://example.org"}
		}},
		{code: CodeHostRedirectToInvalid, path: "hosts[2].redirect.to", change: func(d *Document) { d.Hosts[2].Redirect.To = "ftp://example.com" }},
		{code: CodeHostNameInvalid, path: "hosts[0].names[1]", change: func(d *Document) { d.Hosts[0].Names[1] = "www..example.com" }},
		{code: CodeHostRedirectToLoop, path: "hosts[2].redirect.to", change: func(d *Document) { d.Hosts[2].Redirect.To = "https://OLD.example.com:8443" }},
		{code: CodeHostRedirectStatusInvalid, path: "hosts[2].redirect.status", change: func(d *Document) { d.Hosts[2].Redirect.Status = 200 }},
		{code: CodeHostFixedMissing, path: "hosts[3].fixed", change: func(d *Document) { d.Hosts[3].Fixed = nil }},
		{code: CodeHostFixedUnexpected, path: "hosts[2].fixed", change: func(d *Document) { d.Hosts[2].Fixed = &FixedAnswer{} }},
		{code: CodeHostFixedStatusInvalid, path: "hosts[3].fixed.status", change: func(d *Document) { d.Hosts[3].Fixed.Status = 600 }},
		{code: CodeHostFixedContentTypeInvalid, path: "hosts[3].fixed.contentType", change: func(d *Document) {
			d.Hosts[3].Fixed.ContentType = "text/plain\x00"
		}},
		{code: CodeHostFixedBodyTooLarge, path: "hosts[3].fixed.body", change: func(d *Document) {
			d.Hosts[3].Fixed.Body = strings.Repeat("x", MaxFixedBody+1)
		}},
		{code: CodeHostRoutesEmpty, path: "hosts[1].routes", change: func(d *Document) { d.Hosts[1].Routes = nil }},
		{code: CodeHostRoutesUnexpected, path: "hosts[3].routes", change: func(d *Document) {
			d.Hosts[3].Routes = []Route{{Upstream: "web"}}
		}},
		{code: CodeHostAccessListUnknown, path: "hosts[0].accessList", change: func(d *Document) { d.Hosts[0].AccessList = "Office" }},
		{code: CodeHostCertificateUnknown, path: "hosts[1].certificate", change: func(d *Document) { d.Hosts[1].Certificate = "other" }},
		{code: CodeHostServerInvalid, path: "hosts[0].server", change: func(d *Document) { d.Hosts[0].Server = "a\rb" }},

		{code: CodeRouteIDInvalid, path: "hosts[0].routes[0].id", change: func(d *Document) { d.Hosts[0].Routes[0].ID = "api v2" }},
		{code: CodeRouteIDDuplicate, path: "hosts[0].routes[1].id", change: func(d *Document) { d.Hosts[0].Routes[1].ID = "api" }},
		{code: CodeRoutePathInvalid, path: "hosts[0].routes[0].path", change: func(d *Document) { d.Hosts[0].Routes[0].Path = "/a/../api" }},
		{code: CodeRoutePathInvalid, path: "hosts[0].routes[0].path", change: func(d *Document) { d.Hosts[0].Routes[0].Path = "/api;v=1" }},
		{code: CodeRoutePathInvalid, path: "hosts[0].routes[0].path", change: func(d *Document) { d.Hosts[0].Routes[0].Path = "/a\\pi" }},
		{code: CodeRoutePathDuplicate, path: "hosts[0].routes[2].path", change: func(d *Document) {
			d.Hosts[0].Routes = append(d.Hosts[0].Routes, Route{Path: "/api/", Upstream: "web"})
		}},
		{code: CodeRoutePathDuplicate, path: "hosts[0].routes[2].path", change: func(d *Document) {
			d.Hosts[0].Routes = append(d.Hosts[0].Routes, Route{Path: "/API", Upstream: "web"})
		}},
		{code: CodeRouteAllowInPathInvalid, path: "hosts[0].routes[0].allowInPath[1]", change: func(d *Document) {
			d.Hosts[0].Routes[0].AllowInPath = []string{"encodedSlash", "EncodedHash"}
		}},
		{code: CodeRouteAllowInPathInvalid, path: "hosts[0].routes[0].allowInPath[1]", change: func(d *Document) {
			d.Hosts[0].Routes[0].AllowInPath = []string{"emptySegments", "emptySegments"}
		}},
		{code: CodeRouteUpstreamMissing, path: "hosts[1].routes[0].upstream", change: func(d *Document) { d.Hosts[1].Routes[0].Upstream = "" }},
		{code: CodeRouteUpstreamUnknown, path: "hosts[1].routes[0].upstream", change: func(d *Document) { d.Hosts[1].Routes[0].Upstream = "Web" }},
		{code: CodeRouteHostHeaderInvalid, path: "hosts[0].routes[0].hostHeader", change: func(d *Document) { d.Hosts[0].Routes[0].HostHeader = "Original" }},
		{code: CodeRouteHostNameInvalid, path: "hosts[0].routes[0].hostName", change: func(d *Document) {
			d.Hosts[0].Routes[0].HostHeader, d.Hosts[0].Routes[0].HostName = "custom", "bad name:99999"
		}},
		{code: CodeRouteRewriteStripPrefixRoot, path: "hosts[1].routes[0].rewrite.stripPrefix", change: func(d *Document) { d.Hosts[1].Routes[0].Rewrite.StripPrefix = true }},
		{code: CodeRouteRewriteAddPrefixInvalid, path: "hosts[0].routes[0].rewrite.addPrefix", change: func(d *Document) { d.Hosts[0].Routes[0].Rewrite.AddPrefix = "/a/%2e%2e" }},
		{code: CodeRouteRetryAttemptsInvalid, path: "hosts[0].routes[0].retry.attempts", change: func(d *Document) { d.Hosts[0].Routes[0].Retry.Attempts = 6 }},
		{code: CodeRouteRetryBodyLimitInvalid, path: "hosts[0].routes[0].retry.bodyLimit", change: func(d *Document) { d.Hosts[0].Routes[0].Retry.BodyLimit = -1 }},
		{code: CodeRouteRetryBudgetInvalid, path: "hosts[0].routes[0].retry.budget", change: func(d *Document) { d.Hosts[0].Routes[0].Retry.Budget = 1.5 }},
		{code: CodeHostCompressionMinimumSizeInvalid, path: "hosts[0].compression.minimumSize", change: func(d *Document) { d.Hosts[0].Compression.MinimumSize = 2 << 20 }},
		{code: CodeHostCompressionEncodingInvalid, path: "hosts[0].compression.encodings[1]", change: func(d *Document) {
			d.Hosts[0].Compression.Encodings = []string{"gzip", "deflate"}
		}},
		{code: CodeHostRequestIDInvalid, path: "hosts[0].requestId", change: func(d *Document) { d.Hosts[0].RequestID = "always" }},
		{code: CodeHeadersTooMany, path: "hosts[0].headers.response", change: func(d *Document) {
			for k := range 33 {
				d.Hosts[0].Headers.Response = append(d.Hosts[0].Headers.Response, HeaderRule{Name: "X-H" + itoa(k), Value: "v"})
			}
		}},
		{code: CodeHeadersNameInvalid, path: "hosts[0].headers.request[0].name", change: func(d *Document) {
			d.Hosts[0].Headers.Request = []HeaderRule{{Name: "X Bad", Value: "v"}}
		}},
		{code: CodeHeadersNameReserved, path: "hosts[0].routes[0].headers.request[0].name", change: func(d *Document) {
			d.Hosts[0].Routes[0].Headers.Request = []HeaderRule{{Name: "X-Forwarded-For", Value: "1.2.3.4"}}
		}},
		{code: CodeHeadersNameDuplicate, path: "hosts[0].headers.response[1].name", change: func(d *Document) {
			d.Hosts[0].Headers.Response = []HeaderRule{{Name: "X-Frame-Options", Value: "DENY"}, {Name: "x-frame-options", Operation: "remove"}}
		}},
		{code: CodeHeadersOperationInvalid, path: "hosts[0].headers.response[0].operation", change: func(d *Document) {
			d.Hosts[0].Headers.Response = []HeaderRule{{Name: "Set-Cookie", Value: "a=b"}}
		}},
		{code: CodeHeadersValueInvalid, path: "hosts[0].headers.request[0].value", change: func(d *Document) {
			d.Hosts[0].Headers.Request = []HeaderRule{{Name: "X-Env", Value: "a\r\nb"}}
		}},
		{code: CodeHeadersValueUnexpected, path: "hosts[0].headers.request[0].value", change: func(d *Document) {
			d.Hosts[0].Headers.Request = []HeaderRule{{Name: "X-Env", Operation: "remove", Value: "x"}}
		}},

		{code: CodeUpstreamIDMissing, path: "upstreams[2].id", change: func(d *Document) { d.Upstreams = append(d.Upstreams, Upstream{}) }},
		{code: CodeUpstreamIDInvalid, path: "upstreams[2].id", change: func(d *Document) {
			d.Upstreams = append(d.Upstreams, Upstream{ID: "web/2"})
		}},
		{code: CodeUpstreamIDDuplicate, path: "upstreams[2].id", change: func(d *Document) {
			d.Upstreams = append(d.Upstreams, Upstream{ID: "api"})
		}},
		{code: CodeUpstreamDestinationIDMissing, path: "upstreams[1].destinations[1].id", change: func(d *Document) {
			d.Upstreams[1].Destinations[1].ID = ""
		}},
		{code: CodeUpstreamDestinationIDInvalid, path: "upstreams[1].destinations[1].id", change: func(d *Document) {
			d.Upstreams[1].Destinations[1].ID = strings.Repeat("w", 129)
		}},
		{code: CodeUpstreamDestinationIDDuplicate, path: "upstreams[1].destinations[1].id", change: func(d *Document) {
			d.Upstreams[1].Destinations[1].ID = "w1"
		}},
		{code: CodeUpstreamDestinationAddressInvalid, path: "upstreams[1].destinations[0].address", change: func(d *Document) {
			d.Upstreams[1].Destinations[0].Address = "http://web-1.internal:8080/app"
		}},
		{code: CodeUpstreamDestinationHealthInvalid, path: "upstreams[0].destinations[0].health", change: func(d *Document) {
			d.Upstreams[0].Destinations[0].Health = "10.0.1.1:9090"
		}},
		{code: CodeUpstreamLoadBalancingUnknown, path: "upstreams[1].loadBalancing", change: func(d *Document) { d.Upstreams[1].LoadBalancing = "Fastest" }},
		{code: CodeUpstreamHTTPVersionInvalid, path: "upstreams[0].http.version", change: func(d *Document) { d.Upstreams[0].HTTP.Version = "3" }},
		{code: CodeUpstreamHTTPVersionPolicyInvalid, path: "upstreams[0].http.versionPolicy", change: func(d *Document) {
			d.Upstreams[0].HTTP.VersionPolicy = "orHigher"
		}},
		{code: CodeUpstreamHTTPConnectTimeoutInvalid, path: "upstreams[0].http.connectTimeout", change: func(d *Document) {
			d.Upstreams[0].HTTP.ConnectTimeout = "99ms"
		}},
		{code: CodeUpstreamHTTPIdleTimeoutInvalid, path: "upstreams[0].http.idleTimeout", change: func(d *Document) {
			d.Upstreams[0].HTTP.IdleTimeout = "-1s"
		}},
		{code: CodeUpstreamHTTPTLSTrustInvalid, path: "upstreams[1].http.tls.trust", change: func(d *Document) { d.Upstreams[1].HTTP.TLS.Trust = "none" }},
		{code: CodeUpstreamHTTPTLSPinsMissing, path: "upstreams[0].http.tls.pins", change: func(d *Document) { d.Upstreams[0].HTTP.TLS.Pins = nil }},
		{code: CodeUpstreamHTTPTLSPinsUnexpected, path: "upstreams[1].http.tls.pins", change: func(d *Document) {
			d.Upstreams[1].HTTP.TLS.Pins = []string{testPin}
		}},
		{code: CodeUpstreamHTTPTLSPinInvalid, path: "upstreams[0].http.tls.pins[1]", change: func(d *Document) {
			d.Upstreams[0].HTTP.TLS.Pins = append(d.Upstreams[0].HTTP.TLS.Pins, testPin[:62])
		}},
		{code: CodeUpstreamHTTPTLSServerNameInvalid, path: "upstreams[0].http.tls.serverName", change: func(d *Document) {
			d.Upstreams[0].HTTP.TLS.ServerName = "*.internal"
		}},
		{code: CodeUpstreamHealthActiveIntervalInvalid, path: "upstreams[0].health.active.interval", change: func(d *Document) {
			d.Upstreams[0].Health.Active.Interval = "0s"
		}},
		{code: CodeUpstreamHealthActiveTimeoutInvalid, path: "upstreams[0].health.active.timeout", change: func(d *Document) {
			d.Upstreams[0].Health.Active.Timeout = "2"
		}},
		{code: CodeUpstreamHealthActivePathInvalid, path: "upstreams[0].health.active.path", change: func(d *Document) {
			d.Upstreams[0].Health.Active.Path = "/healthz?deep=1"
		}},
		{code: CodeUpstreamHealthActiveQueryInvalid, path: "upstreams[0].health.active.query", change: func(d *Document) {
			d.Upstreams[0].Health.Active.Query = "deep=1#x"
		}},
		{code: CodeUpstreamHealthActivePolicyUnknown, path: "upstreams[0].health.active.policy", change: func(d *Document) {
			d.Upstreams[0].Health.Active.Policy = "consecutiveFailures"
		}},
		{code: CodeUpstreamHealthActiveThresholdInvalid, path: "upstreams[0].health.active.threshold", change: func(d *Document) {
			d.Upstreams[0].Health.Active.Threshold = -1
		}},
		{code: CodeUpstreamHealthPassivePolicyUnknown, path: "upstreams[0].health.passive.policy", change: func(d *Document) {
			d.Upstreams[0].Health.Passive.Policy = "FailureRate"
		}},
		{code: CodeUpstreamHealthPassiveWindowInvalid, path: "upstreams[0].health.passive.window", change: func(d *Document) {
			d.Upstreams[0].Health.Passive.Window = "30 s"
		}},
		{code: CodeUpstreamHealthPassiveMinRequestsInvalid, path: "upstreams[0].health.passive.minRequests", change: func(d *Document) {
			d.Upstreams[0].Health.Passive.MinRequests = -1
		}},
		{code: CodeUpstreamHealthPassiveFailureRateInvalid, path: "upstreams[0].health.passive.failureRate", change: func(d *Document) {
			d.Upstreams[0].Health.Passive.FailureRate = 1.5
		}},
		{code: CodeUpstreamHealthPassiveReactivationInvalid, path: "upstreams[0].health.passive.reactivationPeriod", change: func(d *Document) {
			d.Upstreams[0].Health.Passive.ReactivationPeriod = "0s"
		}},
		{code: CodeUpstreamHealthAvailabilityUnknown, path: "upstreams[0].health.availability", change: func(d *Document) {
			d.Upstreams[0].Health.Availability = "Always"
		}},
		{code: CodeUpstreamHealthProbeFirstNeedsActive, path: "upstreams[0].health.probeFirst", change: func(d *Document) {
			d.Upstreams[0].Health.Active.Enabled = false
		}},
		{code: CodeUpstreamHealthSlowStartInvalid, path: "upstreams[0].health.slowStart", change: func(d *Document) {
			d.Upstreams[0].Health.SlowStart = "-30s"
		}},
		{code: CodeUpstreamAffinityModeUnknown, path: "upstreams[0].affinity.mode", change: func(d *Document) { d.Upstreams[0].Affinity.Mode = "Cookie" }},
		{code: CodeUpstreamAffinityFailurePolicyUnknown, path: "upstreams[0].affinity.failurePolicy", change: func(d *Document) {
			d.Upstreams[0].Affinity.FailurePolicy = "Fail"
		}},
		{code: CodeUpstreamAffinityKeyInvalid, path: "upstreams[0].affinity.key", change: func(d *Document) { d.Upstreams[0].Affinity.Key = "sticky;x" }},
		{code: CodeUpstreamAffinityCookiePathInvalid, path: "upstreams[0].affinity.cookie.path", change: func(d *Document) {
			d.Upstreams[0].Affinity.Cookie.Path = "/;Domain=evil.com"
		}},
		{code: CodeUpstreamAffinityCookieDomainInvalid, path: "upstreams[0].affinity.cookie.domain", change: func(d *Document) {
			d.Upstreams[0].Affinity.Cookie.Domain = "example.com;x"
		}},
		{code: CodeUpstreamAffinityCookieSecureUnknown, path: "upstreams[1].affinity.cookie.secure", change: func(d *Document) {
			d.Upstreams[1].Affinity.Cookie.Secure = "Sometimes"
		}},
		{code: CodeUpstreamAffinityCookieSameSiteUnknown, path: "upstreams[0].affinity.cookie.sameSite", change: func(d *Document) {
			d.Upstreams[0].Affinity.Cookie.SameSite = "none"
		}},
		{code: CodeUpstreamAffinityCookieSameSiteNeedsSecure, path: "upstreams[0].affinity.cookie.sameSite", change: func(d *Document) {
			d.Upstreams[0].Affinity.Cookie.Secure = "SameAsRequest"
		}},
		{code: CodeUpstreamAffinityCookieMaxAgeInvalid, path: "upstreams[0].affinity.cookie.maxAge", change: func(d *Document) {
			d.Upstreams[0].Affinity.Cookie.MaxAge = "0s"
		}},

		{code: CodeAccessListIDMissing, path: "accessLists[1].id", change: func(d *Document) {
			d.AccessLists = append(d.AccessLists, AccessList{Deny: []string{"203.0.113.0/24"}})
		}},
		{code: CodeAccessListIDInvalid, path: "accessLists[1].id", change: func(d *Document) {
			d.AccessLists = append(d.AccessLists, AccessList{ID: "office:2"})
		}},
		{code: CodeAccessListIDDuplicate, path: "accessLists[1].id", change: func(d *Document) {
			d.AccessLists = append(d.AccessLists, AccessList{ID: "office"})
		}},
		{code: CodeAccessListPrefixInvalid, path: "accessLists[0].deny[0]", change: func(d *Document) {
			d.AccessLists[0].Deny[0] = "198.51.100.300"
		}},

		{code: CodeCertificateIDMissing, path: "certificates[1].id", change: func(d *Document) {
			d.Certificates = append(d.Certificates, Certificate{CertFile: "a.crt", KeyFile: "a.key"})
		}},
		{code: CodeCertificateIDInvalid, path: "certificates[1].id", change: func(d *Document) {
			d.Certificates = append(d.Certificates, Certificate{ID: "main cert", CertFile: "a.crt", KeyFile: "a.key"})
		}},
		{code: CodeCertificateIDDuplicate, path: "certificates[1].id", change: func(d *Document) {
			d.Certificates = append(d.Certificates, Certificate{ID: "main", CertFile: "a.crt", KeyFile: "a.key"})
		}},
		{code: CodeCertificateFileMissing, path: "certificates[0].keyFile", change: func(d *Document) { d.Certificates[0].KeyFile = "" }},

		{code: CodeGlobalProbeSourceInvalid, path: "global.probeSources[0]", change: func(d *Document) { d.Global.ProbeSources = []string{"lb"} }},
		{code: CodeHostPolicyUnknown, path: "hosts[0].policies[1]", change: func(d *Document) {
			addPolicies(d)
			d.Hosts[0].Policies = []string{"waf", "nope"}
		}},
		{code: CodeHostTLSMinVersionInvalid, path: "hosts[0].tls.minVersion", change: func(d *Document) { d.Hosts[0].TLS = &HostTLS{MinVersion: "1.1"} }},
		{code: CodeHostTLSAltSvcInvalid, path: "hosts[0].tls.altSvc", change: func(d *Document) { d.Hosts[0].TLS = &HostTLS{AltSvc: `h3=":443"`} }},
		{code: CodeHostHSTSMaxAgeInvalid, path: "hosts[0].hsts.maxAge", change: func(d *Document) { d.Hosts[0].HSTS = &HSTS{MaxAge: "10ms"} }},
		{code: CodeHostHTTPSRedirectStatusInvalid, path: "hosts[0].httpsRedirect.status", change: func(d *Document) {
			d.Hosts[0].HTTPSRedirect = &HTTPSRedirect{Status: 303}
		}},
		{code: CodeHostHTTPSRedirectPortInvalid, path: "hosts[0].httpsRedirect.port", change: func(d *Document) {
			d.Hosts[0].HTTPSRedirect = &HTTPSRedirect{Port: 70000}
		}},
		{code: CodeHostRobotsTooLarge, path: "hosts[0].robots", change: func(d *Document) { d.Hosts[0].Robots = strings.Repeat("x", MaxFixedBody+1) }},
		{code: CodeHostLimitsInvalid, path: "hosts[0].limits.maxHeaderCount", change: func(d *Document) {
			d.Hosts[0].Limits = &RequestLimits{MaxURIBytes: 100, MaxHeaderCount: -1}
		}},
		{code: CodeRoutePolicyUnknown, path: "hosts[0].routes[1].policies[0]", change: func(d *Document) { d.Hosts[0].Routes[1].Policies = []string{"nope"} }},
		{code: CodeRouteMaxBodyBytesInvalid, path: "hosts[0].routes[0].maxBodyBytes", change: func(d *Document) { d.Hosts[0].Routes[0].MaxBodyBytes = -1 }},
		{code: CodePolicyIDMissing, path: "rateLimits[1].id", change: func(d *Document) {
			addPolicies(d)
			d.RateLimits = append(d.RateLimits, RateLimit{Requests: 1, Period: "1s", Scope: "shared"})
		}},
		{code: CodePolicyIDInvalid, path: "ruleSets[0].id", change: func(d *Document) {
			addPolicies(d)
			d.RuleSets[0].ID = "waf 1"
			d.Hosts[0].Policies[0] = "waf 1"
		}},
		{code: CodePolicyIDDuplicate, path: "forwardAuths[0].id", change: func(d *Document) {
			addPolicies(d)
			d.ForwardAuths[0].ID = "office"
			d.Hosts[0].Routes[0].Policies = []string{"office"}
		}},
		{code: CodePolicyModeInvalid, path: "rateLimits[0].mode", change: func(d *Document) {
			addPolicies(d)
			d.RateLimits[0].Mode = "dry"
		}},
		{code: CodeAccessListUserNameInvalid, path: "accessLists[0].users[0].name", change: func(d *Document) {
			d.AccessLists[0].Users = []BasicUser{{Name: "a:b", PasswordHash: testBcrypt}}
		}},
		{code: CodeAccessListUserPasswordHashInvalid, path: "accessLists[0].users[0].passwordHash", change: func(d *Document) {
			d.AccessLists[0].Users = []BasicUser{{Name: "ann", PasswordHash: "secret"}}
		}},
		{code: CodeAccessListRealmInvalid, path: "accessLists[0].realm", change: func(d *Document) { d.AccessLists[0].Realm = "a\nb\x00" }},
		{code: CodeRuleSetRuleActionInvalid, path: "ruleSets[0].rules[0].action", change: func(d *Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[0].Action = "block"
		}},
		{code: CodeRuleSetRuleRespondInvalid, path: "ruleSets[0].rules[1].respond.status", change: func(d *Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[1].Respond.Status = 99
		}},
		{code: CodeRuleSetRuleMethodInvalid, path: "ruleSets[0].rules[1].methods[0]", change: func(d *Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[1].Methods = []string{"GE T"}
		}},
		{code: CodeRuleSetRulePathInvalid, path: "ruleSets[0].rules[0].pathPrefix", change: func(d *Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[0].PathPrefix = "admin"
		}},
		{code: CodeRuleSetRulePathInvalid, path: "ruleSets[0].rules[1].pathExact", change: func(d *Document) {
			addPolicies(d)
			d.RuleSets[0].Rules[1].PathExact = "/x?y=1"
		}},
		{code: CodeRateLimitRateInvalid, path: "rateLimits[0].period", change: func(d *Document) {
			addPolicies(d)
			d.RateLimits[0].Period = "0s"
		}},
		{code: CodeRateLimitBurstInvalid, path: "rateLimits[0].burst", change: func(d *Document) {
			addPolicies(d)
			d.RateLimits[0].Burst = -1
		}},
		{code: CodeRateLimitScopeInvalid, path: "rateLimits[0].scope", change: func(d *Document) {
			addPolicies(d)
			d.RateLimits[0].Scope = ""
		}},
		{code: CodeForwardAuthURLInvalid, path: "forwardAuths[0].url", change: func(d *Document) {
			addPolicies(d)
			d.ForwardAuths[0].URL = "auth.internal/check"
		}},
		{code: CodeForwardAuthTimeoutInvalid, path: "forwardAuths[0].timeout", change: func(d *Document) {
			addPolicies(d)
			d.ForwardAuths[0].Timeout = "soon"
		}},
		{code: CodeForwardAuthHeaderInvalid, path: "forwardAuths[0].identityHeaders[0]", change: func(d *Document) {
			addPolicies(d)
			d.ForwardAuths[0].IdentityHeaders = []string{"X User"}
		}},
	}
}

// testBcrypt is a bcrypt hash (of "secret", cost 4).
const testBcrypt = "$2a$04$9g3HXQT6Xq8bRr0qy3bQ2uTzK3dxN7Zb4SuN6bzYpU3TtR9c4s6Hy"

// addPolicies adds a valid rule set, rate limit and forward auth that
// hosts[0] and its first route use.
func addPolicies(d *Document) {
	d.RuleSets = append(d.RuleSets, RuleSet{ID: "waf", Mode: ModeShadow, Rules: []Rule{
		{PathPrefix: "/wp-"},
		{PathExact: "/admin", Methods: []string{"DELETE"}, Action: ActionRespond, Respond: &FixedAnswer{Status: 405}},
	}})
	d.RateLimits = append(d.RateLimits, RateLimit{ID: "rl", Requests: 10, Period: "1s", Scope: "route", ExemptProbes: true})
	d.ForwardAuths = append(d.ForwardAuths, ForwardAuth{ID: "sso", URL: "http://auth.internal/check", Timeout: "2s",
		RequestHeaders: []string{"Authorization"}, IdentityHeaders: []string{"X-User"}})
	d.Hosts[0].Policies = []string{"waf", "rl"}
	d.Hosts[0].Routes[0].Policies = []string{"sso", "office"}
}

func TestValidateCodes(t *testing.T) {
	for _, tc := range codeCases() {
		t.Run(tc.code, func(t *testing.T) {
			var probs []*ValidationError
			if tc.change == nil {
				doc, err := Decode([]byte(tc.data))
				require.Error(t, err)
				require.Nil(t, doc)
				probs = strictProblems(t, err)
			} else {
				doc := richDocument()
				tc.change(doc)
				probs = Validate(doc, ValidateOptions{})
			}
			require.Len(t, probs, 1, "problems: %v", probs)
			assert.Equal(t, tc.code, probs[0].Code)
			assert.Equal(t, tc.path, probs[0].Path)
			assert.NotEmpty(t, probs[0].Msg)
			t.Log(probs[0])
		})
	}
}

func TestRedirectLoopThroughAnotherHost(t *testing.T) {
	d := richDocument()
	// old.example.com -> x.old.example.com (a wildcard redirect host) ->
	// old.example.com: both loop; a redirect to a proxy host does not.
	d.Hosts = append(d.Hosts,
		Host{Names: []string{"*.old.example.com"}, Kind: KindRedirect, Redirect: &Redirect{To: "http://old.example.com"}},
		Host{Names: []string{"moved.example.com"}, Kind: KindRedirect, Redirect: &Redirect{To: "https://www.example.com"}})
	d.Hosts[2].Redirect.To = "https://x.old.example.com"
	var got []string
	for _, p := range Validate(d, ValidateOptions{}) {
		got = append(got, p.Code+" "+p.Path)
	}
	assert.Equal(t, []string{"host.redirect.to.loop hosts[2].redirect.to", "host.redirect.to.loop hosts[4].redirect.to"}, got)
}

func TestEveryCodeHasACase(t *testing.T) {
	cases := map[string]bool{}
	for _, tc := range codeCases() {
		cases[tc.code] = true
	}
	known := map[string]bool{}
	for _, c := range allCodes {
		assert.False(t, known[c], "code %s listed twice", c)
		known[c] = true
		assert.True(t, cases[c], "code %s has no case in codeCases", c)
	}
	for c := range cases {
		assert.True(t, known[c], "case for %s, which is not in allCodes", c)
	}
}

// TestCodesDocumented checks that the table in codes.go lists every code.
func TestCodesDocumented(t *testing.T) {
	src, err := os.ReadFile("codes.go")
	require.NoError(t, err)
	for _, c := range allCodes {
		assert.Contains(t, string(src), "//\t"+c+" ", "code %s is not in the table", c)
	}
}

func TestValidateRichDocument(t *testing.T) {
	assert.Empty(t, Validate(richDocument(), ValidateOptions{}))
	for _, name := range []string{"testdata/valid.json", "testdata/valid.yaml"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(name)
			require.NoError(t, err)
			doc, err := Decode(data)
			require.NoError(t, err)
			assert.Equal(t, richDocument(), doc)
			assert.Empty(t, Validate(doc, ValidateOptions{}))
		})
	}
}

func TestValidateZeroAndNil(t *testing.T) {
	assert.Empty(t, Validate(&Document{}, ValidateOptions{}))
	assert.Empty(t, Validate(nil, ValidateOptions{}))
}

func TestValidateReportsEveryProblem(t *testing.T) {
	doc := richDocument()
	doc.Global.TrustedProxies[1] = "192.0.2.300"
	doc.Hosts[0].Names = append(doc.Hosts[0].Names, "Example.com")
	doc.Hosts[1].Routes[0].Upstream = "nope"
	doc.Hosts[2].Redirect.Status = 304
	doc.Upstreams[0].Destinations[1].Address = "ftp://a"
	doc.Upstreams[1].HTTP.ConnectTimeout = "1h"
	doc.Certificates[0].CertFile = ""
	doc.Certificates[0].KeyFile = ""

	probs := Validate(doc, ValidateOptions{})
	got := make([]string, len(probs))
	for i, p := range probs {
		got[i] = p.Code + " " + p.Path
	}
	assert.Equal(t, []string{
		CodeGlobalTrustedProxyInvalid + " global.trustedProxies[1]",
		CodeHostNameDuplicate + " hosts[0].names[2]",
		CodeRouteUpstreamUnknown + " hosts[1].routes[0].upstream",
		CodeHostRedirectStatusInvalid + " hosts[2].redirect.status",
		CodeUpstreamDestinationAddressInvalid + " upstreams[0].destinations[1].address",
		CodeUpstreamHTTPConnectTimeoutInvalid + " upstreams[1].http.connectTimeout",
		CodeCertificateFileMissing + " certificates[0].certFile",
		CodeCertificateFileMissing + " certificates[0].keyFile",
	}, got)

	err := joinProblems(probs)
	assert.Equal(t, probs, Problems(err))
	assert.Equal(t, probs, Problems(fmt.Errorf("publish: %w", err)))
	assert.Contains(t, err.Error(), `hosts[1].routes[0].upstream: unknown upstream "nope" (route.upstream.unknown)`)
}

func TestValidateLoadBalancingOptions(t *testing.T) {
	doc := richDocument()
	doc.Upstreams[1].LoadBalancing = "Fastest"
	assert.Len(t, Validate(doc, ValidateOptions{}), 1)
	assert.Empty(t, Validate(doc, ValidateOptions{LoadBalancing: []string{"Slowest", "Fastest"}}))
	for _, name := range []string{"PowerOfTwoChoices", "LeastRequests", "RoundRobin", "Random", "FirstAlphabetical", "ZoneAware", "ConsistentHash"} {
		doc.Upstreams[1].LoadBalancing = name
		assert.Empty(t, Validate(doc, ValidateOptions{}), name)
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
			doc := &Document{Upstreams: []Upstream{{ID: "u"}}}
			for _, n := range tt.names {
				doc.Hosts = append(doc.Hosts, Host{Names: []string{n}, Routes: []Route{{Upstream: "u"}}})
			}
			probs := Validate(doc, ValidateOptions{})
			if !tt.dup {
				assert.Empty(t, probs)
				return
			}
			require.Len(t, probs, 1)
			assert.Equal(t, CodeHostNameDuplicate, probs[0].Code)
			assert.Equal(t, fmt.Sprintf("hosts[%d].names[0]", len(tt.names)-1), probs[0].Path)
		})
	}
}

func TestValidateRoutePaths(t *testing.T) {
	good := []string{"", "/", "/api", "/api/", "/a.b/c-d_e~f", "/café", "/a/.well-known", "/..a", "/a/..b", "/a$b"}
	bad := []string{"api", "/a?b", "/a#b", "/a%20b", "/a//b", "//", "/.", "/..", "/a/./b", "/a/../b", "/a/..", "/a b", "/a\tb", "/a\x7f",
		"/a;b", "/a\\b", "/a..", "/a./b", "/a::$DATA", "/\xc0\xae"} // the last four: no path view holds them
	for _, p := range good {
		assert.Empty(t, checkRoutePath(p), "%q", p)
	}
	for _, p := range bad {
		assert.NotEmpty(t, checkRoutePath(p), "%q", p)
	}
}

func TestValidateRedirectTargets(t *testing.T) {
	good := []string{"https://example.com", "http://example.com:8080/base", "https://[2001:db8::1]/x", "https://example.com/"}
	bad := []string{"", "example.com", "/path", "https://", "https://user@example.com", "https://example.com/#x",
		"https://example.com/?a=1", "mailto:a@example.com", "https://exa mple.com", "https://example.com:99999", "https://*.example.com",
		"https://example.com/\r\nX: 1"}
	for _, to := range good {
		assert.Empty(t, checkRedirectTo(to, false), "%q", to)
	}
	for _, to := range bad {
		assert.NotEmpty(t, checkRedirectTo(to, false), "%q", to)
	}
	assert.Empty(t, checkRedirectTo("https://example.com/?a=1", true), "a query is fine when the path is dropped")
}

func TestValidatePrefixes(t *testing.T) {
	good := map[string]string{
		"10.0.0.0/8":           "10.0.0.0/8",
		"192.0.2.7":            "192.0.2.7",
		"192.0.2.7/32":         "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"::ffff:192.0.2.0/120": "192.0.2.0/24",
		"2001:DB8::/32":        "2001:db8::/32",
		"::/0":                 "::/0",
	}
	for in, want := range good {
		p, reason := parseAddrPrefix(in)
		require.Empty(t, reason, in)
		assert.Equal(t, want, string(appendPrefix(nil, p)), in)
	}
	for _, in := range []string{"", "10.0.0.1/8", "10.0.0.0/33", "fe80::1%eth0", "example.com", "::ffff:1.2.3.4/64", "10.0.0.0/"} {
		_, reason := parseAddrPrefix(in)
		assert.NotEmpty(t, reason, in)
	}
}

func TestValidatePins(t *testing.T) {
	empty := sha256.Sum256(nil) // testPin in hex
	sum := [32]byte{1, 2, 3}
	for p, want := range map[string][32]byte{
		testPin:                  empty,
		strings.ToUpper(testPin): empty,
		"47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=": empty,
		"47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU":  empty,
		"AQIDAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=": sum,
		"AQIDAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA":  sum,
	} {
		got, ok := decodeSHA256Pin(p)
		assert.True(t, ok, p)
		assert.Equal(t, want, got, p)
	}
	for _, p := range []string{"", "abc", testPin[:62], "AQID", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU\n", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSu\r\n"} {
		_, ok := decodeSHA256Pin(p)
		assert.False(t, ok, p)
	}
}

func TestParseAddress(t *testing.T) {
	tests := []struct{ in, scheme, hostport string }{
		{"http://example.com", "http", "example.com:80"},
		{"https://example.com", "https", "example.com:443"},
		{"HTTPS://Example.COM:8443/", "https", "example.com:8443"},
		{"http://10.0.0.1:8080", "http", "10.0.0.1:8080"},
		{"http://[2001:db8::1]", "http", "[2001:db8::1]:80"},
		{"http://[2001:DB8::1]:81", "http", "[2001:db8::1]:81"},
		{"http://[::ffff:10.0.0.1]:81", "http", "10.0.0.1:81"},
		{"http://bücher.example", "http", "xn--bcher-kva.example:80"},
	}
	for _, tt := range tests {
		scheme, hostport, err := ParseAddress(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.scheme, scheme, tt.in)
		assert.Equal(t, tt.hostport, hostport, tt.in)
	}
	for _, in := range []string{
		"", "example.com", "ftp://example.com", "http://", "http://:80", "http://example.com:", "http://example.com:0",
		"http://example.com:65536", "http://example.com:080", "http://example.com/app", "http://example.com?x",
		"http://example.com#x", "http://user@example.com", "http://2001:db8::1", "http://[2001:db8::1", "http://[10.0.0.1]",
		"http://[fe80::1%25eth0]", "http://*.example.com", "http://exa mple.com", "http://example.com.", "http://[::1]x",
	} {
		_, _, err := ParseAddress(in)
		assert.Error(t, err, in)
	}
}

func TestParseDuration(t *testing.T) {
	d, err := ParseDuration("", 7)
	require.NoError(t, err)
	assert.EqualValues(t, 7, d)
	d, err = ParseDuration("1m30s", 7)
	require.NoError(t, err)
	assert.Equal(t, "1m30s", d.String())
	_, err = ParseDuration("-1s", 0)
	assert.Error(t, err)
	_, err = ParseDuration("10", 0)
	assert.Error(t, err)
}

func TestValidationErrorText(t *testing.T) {
	e := &ValidationError{Code: CodeRouteUpstreamUnknown, Path: "hosts[2].routes[0].upstream", Msg: `unknown upstream "x"`}
	assert.Equal(t, `hosts[2].routes[0].upstream: unknown upstream "x" (route.upstream.unknown)`, e.Error())
	e = &ValidationError{Code: CodeDocumentEmpty, Msg: "empty document"}
	assert.Equal(t, `empty document (document.empty)`, e.Error())
	assert.Nil(t, Problems(nil))
}

// benchDocument returns n hosts h<i>.example.com, each with one route to
// its own upstream of two destinations.
func benchDocument(n int) *Document {
	doc := &Document{Hosts: make([]Host, n), Upstreams: make([]Upstream, n)}
	for i := range n {
		id := fmt.Sprintf("u%d", i)
		doc.Hosts[i] = Host{
			Names:  []string{fmt.Sprintf("h%d.example.com", i)},
			Routes: []Route{{ID: "r", Path: "/", Upstream: id}},
		}
		doc.Upstreams[i] = Upstream{ID: id, Destinations: []Destination{
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
				if probs := Validate(doc, ValidateOptions{}); len(probs) > 0 {
					b.Fatal(probs[0])
				}
			}
		})
	}
}
