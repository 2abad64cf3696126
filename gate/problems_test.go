package gate

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/paduraksa/paduraksa/internal/problem"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var codePaths = problem.CodePaths

type failingTarget struct{ forwarded }

func (failingTarget) CheckTarget() error {
	return &ValidationError{Code: "x.cluster.missing", Path: "cluster", Msg: "no cluster"}
}

// TestNewReportsEveryProblem: one config with a problem of every kind New
// checks gets all of them back, each at its path.
func TestNewReportsEveryProblem(t *testing.T) {
	ok := new(forwarded)
	_, err := New(Config{
		Server:            "a\nb",
		Default:           Answer{Status: 99, ContentType: "x\r\n", Body: make([]byte, MaxAnswerBody+1)},
		MaxPasswordChecks: -1,
		HTTPSPort:         65536,
		Hosts: []Host{
			{Names: []string{"a.test", "www a.test", "A.TEST."}, Server: "\x00", TLS: TLSPolicy{MinVersion: tls.VersionTLS11, AltSvc: "h3"},
				HSTS: HSTS{MaxAge: time.Millisecond}, HTTPSRedirect: HTTPSRedirect{Enabled: true, Status: 303, Port: 70000},
				Robots: make([]byte, MaxAnswerBody+1), Limits: Limits{MaxURIBytes: -1},
				Policies: []PolicyUse{{}, {Policy: NewFixed("f", Answer{}), Mode: 7}, {Policy: &RateLimit{}}, {Policy: (*RuleSet)(nil)},
					{Policy: NewFixed("g", Answer{Status: 700})}},
				Routes: []Route{
					{Prefix: "/api", Target: ok},
					{Prefix: "/API/", Target: ok},
					{Prefix: "/a;b"},
					{Prefix: "/b", Target: new(failingTarget), PathAllow: 1 << 12, MaxBodyBytes: -1},
				}},
			{},
			{Names: []string{"r.test"}, Kind: HostRedirect, Redirect: Redirect{To: "ftp://x", Status: 200}},
			{Names: []string{"f.test"}, Kind: HostFixed, Fixed: Answer{Status: 600}},
			{Names: []string{"k.test"}, Kind: 9},
			{Names: []string{"*"}, Kind: HostFixed},
			{Names: []string{" * "}, Kind: HostFixed},
		},
	})
	assert.Equal(t, []string{
		CodeMaxPasswordChecksInvalid + " maxPasswordChecks",
		CodeHTTPSPortInvalid + " httpsPort",
		CodeServerInvalid + " server",
		CodeAnswerStatusInvalid + " default.status",
		CodeAnswerContentTypeInvalid + " default.contentType",
		CodeAnswerBodyTooLarge + " default.body",
		CodeServerInvalid + " hosts[0].server",
		CodeHostNameInvalid + " hosts[0].names[1]",
		CodeHostNameDuplicate + " hosts[0].names[2]",
		CodeHostTLSMinVersionInvalid + " hosts[0].tls.minVersion",
		CodeHostTLSAltSvcInvalid + " hosts[0].tls.altSvc",
		CodeHostHSTSMaxAgeInvalid + " hosts[0].hsts.maxAge",
		CodeHostHTTPSRedirectStatusInvalid + " hosts[0].httpsRedirect.status",
		CodeHostHTTPSRedirectPortInvalid + " hosts[0].httpsRedirect.port",
		CodeAnswerBodyTooLarge + " hosts[0].robots",
		CodeHostLimitsInvalid + " hosts[0].limits.maxUriBytes",
		CodeChainPolicyMissing + " hosts[0].policies[0]",
		CodeChainModeUnknown + " hosts[0].policies[1].mode",
		CodeChainPolicyMissing + " hosts[0].policies[2]",
		CodeChainPolicyMissing + " hosts[0].policies[3]",
		CodeAnswerStatusInvalid + " hosts[0].policies[4].answer.status",
		CodeRouteTargetMissing + " hosts[0].routes[2].target",
		CodeRoutePrefixInvalid + " hosts[0].routes[2].prefix",
		CodeRouteTargetMissing + " hosts[0].routes[3].target",
		"x.cluster.missing hosts[0].routes[3].target.cluster",
		CodeRoutePathAllowUnknown + " hosts[0].routes[3].pathAllow",
		CodeRouteMaxBodyBytesInvalid + " hosts[0].routes[3].maxBodyBytes",
		CodeRoutePrefixDuplicate + " hosts[0].routes[1].prefix",
		CodeHostNamesEmpty + " hosts[1].names",
		CodeHostRedirectStatusInvalid + " hosts[2].redirect.status",
		CodeHostRedirectToInvalid + " hosts[2].redirect.to",
		CodeAnswerStatusInvalid + " hosts[3].fixed.status",
		CodeHostKindUnknown + " hosts[4].kind",
		CodeHostNameDuplicate + " hosts[6].names[0]",
	}, codePaths(err))
}

