package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// canonicalOf decodes data and returns its canonical form.
func canonicalOf(t *testing.T, data string) string {
	t.Helper()
	doc, err := Decode([]byte(data))
	require.NoError(t, err, data)
	b, err := Canonical(doc)
	require.NoError(t, err)
	return string(b)
}

func TestCanonicalSameConfig(t *testing.T) {
	tests := []struct{ name, a, b string }{
		{"field order",
			`{"hosts":[{"names":["a.com"],"routes":[{"upstream":"u","path":"/x"}]}],"upstreams":[{"id":"u"}]}`,
			`{"upstreams":[{"id":"u"}],"hosts":[{"routes":[{"path":"/x","upstream":"u"}],"names":["a.com"]}]}`},
		{"yaml and json",
			`{"hosts":[{"names":["a.com"],"routes":[{"upstream":"u"}]}],"upstreams":[{"id":"u","http":{"version":"2"}}]}`,
			"hosts:\n- names: [a.com]\n  routes:\n  - upstream: u\nupstreams:\n- id: u\n  http:\n    version: 2\n"},
		{"explicit defaults",
			`{"hosts":[{"names":["a.com"],"routes":[{"upstream":"u"}]}],"upstreams":[{"id":"u"}]}`,
			`{"global":{"server":"Paduraksa","trustedProxies":[]},
			  "hosts":[{"names":["a.com"],"kind":"proxy","routes":[{"path":"/","upstream":"u"}]}],
			  "upstreams":[{"id":"u","loadBalancing":"PowerOfTwoChoices","destinations":[],"metadata":{},
			    "http":{"version":"1.1","versionPolicy":"orLower","connectTimeout":"10s","idleTimeout":"1h","tls":{"trust":"system","pins":[]}},
			    "health":{"active":{"enabled":false,"interval":"15s","timeout":"10s","path":"/","policy":"ConsecutiveFailures","threshold":2},
			      "passive":{"policy":"TransportFailureRate","window":"60s","minRequests":10,"failureRate":0.3,"reactivationPeriod":"1m"},
			      "availability":"HealthyOrPanic","slowStart":"0s"},
			    "affinity":{"mode":"HashCookie","failurePolicy":"Redistribute","key":".Paduraksa.Affinity",
			      "cookie":{"httpOnly":true,"secure":"SameAsRequest","sameSite":"Lax"}}}],
			  "accessLists":[],"certificates":[]}`},
		{"default statuses",
			`{"global":{"defaultAnswer":{}},"hosts":[{"names":["a.com"],"kind":"redirect","redirect":{"to":"https://b.com"}},{"names":["c.com"],"kind":"fixed","fixed":{}}]}`,
			`{"global":{"defaultAnswer":{"status":404,"contentType":"text/plain; charset=utf-8"}},"hosts":[{"names":["a.com"],"kind":"redirect","redirect":{"to":"https://b.com/","status":308}},{"names":["c.com"],"kind":"fixed","fixed":{"status":200}}]}`},
		{"durations",
			`{"upstreams":[{"id":"u","http":{"connectTimeout":"10000ms","idleTimeout":"90s"},"health":{"active":{"interval":"0.5s"}},"affinity":{"cookie":{"maxAge":"24h"}}}]}`,
			`{"upstreams":[{"id":"u","http":{"idleTimeout":"1m30s"},"health":{"active":{"interval":"500ms"}},"affinity":{"cookie":{"maxAge":"1440m"}}}]}`},
		{"host names",
			`{"hosts":[{"names":["EXAMPLE.com.","*.Example.COM","Bücher.example","[::FFFF:192.0.2.1]"],"routes":[{"upstream":"u"}]}]}`,
			`{"hosts":[{"names":["example.com","*.example.com","xn--bcher-kva.example","192.0.2.1"],"routes":[{"upstream":"u"}]}]}`},
		{"addresses",
			`{"upstreams":[{"id":"u","destinations":[{"id":"a","address":"HTTP://A.com/","health":"http://a.com:80"},{"id":"b","address":"https://[2001:DB8::1]"}]}]}`,
			`{"upstreams":[{"id":"u","destinations":[{"id":"a","address":"http://a.com:80"},{"id":"b","address":"https://[2001:db8::1]:443"}]}]}`},
		{"route paths",
			`{"hosts":[{"names":["a.com"],"routes":[{"path":"/api/","upstream":"u"},{"path":"/","upstream":"u"}]}]}`,
			`{"hosts":[{"names":["a.com"],"routes":[{"path":"/api","upstream":"u"},{"upstream":"u"}]}]}`},
		{"prefixes",
			`{"global":{"trustedProxies":["::ffff:10.0.0.0/104","192.0.2.7/32","2001:DB8::/32"]},"accessLists":[{"id":"a","allow":["::ffff:192.0.2.1"]}]}`,
			`{"global":{"trustedProxies":["10.0.0.0/8","192.0.2.7","2001:db8::/32"]},"accessLists":[{"id":"a","allow":["192.0.2.1/32"]}]}`},
		{"pins and server name",
			`{"upstreams":[{"id":"u","http":{"tls":{"trust":"pinned","serverName":"API.Internal","pins":["` + testPin + `"]}}}]}`,
			`{"upstreams":[{"id":"u","http":{"tls":{"trust":"pinned","serverName":"api.internal","pins":["47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU"]}}}]}`},
		{"proxyProtocol off is the default",
			`{"upstreams":[{"id":"u","http":{"proxyProtocol":"off","tls":{"trust":"system"}}}]}`,
			`{"upstreams":[{"id":"u"}]}`},
		{"limits of 0 are none",
			`{"upstreams":[{"id":"u","limits":{"maxInFlight":0,"maxPending":0}}]}`,
			`{"upstreams":[{"id":"u"}]}`},
		{"limits",
			`{"upstreams":[{"id":"u","limits":{"maxConnectionsPerDestination":8,"maxInFlight":100,"maxPending":0}}]}`,
			`{"upstreams":[{"id":"u","limits":{"maxInFlight":100,"maxConnectionsPerDestination":8}}]}`},
		{"connectFailures on and the outlier block's defaults",
			`{"hosts":[{"names":["a.com"],"routes":[{"upstream":"u","retry":{"connectFailures":"on"}}]}],"upstreams":[{"id":"u","health":{"outlier":{"consecutive5xx":0,"baseEjectionTime":"30s","maxEjectionTime":"5m","maxEjectionPercent":50}}}]}`,
			`{"hosts":[{"names":["a.com"],"routes":[{"upstream":"u"}]}],"upstreams":[{"id":"u"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, canonicalOf(t, tt.a), canonicalOf(t, tt.b))
		})
	}
}

func TestCanonicalDifferentConfig(t *testing.T) {
	base := `{"hosts":[{"names":["a.com"],"routes":[{"path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u"}]}`
	tests := []struct{ name, other string }{
		{"path case", `{"hosts":[{"names":["a.com"],"routes":[{"path":"/API","upstream":"u"}]}],"upstreams":[{"id":"u"}]}`},
		{"path", `{"hosts":[{"names":["a.com"],"routes":[{"path":"/","upstream":"u"}]}],"upstreams":[{"id":"u"}]}`},
		{"name", `{"hosts":[{"names":["b.com"],"routes":[{"path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u"}]}`},
		{"wildcard", `{"hosts":[{"names":["*.a.com"],"routes":[{"path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u"}]}`},
		{"idle timeout off", `{"hosts":[{"names":["a.com"],"routes":[{"path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u","http":{"idleTimeout":"0s"}}]}`},
		{"default answer", `{"global":{"defaultAnswer":{}},"hosts":[{"names":["a.com"],"routes":[{"path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u"}]}`},
		{"http only", `{"hosts":[{"names":["a.com"],"routes":[{"path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u","affinity":{"cookie":{"httpOnly":false}}}]}`},
		{"metadata", `{"hosts":[{"names":["a.com"],"routes":[{"path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u","metadata":{"a":""}}]}`},
		{"route id", `{"hosts":[{"names":["a.com"],"routes":[{"id":"r","path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u"}]}`},
		{"https port", `{"global":{"httpsPort":8443},"hosts":[{"names":["a.com"],"routes":[{"path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u"}]}`},
		{"catch-all", `{"hosts":[{"names":["*"],"routes":[{"path":"/api","upstream":"u"}]}],"upstreams":[{"id":"u"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.NotEqual(t, canonicalOf(t, base), canonicalOf(t, tt.other))
		})
	}
	// Health equal to the address is the default; another is not.
	a := canonicalOf(t, `{"upstreams":[{"id":"u","destinations":[{"id":"a","address":"http://a.com"}]}]}`)
	b := canonicalOf(t, `{"upstreams":[{"id":"u","destinations":[{"id":"a","address":"http://a.com","health":"http://a.com:81"}]}]}`)
	assert.NotEqual(t, a, b)
	// An explicit Alt-Svc or HTTPS redirect port of 443 is no default:
	// the default is global.httpsPort, or the port the listener bound.
	for _, pair := range [][2]string{
		{`{"hosts":[{"names":["a.com"],"tls":{"http3":true},"kind":"fixed","fixed":{}}]}`,
			`{"hosts":[{"names":["a.com"],"tls":{"http3":true,"altSvc":"h3=\":443\"; ma=86400"},"kind":"fixed","fixed":{}}]}`},
		{`{"hosts":[{"names":["a.com"],"httpsRedirect":{},"kind":"fixed","fixed":{}}]}`,
			`{"hosts":[{"names":["a.com"],"httpsRedirect":{"port":443},"kind":"fixed","fixed":{}}]}`},
	} {
		assert.NotEqual(t, canonicalOf(t, pair[0]), canonicalOf(t, pair[1]), pair[1])
	}
	assert.Equal(t, canonicalOf(t, `{"hosts":[{"names":["*"]}]}`), canonicalOf(t, `{"hosts":[{"names":[" * "]}]}`), "the catch-all in one spelling")
	// Fixed and redirect blocks keep their presence even when empty.
	assert.Contains(t, canonicalOf(t, `{"hosts":[{"kind":"fixed","fixed":{"status":200}}]}`), `"fixed":{}`)
}

// TestCanonicalGolden pins the canonical form of testdata/valid.yaml. The
// golden file holds it indented, for readable diffs.
func TestCanonicalGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/valid.yaml")
	require.NoError(t, err)
	got := canonicalOf(t, string(data))
	var indented bytes.Buffer
	require.NoError(t, json.Indent(&indented, []byte(got), "", "  "))
	indented.WriteByte('\n')
	const golden = "testdata/canonical.golden"
	if *updateGolden {
		require.NoError(t, os.WriteFile(golden, indented.Bytes(), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "go test ./snapshot -run TestCanonicalGolden -update creates it")
	assert.Equal(t, string(want), indented.String())
}

// TestCanonicalRoundTrip checks that the canonical form of a valid
// document decodes to a valid document with the same canonical form.
func TestCanonicalRoundTrip(t *testing.T) {
	for _, name := range []string{"testdata/valid.json", "testdata/valid.yaml"} {
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		c1 := canonicalOf(t, string(data))
		doc, err := Decode([]byte(c1))
		require.NoError(t, err)
		assert.Empty(t, Check(doc))
		c2, err := Canonical(doc)
		require.NoError(t, err)
		assert.Equal(t, c1, string(c2))
	}
}

func TestCanonicalDoesNotModify(t *testing.T) {
	const data = `{"global":{"trustedProxies":["::ffff:10.0.0.0/104"]},
		"hosts":[{"names":["EXAMPLE.com."],"kind":"proxy","routes":[{"path":"/api/","upstream":"u"}]}],
		"upstreams":[{"id":"u","destinations":[{"id":"a","address":"HTTP://A.com/","metadata":{"b":"1","a":"2"}}],
		  "http":{"connectTimeout":"10000ms","tls":{"trust":"pinned","pins":["` + testPin + `"]}}}]}`
	doc, err := Decode([]byte(data))
	require.NoError(t, err)
	before, err := Decode([]byte(data))
	require.NoError(t, err)
	_, err = Canonical(doc)
	require.NoError(t, err)
	assert.Equal(t, before, doc)

	rich := richDocument()
	_, err = Canonical(rich)
	require.NoError(t, err)
	assert.Equal(t, richDocument(), rich)
}

// TestCanonicalWritesEveryField fills every field of a document with a
// value that is not a default and checks that the canonical form keeps
// all of them: a field added to document.go without being added to
// Canonical fails here.
func TestCanonicalWritesEveryField(t *testing.T) {
	var doc Document
	fillValue(reflect.ValueOf(&doc).Elem())
	b, err := Canonical(&doc)
	require.NoError(t, err)
	var back Document
	require.NoError(t, json.Unmarshal(b, &back), string(b))
	assert.Equal(t, doc, back, string(b))
}

// fillValue sets every field of v to a value Canonical writes as it is.
func fillValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("x") // invalid, or already canonical, wherever it is used
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		if v.Elem().Kind() == reflect.Bool {
			return // httpOnly: false is the value that is not the default
		}
		fillValue(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillValue(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf("v"))
	case reflect.Struct:
		for i := range v.NumField() {
			fillValue(v.Field(i))
		}
	default:
		panic("fillValue: add a case for " + v.Type().String())
	}
}

func TestCanonicalErrors(t *testing.T) {
	_, err := Canonical(nil)
	assert.Error(t, err)
	doc := &Document{Upstreams: []Upstream{{ID: "u", Health: HealthCheck{Passive: PassiveHealth{FailureRate: math.NaN()}}}}}
	_, err = Canonical(doc)
	assert.Error(t, err)
	b, err := Canonical(&Document{})
	require.NoError(t, err)
	assert.Equal(t, "{}", string(b))
}

func TestAppendDuration(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 999, time.Microsecond, 1500 * time.Nanosecond, time.Millisecond,
		250 * time.Millisecond, time.Second, 1500 * time.Millisecond, 90 * time.Second, time.Hour, 25*time.Hour + 1,
		math.MaxInt64} {
		assert.Equal(t, d.String(), string(appendDuration(nil, d)))
	}
}

func BenchmarkCanonical(b *testing.B) {
	for _, n := range benchSizes {
		doc := benchDocument(n)
		b.Run(fmt.Sprintf("hosts=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Canonical(doc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestCanonicalHealthDefaults: the health block's defaults are the ones
// health.Config.Resolve gives, with the upstream's metadata: a value equal
// to what its empty field stands for is left out, any other kept, and a
// value whose empty field would read a metadata value health refuses is
// kept, since leaving it out would make a valid document invalid.
func TestCanonicalHealthDefaults(t *testing.T) {
	up := func(health, metadata string) string {
		return canonicalOf(t, `{"upstreams":[{"id":"u","health":`+health+`,"metadata":`+metadata+`}]}`)
	}
	const md5 = `{"ConsecutiveFailuresHealthPolicy.Threshold":"5","TransportFailureRateHealthPolicy.RateLimit":"0.25"}`
	assert.Equal(t, up(`{}`, md5), up(`{"active":{"threshold":5},"passive":{"failureRate":0.25}}`, md5))
	assert.NotEqual(t, up(`{}`, md5), up(`{"active":{"threshold":2}}`, md5), "2 is not what the metadata sets")
	assert.NotEqual(t, up(`{}`, md5), up(`{"passive":{"failureRate":0.3}}`, md5))
	const bad = `{"ConsecutiveFailuresHealthPolicy.Threshold":"x"}`
	assert.Contains(t, up(`{"active":{"threshold":2}}`, bad), `"threshold":2`)
	assert.Equal(t, up(`{}`, `{"a":"b"}`), up(`{"active":{"threshold":2}}`, `{"a":"b"}`))

	assert.Equal(t, up(`{"passive":{"window":"30s"}}`, `{}`), up(`{"passive":{"window":"30s","reactivationPeriod":"30s"}}`, `{}`),
		"the reactivation period defaults to the window")
	assert.NotEqual(t, up(`{"passive":{"window":"30s"}}`, `{}`), up(`{"passive":{"window":"30s","reactivationPeriod":"60s"}}`, `{}`))
	assert.Equal(t, up(`{}`, `{}`), up(`{"passive":{"reactivationPeriod":"1m"}}`, `{}`), "the default window is the default period")
}

// TestCanonicalResilienceFields: what differs from the defaults of
// retry.connectFailures and the outlier block stays in the canonical
// form, so it changes the document's identity.
func TestCanonicalResilienceFields(t *testing.T) {
	base := `{"hosts":[{"names":["a.com"],"routes":[{"upstream":"u"}]}],"upstreams":[{"id":"u"}]}`
	for _, doc := range []string{
		`{"hosts":[{"names":["a.com"],"routes":[{"upstream":"u","retry":{"connectFailures":"off"}}]}],"upstreams":[{"id":"u"}]}`,
		`{"hosts":[{"names":["a.com"],"routes":[{"upstream":"u"}]}],"upstreams":[{"id":"u","health":{"outlier":{"consecutiveGatewayErrors":5}}}]}`,
		`{"hosts":[{"names":["a.com"],"routes":[{"upstream":"u"}]}],"upstreams":[{"id":"u","health":{"outlier":{"consecutive5xx":3,"baseEjectionTime":"10s","maxEjectionTime":"1m","maxEjectionPercent":20}}}]}`,
	} {
		c := canonicalOf(t, doc)
		assert.NotEqual(t, canonicalOf(t, base), c)
		assert.Equal(t, c, canonicalOf(t, c), "the canonical form is its own")
	}
}
