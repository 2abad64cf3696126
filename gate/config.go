package gate

import (
	"cmp"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"github.com/paduraksa/paduraksa/telemetry"
)

// Target is what a route hands a request to: the proxy's forwarder, or any
// handler of the embedder's. rq lives until Forward returns and must not be
// kept after that.
type Target interface {
	Forward(w http.ResponseWriter, r *http.Request, rq *Request)
}

// TargetChecker is implemented by a [Target] that can tell, when the gate
// is built, that it would fail every request: the proxy's Route built by
// hand without its cluster, say. [New] refuses a route whose target
// reports a problem, so it is found at publish instead of on the first
// request.
type TargetChecker interface {
	CheckTarget() error
}

// AnswerHeaders adds a host's or a route's own headers to the answers the
// gate gives itself for it: a policy's refusal or challenge, 400, 404,
// 413, 414, 421, 431, the HTTPS and host redirects, robots.txt and a fixed
// host's answer. The proxy's Site (a host's settings) and Route implement
// it with the request ID and the custom response rules, so the gate's
// answers carry what the proxy's own do. A route's Target that implements
// it is used once the route matched; the host's [Host.AnswerHeaders]
// before that and on hosts without routes. SetAnswerHeaders runs on the
// request path before the status is written: it must not block, and
// should allocate only what it must make (a request ID).
type AnswerHeaders interface {
	SetAnswerHeaders(h http.Header, r *http.Request)
}

// AnswerFunc writes one of the gateway's own answers: the unknown host's
// (404 unless Config.Default says otherwise), and every status
// [Request.Answer] gives: 400, 404, 408, 413, 414, 421, 431 from the gate,
// and 502, 503, 504 (upstream failures, [telemetry.Record] Error says
// which) from the forwarder. It runs after the host's and route's answer
// headers (request ID, custom response rules) are set, and reports
// whether it wrote the answer; false leaves it to the gate. Policies'
// answers (403, 401, 429, a rule's response) are their own config and do
// not pass through it. Its cost is its own: the gate adds one nil check.
// It is not called for simulated requests.
type AnswerFunc func(w http.ResponseWriter, r *http.Request, rq *Request, status int) bool

// TargetFunc adapts a function to [Target].
type TargetFunc func(w http.ResponseWriter, r *http.Request, rq *Request)

// Forward calls f(w, r, rq).
func (f TargetFunc) Forward(w http.ResponseWriter, r *http.Request, rq *Request) { f(w, r, rq) }

// Defaults of the zero fields of a [Config], a [Host] and an [Answer].
const (
	DefaultServer         = "Paduraksa"
	DefaultContentType    = "text/plain; charset=utf-8"
	DefaultAnswerStatus   = http.StatusNotFound // the default answer, for unknown hosts
	DefaultFixedStatus    = http.StatusOK
	DefaultRedirectStatus = http.StatusPermanentRedirect // host and HTTPS redirects
	DefaultHTTPSPort      = 443
	DefaultAltSvc         = `h3=":443"; ma=86400` // AltSvcFor(DefaultHTTPSPort)
)

// AltSvcFor returns the Alt-Svc value the gate sends for an HTTP/3 host
// without one of its own ([TLSPolicy.AltSvc]): HTTP/3 on port of the same
// host, for a day. 0 means [DefaultHTTPSPort].
func AltSvcFor(port int) string {
	return `h3=":` + strconv.Itoa(cmp.Or(port, DefaultHTTPSPort)) + `"; ma=86400`
}

// HostKind says what a host does with its requests.
type HostKind uint8

const (
	// HostProxy routes requests to targets (the zero value).
	HostProxy HostKind = iota
	// HostRedirect answers every request with a redirect.
	HostRedirect
	// HostFixed answers every request with a fixed answer.
	HostFixed
)

