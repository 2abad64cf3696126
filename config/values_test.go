package config

import (
	"crypto/sha256"
	"fmt"
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
					{ID: "item", Path: "/api/v1/{id}/{**rest}", PathType: "template", Order: -1, Upstream: "api",
						Match: RouteMatch{
							Methods: []string{"GET", "HEAD"},
							Headers: []HeaderMatch{{Name: "X-Canary", Value: "1"}, {Name: "X-Debug", Type: "absent"}},
							Query:   []QueryMatch{{Name: "v", Type: "regex", Value: "[0-9]+"}},
						},
						Rewrite: Rewrite{Template: "/items/{id}/{rest}"}},
				},
				AccessList: "office", Server: "example",
			},
			{Names: []string{"*.example.com"}, Routes: []Route{{Path: "/", Upstream: "web"}}},
			{Names: []string{"old.example.com"}, Kind: "redirect", Redirect: &Redirect{To: "https://example.com", Status: 301}},
			{Names: []string{"status.example.com"}, Kind: "fixed", Fixed: &FixedAnswer{Status: 503, ContentType: "text/plain", Body: "maintenance\n"}},
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
					Passive: PassiveHealth{Enabled: true, Policy: "FailureRateWith5xx", Window: "30s",
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
	}
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
		p, err := ParsePrefix(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, string(appendPrefix(nil, p)), in)
	}
	for _, in := range []string{"", "10.0.0.1/8", "10.0.0.0/33", "fe80::1%eth0", "example.com", "::ffff:1.2.3.4/64", "10.0.0.0/"} {
		_, err := ParsePrefix(in)
		assert.Error(t, err, in)
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
		got, ok := ParsePin(p)
		assert.True(t, ok, p)
		assert.Equal(t, want, got, p)
	}
	for _, p := range []string{"", "abc", testPin[:62], "AQID", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU\n", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSu\r\n"} {
		_, ok := ParsePin(p)
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