func TestRedirectLoops(t *testing.T) {
	hosts := []Host{
		{Names: []string{"old.example.com"}, Kind: HostRedirect, Redirect: Redirect{To: "https://x.old.example.com"}},
		{Names: []string{"*.old.example.com"}, Kind: HostRedirect, Redirect: Redirect{To: "http://OLD.example.com:8443/path"}},
		{Names: []string{"moved.example.com"}, Kind: HostRedirect, Redirect: Redirect{To: "https://www.example.com"}},
		{Names: []string{"www.example.com"}, Routes: []Route{{Target: new(forwarded)}}},
		{Names: []string{"self.example.com"}, Kind: HostRedirect, Redirect: Redirect{To: "https://self.example.com/", DropPath: true}},
	}
	_, err := New(Config{Hosts: hosts})
	assert.Equal(t, []string{
		CodeHostRedirectToLoop + " hosts[0].redirect.to",
		CodeHostRedirectToLoop + " hosts[1].redirect.to",
		CodeHostRedirectToLoop + " hosts[4].redirect.to",
	}, codePaths(err))
}

func TestRedirectTargets(t *testing.T) {
	good := []string{"https://example.com", "http://example.com:8080/base", "https://[2001:db8::1]/x", "https://example.com/"}
	bad := []string{"", "example.com", "/path", "https://", "https://user@example.com", "https://example.com/#x",
		"https://example.com/?a=1", "mailto:a@example.com", "https://exa mple.com", "https://example.com:99999", "https://*.example.com",
		"https://example.com/\r\nX: 1", "https://example.com:080"}
	for _, to := range good {
		assert.Empty(t, checkRedirectTo(to, false), "%q", to)
	}
	for _, to := range bad {
		assert.NotEmpty(t, checkRedirectTo(to, false), "%q", to)
	}
	assert.Empty(t, checkRedirectTo("https://example.com/?a=1", true), "a query is fine when the path is dropped")
}