// Config describes a gate. It is a plain value: build it by hand to embed
// the gate, or let the snapshot compiler build it from a document. [New]
// validates it and copies what it keeps.
type Config struct {
	// Hosts are the virtual hosts.
	Hosts []Host
	// Default answers requests for unknown hosts; the zero value is a 404
	// with a short text body.
	Default Answer
	// TrustedProxies are the peers allowed to supply the client address in
	// X-Forwarded-For (and, in Cloudflare mode, CF-Connecting-IP). An
	// IPv4-mapped address is its IPv4 address, an IPv4-mapped prefix of
	// /96 or longer is the IPv4 prefix it maps (New refuses a shorter
	// one), and an IPv6 prefix holds no IPv4 address (::/0 is all of
	// IPv6). ProbeSources and access lists follow the same rule.
	TrustedProxies []netip.Prefix
	// TrustForwardedProto lets a trusted proxy supply the scheme in
	// X-Forwarded-Proto.
	TrustForwardedProto bool
	// Cloudflare mode: the trusted proxies are Cloudflare's edge (or a
	// local cloudflared). From them the client comes from
	// CF-Connecting-IP (else X-Forwarded-For, counted as a fallback), the
	// scheme from CF-Visitor (else X-Forwarded-Proto), and
	// [Request.CloudflareTrusted] tells the forwarder to keep the cf-*
	// headers. From anyone else those headers are ignored.
	Cloudflare bool
	// ProbeSources are the addresses of health checkers (a load
	// balancer's probes); rate limits with ExemptProbes let them through.
	ProbeSources []netip.Prefix
	// Challenges answers ACME HTTP-01 challenges on plain HTTP; nil
	// means none.
	Challenges *ChallengeStore
	// State keeps policy state and counters across gates; nil means a
	// private one.
	State *State
	// Server is the default Server header; empty means [DefaultServer].
	Server string
	// HTTPSPort is the port clients reach the gateway's HTTPS on: the
	// listener's own, or the public port of a load balancer in front. It
	// is the port of the Alt-Svc header of HTTP/3 hosts ([AltSvcFor]) and
	// of the HTTPS redirect's Location, for every host that does not set
	// its own ([TLSPolicy.AltSvc], [HTTPSRedirect.Port]). 0 means
	// [DefaultHTTPSPort].
	HTTPSPort int
	// Logger receives the "would have blocked" lines of shadowed
	// policies; nil means none.
	Logger *slog.Logger
	// Tracer, when not nil, receives every step of every decision. Leave
	// it nil in production: the disabled path costs one branch per step.
	Tracer *Tracer
	// MaxPasswordChecks bounds the bcrypt checks of basic auth running at
	// once across the gateway (the State's count); a check over the bound
	// is answered 503 with Retry-After. 0 means half the CPUs the Go
	// runtime uses, at least 1.
	MaxPasswordChecks int
	// Observer, when not nil, receives the record of every finished
	// request ([telemetry.Record]) on the request's goroutine; AccessLog
	// the same, except for the hosts with NoAccessLog. Each costs its own
	// call per request; the gate fills the record either way.
	Observer  telemetry.Observer
	AccessLog telemetry.Observer
	// Answer, when not nil, may write the gateway's own answers in place
	// of the built-in short text ones (see [AnswerFunc]).
	Answer AnswerFunc

	// Reuse is publish plumbing for incremental publishers such as the
	// snapshot package's; leave it empty when building a Gate by hand.
	// It lists hosts compiled by an earlier Gate, taken as they are after
	// the hosts of Hosts: a publish that changes a few hosts of thousands
	// then costs little more than the changed ones. The caller vouches
	// that each came from [Gate.Host] of a Gate whose config was equal for
	// that host: same host, same Server, same policy instances and
	// targets.
	Reuse []*Host
}

// Host is one virtual host. [New] refuses the zero Host, which has no
// name.
type Host struct {
	// Names are exact names, "*.parent" wildcards or IP literals, in any
	// case and in Unicode or punycode, or [CatchAll] ("*"): every name no
	// other host has.
	Names []string
	Kind  HostKind
	// Redirect is the answer of a HostRedirect host.
	Redirect Redirect
	// Fixed is the answer of a HostFixed host.
	Fixed Answer
	// Routes are matched in precedence order, whatever their order here:
	// by Order (lower first), then exact paths, templates, prefixes and
	// regular expressions in that order (templates and prefixes with the
	// longer literal part first: "/api" of "/api/{id}"), then a route
	// with a method match before one without, then more header matches,
	// then more query matches, then the order here. The first route that
	// matches the request wins (see [RouteMatch]). Two routes with the same
	// matches and order are refused: the later could never match. A Host
	// that New returns holds its routes in precedence order.
	Routes []Route
	// Server overrides Config.Server.
	Server string
	// TLS is re-checked per request, client certificate included (421
	// when the connection does not satisfy it).
	TLS TLSPolicy
	// HSTS is sent on HTTPS answers; the zero value sends none.
	HSTS HSTS
	// Policies is the host's chain; it also guards the redirect, robots
	// and fixed answers.
	Policies []PolicyUse
	// Limits bounds the host's requests.
	Limits Limits
	// HTTPSRedirect sends plain-HTTP requests to HTTPS.
	HTTPSRedirect HTTPSRedirect
	// Robots, when not nil, is served for GET and HEAD /robots.txt as
	// text/plain, before redirect and fixed answers and route matching.
	Robots []byte
	// AnswerHeaders, when not nil, adds the host's headers to the answers
	// the gate gives itself for the host (see [AnswerHeaders]).
	AnswerHeaders AnswerHeaders
	// NoAccessLog leaves the host's requests out of Config.AccessLog
	// (they still count in the metrics and reach Config.Observer).
	NoAccessLog bool

	metrics   *RouteMetrics // requests outside the routes
	table     routeTable
	matched   []string // the header names the routes match on, canonical
	server    []string
	answers   *answerSet // the gate's own answers, with this host's headers
	fixed     *answer
	chain     chain
	altSvc    []string
	hsts      []string
	robots    *Page
	scopeKey  uint64
	httpsLoc  map[string]*location // exact names
	httpsPort string               // ":8443" or ""
	rootLoc   []string             // a HostRedirect's Location for "/"
	dropLoc   []string             // a DropPath HostRedirect's Location
	httpsPage *Page
	redirPage *Page
	firstName string
	owned     []string // headers the host's policies set for the upstream

	// clientRoots holds the DER of TLS.ClientCAs; nil: no client
	// certificate check.
	clientRoots map[string]struct{}
}