func TestPolicyConfigProblems(t *testing.T) {
	_, err := NewAccessList(AccessListConfig{
		Allow: mustPrefix("10.0.0.0/8")[:1], AllowCountries: []string{"DE", "Deu"}, DenyCountries: []string{"fr"},
		Users: []BasicUser{{Name: "a:b", Hash: "$2a$04$9g3HXQT6Xq8bRr0qy3bQ2uTzK3dxN7Zb4SuN6bzYpU3TtR9c4s6Hy"}, {Name: "ann", Hash: "secret"}},
		Realm: "a\nb",
	})
	assert.Equal(t, []string{
		CodeAccessListCountryInvalid + " allowCountries[1]",
		CodeAccessListCountriesNoLookup + " allowCountries",
		CodeAccessListCountriesNoLookup + " denyCountries",
		CodeAccessListUserNameInvalid + " users[0].name",
		CodeAccessListUserHashInvalid + " users[1].hash",
		CodeAccessListRealmInvalid + " realm",
	}, codePaths(err))
	_, err = NewAccessList(AccessListConfig{AllowCountries: []string{"de"}, Countries: countryOf{}})
	assert.NoError(t, err, "country rules with a lookup")

	_, err = NewRuleSet(RuleSetConfig{Rules: []Rule{
		{PathPrefix: "admin", Methods: []string{"GE T"}, Status: 200},
		{PathExact: "/x?y", Action: RuleRespond, Status: 99},
		{Action: 5},
	}})
	assert.Equal(t, []string{
		CodeRuleSetRulePathInvalid + " rules[0].pathPrefix",
		CodeRuleSetRuleMethodInvalid + " rules[0].methods[0]",
		CodeRuleSetRuleAnswerUnused + " rules[0].status",
		CodeRuleSetRulePathInvalid + " rules[1].pathExact",
		CodeAnswerStatusInvalid + " rules[1].status",
		CodeRuleSetRuleActionUnknown + " rules[2].action",
	}, codePaths(err))

	_, err = NewRateLimit(RateLimitConfig{Burst: -1, Scope: 4, Buckets: 3, TableSize: -1})
	assert.Equal(t, []string{
		CodeRateLimitRateInvalid + " requests",
		CodeRateLimitRateInvalid + " period",
		CodeRateLimitBurstInvalid + " burst",
		CodeRateLimitScopeUnknown + " scope",
		CodeRateLimitBucketsUnknown + " buckets",
		CodeRateLimitTableSizeInvalid + " tableSize",
	}, codePaths(err))
	cluster := RateLimitConfig{ID: "rl", Requests: 1, Period: time.Second, Buckets: RateLimitCluster}
	_, err = NewRateLimit(cluster)
	assert.Equal(t, []string{CodeRateLimitStoreMissing + " buckets"}, codePaths(err), "a private limit has no store")
	_, err = new(State).RateLimit(cluster)
	assert.Equal(t, []string{CodeRateLimitStoreMissing + " buckets"}, codePaths(err), "a state without a store")

	_, err = NewForwardAuth(ForwardAuthConfig{URL: "https://u@auth/x", Timeout: -1, RequestHeaders: []string{"X Y"}, IdentityHeaders: []string{"X_User"}})
	assert.Equal(t, []string{
		CodeForwardAuthURLInvalid + " url",
		CodeForwardAuthTimeoutInvalid + " timeout",
		CodeForwardAuthHeaderInvalid + " identityHeaders[0]",
		CodeForwardAuthHeaderInvalid + " requestHeaders[0]",
	}, codePaths(err))
}

type countryOf struct{}

func (countryOf) Country(netip.Addr) string { return "" }

// TestNames: every name parses back to a value whose String is the name,
// and the zero value has the first name.
func TestNames(t *testing.T) {
	for _, n := range HostKindNames() {
		v, ok := ParseHostKind(n)
		assert.True(t, ok && v.String() == n, n)
	}
	for _, n := range ModeNames() {
		v, ok := ParseMode(n)
		assert.True(t, ok && v.String() == n, n)
	}
	for _, n := range RuleActionNames() {
		v, ok := ParseRuleAction(n)
		assert.True(t, ok && v.String() == n, n)
	}
	for _, n := range RateLimitScopeNames() {
		v, ok := ParseRateLimitScope(n)
		assert.True(t, ok && v.String() == n, n)
	}
	for _, n := range RateLimitBucketsNames() {
		v, ok := ParseRateLimitBuckets(n)
		assert.True(t, ok && v.String() == n, n)
	}
	for _, n := range TLSVersionNames() {
		v, ok := ParseTLSVersion(n)
		assert.True(t, ok && knownTLSVersion(v), n)
	}
	assert.Equal(t, []string{"proxy", "enforce", "deny", "shared", "local"},
		[]string{HostProxy.String(), Enforce.String(), RuleDeny.String(), RateLimitShared.String(), RateLimitLocal.String()})
	_, ok := ParseMode("Enforce")
	assert.False(t, ok, "names are case-sensitive")
}

// stamp is an AnswerHeaders that marks every answer it decorates.
type stamp string

func (s stamp) SetAnswerHeaders(h http.Header, r *http.Request) { h["X-Stamp"] = []string{string(s)} }

type stampedTarget struct {
	forwarded
	stamp
}

// TestAnswersCarryTheHostsAndRoutesHeaders: every answer the gate gives
// itself for a known host goes through the host's AnswerHeaders, or the
// matched route's once there is one; a hand-over does not.
func TestAnswersCarryTheHostsAndRoutesHeaders(t *testing.T) {
	deny, err := NewRuleSet(RuleSetConfig{ID: "deny", Rules: []Rule{{PathPrefix: "/deny"}}})
	require.NoError(t, err)
	target := &stampedTarget{stamp: "route"}
	g, err := New(Config{Hosts: []Host{
		{Names: []string{"app.test"}, AnswerHeaders: stamp("host"), Policies: []PolicyUse{{Policy: deny}},
			Limits: Limits{MaxURIBytes: 64, MaxHeaderCount: 20}, TLS: TLSPolicy{HTTP1Only: true},
			Routes: []Route{{Prefix: "/r", Target: target, MaxBodyBytes: 1, Policies: []PolicyUse{{Policy: NewFixed("closed", Answer{Status: 503})}}},
				{Prefix: "/small", Target: target, MaxBodyBytes: 1}}},
		{Names: []string{"fixed.test"}, Kind: HostFixed, AnswerHeaders: stamp("fixed")},
		{Names: []string{"moved.test"}, Kind: HostRedirect, Redirect: Redirect{To: "https://app.test"}, AnswerHeaders: stamp("moved")},
		{Names: []string{"robots.test"}, Robots: []byte("x"), HTTPSRedirect: HTTPSRedirect{}, AnswerHeaders: stamp("robots"), Routes: []Route{{Target: target}}},
	}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name, host, target string
		tweak              func(r *http.Request)
		status             int
		stamp              string
	}{
		{"policy refusal", "app.test", "/deny", nil, 403, "host"},
		{"no route", "app.test", "/none", nil, 404, "host"},
		{"bad path", "app.test", "/a/%2e%2e/b", nil, 400, "host"},
		{"uri too long", "app.test", "/" + strings.Repeat("a", 80), nil, 414, "host"},
		{"too many headers", "app.test", "/none", func(r *http.Request) {
			for i := range 30 {
				r.Header.Add("X-H"+string(rune('a'+i%26))+string(rune('a'+i/26)), "v")
			}
		}, 431, "host"},
		{"http2 refused", "app.test", "/none", func(r *http.Request) { r.ProtoMajor, r.TLS = 2, &tls.ConnectionState{} }, 421, "host"},
		{"route policy", "app.test", "/r", nil, 503, "route"},
		{"body too large", "app.test", "/small", func(r *http.Request) { r.ContentLength = 5 }, 413, "route"},
		{"fixed host", "fixed.test", "/", nil, 200, "fixed"},
		{"redirect host", "moved.test", "/x", nil, 308, "moved"},
		{"robots", "robots.test", "/robots.txt", nil, 200, "robots"},
		{"hand-over", "app.test", "/small", nil, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "http://"+tc.host+tc.target, nil)
			r.RequestURI = tc.target
			if tc.tweak != nil {
				tc.tweak(r)
			}
			w := httptest.NewRecorder()
			g.ServeHTTP(w, r)
			assert.Equal(t, tc.status, w.Code)
			assert.Equal(t, tc.stamp, w.Header().Get("X-Stamp"))
		})
	}
}

// pathValues is a target that reads path values, as a rewrite template
// does.
type pathValues struct {
	forwarded
	names []string
}

func (p *pathValues) PathValues() []PathValueUse {
	out := make([]PathValueUse, len(p.names))
	for i, n := range p.names {
		out[i] = PathValueUse{Name: n, Path: "rewrite.template"}
	}
	return out
}