// HSTS configures Strict-Transport-Security. It is sent only when the
// trusted scheme is HTTPS, and never for IP literals or loopback names
// (localhost, *.localhost).
type HSTS struct {
	// MaxAge is the policy's lifetime; 0 sends no header.
	MaxAge            time.Duration
	IncludeSubdomains bool
	Preload           bool
}

// HTTPSRedirect configures the plain-HTTP to HTTPS redirect, decided on
// the trusted scheme, so a TLS-terminating proxy in front cannot loop it.
type HTTPSRedirect struct {
	Enabled bool
	// Status is 301, 302, 307 or 308; 0 means 308.
	Status int
	// Port is the HTTPS port in the Location; 0 means [Config.HTTPSPort].
	Port int
}

// Route sends the requests that match its path and matches to a target,
// or answers them itself (Redirect, Fixed). [New] refuses the zero Route,
// which has neither.
type Route struct {
	// ID names the route in traces, metrics and the access log; optional.
	// Routes that share a path need one to be told apart there.
	ID string
	// Prefix is the route's path, read as PathType says. A prefix (the
	// default) matches the path view ([PathView.Match]) on segment
	// boundaries, ASCII letters in any case: "/api" matches "/api",
	// "/API/x" and "/api;v=1/x" but not "/apix"; "/" and "" match
	// everything. A prefix, an exact path and a template's literal
	// segments are spelled as the view spells paths ([CheckPrefix]).
	Prefix string
	// PathType says whether Prefix is a prefix (the zero value), an
	// exact path, a template or a regular expression.
	PathType PathType
	// Match is what the route needs of a request besides its path; the
	// zero value matches any.
	Match RouteMatch
	// Order puts the route before (lower) or after (higher) the routes of
	// other orders, whatever their precedence; 0 is every route's
	// without one, and it may be negative.
	Order  int
	Target Target
	// Policies is the route's own chain, after the host's.
	Policies []PolicyUse
	// MaxBodyBytes overrides the host's Limits.MaxBodyBytes; 0 means the
	// host's.
	MaxBodyBytes int64
	// PathAllow lists the path spellings the gate refuses by default that
	// this route accepts (see [PathAllow] for what each one asks of the
	// upstream).
	PathAllow PathAllow

	// A route that answers itself, in place of a Target (see
	// route_answer.go): a route has exactly one of Target, Redirect and
	// Fixed.

	// Redirect, when not nil, answers the route's requests with a
	// redirect.
	Redirect *RouteRedirect
	// Fixed, when not nil, answers the route's requests with a fixed
	// answer, as a fixed host's (a Status of 0 means 200).
	Fixed *Answer
	// AnswerHeaders, when not nil, adds the route's headers to the
	// answers the gate gives itself once the route matched (its redirect
	// or fixed answer, a refusal of its policies, 413); nil means the
	// Target's, when it implements [AnswerHeaders], else the host's.
	AnswerHeaders AnswerHeaders

	answer        *routeAnswer // Redirect's or Fixed's, compiled
	chain         chain
	owned         []string
	matcher       matcher
	scopeKey      uint64
	answerHeaders AnswerHeaders // the Target's, or nil
	metrics       *RouteMetrics
}

// Redirect is a precomputed redirect answer.
type Redirect struct {
	// To is an absolute URL prefix.
	To string
	// Status is 301, 302, 303, 307 or 308; 0 means 308.
	Status int
	// DropPath sends every request to To itself instead of appending the
	// request's path and query.
	DropPath bool
}

// Answer is a response the gate writes itself.
type Answer struct {
	// Status is the status code; 0 means 200 for fixed hosts and 404 for
	// the default answer.
	Status int
	// ContentType defaults to [DefaultContentType].
	ContentType string
	// Body is sent as is.
	Body []byte
}

// location holds a precomputed HTTPS redirect for one exact name.
type location struct {
	prefix string   // "https://example.com[:port]"
	root   []string // prefix + "/"
}

// PathValueReader is implemented by a [Target] that reads
// [Request.PathValue], like the proxy's Route with a rewrite template.
// [New] refuses a route whose path has no value of a name the target
// reads, which would read "" on every request.
type PathValueReader interface {
	// PathValues returns each name the target reads, with the path of
	// the setting that names it relative to the target's config
	// ("rewrite.template"). The slice must not change.
	PathValues() []PathValueUse
}

// PathValueUse is one name a [PathValueReader] reads and where its config
// names it.
type PathValueUse struct {
	Name string
	Path string
}