// TestRouteMatchProblems: every way a route's path and matches can be
// wrong is refused by New with its code at its path.
func TestRouteMatchProblems(t *testing.T) {
	ok := new(forwarded)
	owner := ownerPolicy{id: "auth", owned: []string{"X-User"}}
	r := func(path string, typ PathType, m RouteMatch) Route {
		return Route{Prefix: path, PathType: typ, Match: m, Target: ok}
	}
	_, err := New(Config{Hosts: []Host{{Names: []string{"a.test"}, Routes: []Route{
		r("/r/(", PathRegex, RouteMatch{}),
		r("/r/.*|", PathRegex, RouteMatch{}),
		r("x*", PathRegex, RouteMatch{}),
		r("/t/{**a}/{**b}", PathTemplate, RouteMatch{}),
		r("/t/{**a}/x", PathTemplate, RouteMatch{}),
		r("/t/{a}/{A}", PathTemplate, RouteMatch{}),
		r("/t/{}", PathTemplate, RouteMatch{}),
		r("/t/{id:int}", PathTemplate, RouteMatch{}),
		r("/t/x{id}", PathTemplate, RouteMatch{}),
		r("/t;x/{id}", PathTemplate, RouteMatch{}),
		r("t/{id}", PathTemplate, RouteMatch{}),
		r("/t/{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}/{i}", PathTemplate, RouteMatch{}),
		r("/e/../x", PathExact, RouteMatch{}),
		{Prefix: "/p", PathType: 9, Target: ok},
		r("/m", PathPrefix, RouteMatch{Methods: []string{"GET", "G T", ""}}),
		r("/h", PathPrefix, RouteMatch{Headers: []HeaderMatch{
			{Name: "X Bad", Value: "1"},
			{Name: "X_Canary", Value: "1"},
			{Name: "connection", Value: "1"},
			{Name: "X-Forwarded-For", Value: "1"},
			{Name: "X-A"},
			{Name: "X-A", Type: HeaderPresent, Value: "1"},
			{Name: "X-A", Type: HeaderAbsent, Value: "1"},
			{Name: "X-A", Type: HeaderRegex, Value: "("},
			{Name: "X-A", Value: " padded"},
			{Name: "X-A", Type: 7},
		}}),
		{Prefix: "/owned", Match: RouteMatch{Headers: []HeaderMatch{{Name: "x-user", Value: "ann"}}}, Target: ok, Policies: []PolicyUse{{Policy: owner}}},
		r("/q", PathPrefix, RouteMatch{Query: []QueryMatch{
			{Value: "1"},
			{Name: "a"},
			{Name: "a", Type: QueryPresent, Value: "1"},
			{Name: "a", Type: QueryRegex, Value: "[z-a]"},
			{Name: "a", Type: QueryRegex},
			{Name: "a", Type: 5, Value: "1"},
		}}),
		{Prefix: "/v/{id}", PathType: PathTemplate, Target: &pathValues{names: []string{"id", "rest"}}},
		{Prefix: "/v2", Target: &pathValues{names: []string{"rest"}}},
		r("/d", PathPrefix, RouteMatch{Methods: []string{"GET", "POST"}, Headers: []HeaderMatch{{Name: "X-A", Value: "1"}, {Name: "x-b", Type: HeaderPresent}}}),
		r("/D/", PathPrefix, RouteMatch{Methods: []string{"POST", "GET"}, Headers: []HeaderMatch{{Name: "X-B", Type: HeaderPresent}, {Name: "x-a", Value: "1"}}}),
		r("/d/{x}", PathTemplate, RouteMatch{}),
		r("/D/{Y}", PathTemplate, RouteMatch{}),
		{Prefix: "/d/{z}", PathType: PathTemplate, Order: 1, Target: ok}, // told apart by its order
	}}}})
	assert.Equal(t, []string{
		CodeRouteRegexInvalid + " hosts[0].routes[0].prefix",
		CodeRouteRegexEmpty + " hosts[0].routes[1].prefix",
		CodeRouteRegexEmpty + " hosts[0].routes[2].prefix",
		CodeRouteTemplateCatchAllInvalid + " hosts[0].routes[3].prefix",
		CodeRouteTemplateCatchAllInvalid + " hosts[0].routes[4].prefix",
		CodeRouteTemplateNameDuplicate + " hosts[0].routes[5].prefix",
		CodeRouteTemplateNameInvalid + " hosts[0].routes[6].prefix",
		CodeRouteTemplateNameInvalid + " hosts[0].routes[7].prefix",
		CodeRouteTemplateSegmentInvalid + " hosts[0].routes[8].prefix",
		CodeRoutePrefixInvalid + " hosts[0].routes[9].prefix",
		CodeRoutePrefixInvalid + " hosts[0].routes[10].prefix",
		CodeRouteTemplateNameInvalid + " hosts[0].routes[11].prefix",
		CodeRoutePrefixInvalid + " hosts[0].routes[12].prefix",
		CodeRoutePathTypeUnknown + " hosts[0].routes[13].pathType",
		CodeRouteMatchMethodInvalid + " hosts[0].routes[14].match.methods[1]",
		CodeRouteMatchMethodInvalid + " hosts[0].routes[14].match.methods[2]",
		CodeRouteMatchHeaderNameInvalid + " hosts[0].routes[15].match.headers[0].name",
		CodeRouteMatchHeaderNameInvalid + " hosts[0].routes[15].match.headers[1].name",
		CodeRouteMatchHeaderNameInvalid + " hosts[0].routes[15].match.headers[2].name",
		CodeRouteMatchHeaderNameInvalid + " hosts[0].routes[15].match.headers[3].name",
		CodeRouteMatchValueMissing + " hosts[0].routes[15].match.headers[4].value",
		CodeRouteMatchValueUnused + " hosts[0].routes[15].match.headers[5].value",
		CodeRouteMatchValueUnused + " hosts[0].routes[15].match.headers[6].value",
		CodeRouteMatchValueInvalid + " hosts[0].routes[15].match.headers[7].value",
		CodeRouteMatchValueInvalid + " hosts[0].routes[15].match.headers[8].value",
		CodeRouteMatchHeaderTypeUnknown + " hosts[0].routes[15].match.headers[9].type",
		CodeRouteMatchHeaderOwned + " hosts[0].routes[16].match.headers[0].name",
		CodeRouteMatchQueryNameInvalid + " hosts[0].routes[17].match.query[0].name",
		CodeRouteMatchValueMissing + " hosts[0].routes[17].match.query[1].value",
		CodeRouteMatchValueUnused + " hosts[0].routes[17].match.query[2].value",
		CodeRouteMatchValueInvalid + " hosts[0].routes[17].match.query[3].value",
		CodeRouteMatchValueMissing + " hosts[0].routes[17].match.query[4].value",
		CodeRouteMatchQueryTypeUnknown + " hosts[0].routes[17].match.query[5].type",
		CodeRouteTargetPathValueUnknown + " hosts[0].routes[18].target.rewrite.template",
		CodeRouteTargetPathValueUnknown + " hosts[0].routes[19].target.rewrite.template",
		CodeRouteMatchDuplicate + " hosts[0].routes[21]",
		CodeRouteMatchDuplicate + " hosts[0].routes[23]",
	}, codePaths(err))
	for _, p := range problem.All(err) {
		if p.Code == CodeRouteMatchDuplicate {
			assert.Regexp(t, `^routes\[2[02]\] and routes\[2[13]\] `, p.Msg, "both routes are named")
		}
	}
}

// ownerPolicy is a policy that owns headers and lets every request
// through.
type ownerPolicy struct {
	id    string
	owned []string
}

func (p ownerPolicy) ID() string                                { return p.id }
func (p ownerPolicy) Evaluate(*http.Request, *Request) Decision { return Decision{Reason: "ok"} }
func (p ownerPolicy) OwnedHeaders() []string                    { return p.owned }
