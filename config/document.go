package config

// Document is the whole gateway config as stored and edited: plain data with
// JSON field names, loaded from JSON or YAML by [Decode]. Its zero value is a
// valid document (a gateway that answers every request with the default
// answer).
//
// Compatibility rule for later versions: fields are only ever added, every
// new field's zero value means "as before", and no field changes meaning, so
// a stored document keeps its behaviour. Blocks that later capabilities fill
// (TLS policy, headers, rewrite, compression, limits, timeouts, policies) are
// optional objects whose absence is the default.
//
// The built-in names a document takes (policies, modes, kinds) are exactly
// the names the owning package exports, from the same list its own
// validation reads: balance.PolicyNames, health.PassivePolicyNames,
// gate.ModeNames, proxy.HostHeaderNames and so on. Each field says whose.
type Document struct {
	Global      Global       `json:"global,omitzero"`
	Hosts       []Host       `json:"hosts,omitempty"`
	Upstreams   []Upstream   `json:"upstreams,omitempty"`
	AccessLists []AccessList `json:"accessLists,omitempty"`
	// Certificates are the TLS certificates hosts name by ID.
	Certificates []Certificate `json:"certificates,omitempty"`
	// RuleSets, RateLimits and ForwardAuths are policies that hosts and
	// routes name in their policies lists, beside access lists. Policy IDs
	// share one namespace across the four kinds.
	RuleSets     []RuleSet     `json:"ruleSets,omitempty"`
	RateLimits   []RateLimit   `json:"rateLimits,omitempty"`
	ForwardAuths []ForwardAuth `json:"forwardAuths,omitempty"`
}

// Global holds settings that apply to every host.
type Global struct {
	// TrustedProxies lists the addresses and prefixes ("10.0.0.0/8",
	// "192.0.2.7") allowed to supply the client address through
	// X-Forwarded-For. Empty: the peer is always the client.
	TrustedProxies []string `json:"trustedProxies,omitempty"`
	// TrustForwardedProto lets a trusted proxy supply the request scheme
	// through X-Forwarded-Proto. Default off.
	TrustForwardedProto bool `json:"trustForwardedProto,omitempty"`
	// Zone is the gateway's own zone, read by zone-aware balancing.
	Zone string `json:"zone,omitempty"`
	// Server is the default Server response header; empty means
	// "Paduraksa".
	Server string `json:"server,omitempty"`
	// DefaultAnswer answers requests for unknown hosts (with a catch-all
	// host, those whose Host names no host at all); absent means 404
	// with a short text body.
	DefaultAnswer *FixedAnswer `json:"defaultAnswer,omitempty"`
	// Cloudflare mode: the trusted proxies are Cloudflare's edge (or a
	// local cloudflared); the client comes from CF-Connecting-IP and the
	// scheme from CF-Visitor, and only then are cf-* headers forwarded.
	Cloudflare bool `json:"cloudflare,omitempty"`
	// ProbeSources are the addresses and prefixes of health checkers,
	// which rate limits with exemptProbes let through.
	ProbeSources []string `json:"probeSources,omitempty"`
	// HTTPSPort is the port clients reach the gateway's HTTPS on: the
	// public port of a load balancer in front, when it is not the one
	// the gateway listens on. Alt-Svc names it for http3 hosts, and HTTPS
	// redirects send clients to it, unless a host sets its own
	// (tls.altSvc, httpsRedirect.port). 0 means the port the gateway's
	// HTTPS listener is bound to (snapshot.Compiler.HTTPSPort, which the
	// reference daemon sets from -https), else 443; see
	// gate.Config.HTTPSPort.
	HTTPSPort int `json:"httpsPort,omitempty"`
	// TLS holds the TLS edge's defaults.
	TLS GlobalTLS `json:"tls,omitzero"`
}

// GlobalTLS holds what TLS handshakes get when no host decides (see
// tlsselect.Config).
type GlobalTLS struct {
	// DefaultCertificate names a certificate by ID: served to hosts
	// without a certificate of their own, and to handshakes that name no
	// host (no SNI, or an unknown one) when noSni or unknownSni says
	// "default". Empty means none: only hosts with a certificate are
	// served over TLS.
	DefaultCertificate string `json:"defaultCertificate,omitempty"`
	// UnknownSNI is what a handshake naming no configured host gets:
	// "default" (the default certificate) or "refuse" (the TLS alert
	// unrecognized_name). Default "default".
	UnknownSNI string `json:"unknownSni,omitempty"`
	// NoSNI is the same for a handshake without a server name (a client
	// that dialled an IP address). Default "default".
	NoSNI string `json:"noSni,omitempty"`
	// TicketKeyPeriod is how long one session ticket key seals tickets;
	// default 24h, between 1m and 168h.
	TicketKeyPeriod Duration `json:"ticketKeyPeriod,omitempty"`
}

// Host is one virtual host: a set of names and what to do with requests for
// them.
type Host struct {
	// Names are exact names ("example.com"), wildcards ("*.example.com",
	// matching any name below example.com but not example.com itself) or IP
	// literals. Unicode names are accepted and compiled to their ASCII
	// (punycode) form. At least one is required. "*" is the catch-all: the
	// host of every name no other host has, exact or wildcard; at most
	// one host has it. With a catch-all, global.defaultAnswer answers only
	// the requests whose Host names no host at all (empty or malformed).
	// Over TLS the catch-all's handshakes are those that name no host:
	// they get global.tls.defaultCertificate, or the refusal
	// global.tls.unknownSni asks for, so the catch-all names no
	// certificate of its own and asks for no client certificate; its tls
	// block's minVersion, http1Only and http3 are re-checked per request.
	Names []string `json:"names,omitempty"`
	// Kind is a gate.HostKindNames name: "proxy" (default, routes to
	// upstreams), "redirect" (answers every request with a redirect) or
	// "fixed" (answers every request with a fixed answer).
	Kind string `json:"kind,omitempty"`
	// Redirect is required for, and only allowed on, redirect hosts.
	Redirect *Redirect `json:"redirect,omitempty"`
	// Fixed is required for, and only allowed on, fixed hosts.
	Fixed *FixedAnswer `json:"fixed,omitempty"`
	// Routes are the host's routes; a proxy host needs at least one. The
	// route of highest precedence that matches wins, whatever the order
	// here (gate.Host.Routes): order, then exact paths, templates,
	// prefixes and regex paths, the longer literal part, a method match,
	// more header matches, more query matches, and only then the order
	// here. Two routes with the same matches and order are refused.
	Routes []Route `json:"routes,omitempty"`
	// AccessList names an access list by ID; empty means none.
	AccessList string `json:"accessList,omitempty"`
	// Certificate names the host's TLS certificate by ID; empty means
	// global.tls.defaultCertificate, and with neither the host is served
	// over plain HTTP only.
	Certificate string `json:"certificate,omitempty"`
	// Server overrides Global.Server for this host.
	Server string `json:"server,omitempty"`
	// Policies names the host's policies by ID (access lists, rule sets,
	// rate limits, forward auths), evaluated in order after AccessList.
	Policies []string `json:"policies,omitempty"`
	// TLS is asked of the host's handshakes and re-checked per request;
	// absent means HTTP/1.1 and HTTP/2 over any TLS version, no HTTP/3,
	// no client certificates. Only a host with a certificate (its own or
	// global.tls.defaultCertificate) takes one.
	TLS *HostTLS `json:"tls,omitempty"`
	// HSTS, when present, sends Strict-Transport-Security on HTTPS.
	HSTS *HSTS `json:"hsts,omitempty"`
	// HTTPSRedirect, when present, redirects plain HTTP to HTTPS.
	HTTPSRedirect *HTTPSRedirect `json:"httpsRedirect,omitempty"`
	// Robots, when not empty, is served as /robots.txt; at most 64 KiB.
	Robots string `json:"robots,omitempty"`
	// Limits bounds the host's requests; absent means no limits of the
	// gateway's own.
	Limits *RequestLimits `json:"limits,omitempty"`
	// Headers are the host's custom header rules; its routes' rules merge
	// over them by name. Response rules apply to the gate's own answers
	// for the host too; request rules need a proxy host.
	Headers Headers `json:"headers,omitzero"`
	// Compression compresses forwarded responses; absent means off. Only
	// a proxy host takes it.
	Compression Compression `json:"compression,omitzero"`
	// RequestID is a proxy.RequestIDModeNames name: "pass" (default:
	// X-Request-Id untouched), "keep" (keep a valid client ID, else make
	// one; sent upstream and back, on the gateway's own answers too) or
	// "generate" (always a new one).
	RequestID string `json:"requestId,omitempty"`
	// KeepUnderscoreHeaders forwards request header names with
	// underscores (dropped by default, as nginx does, because CGI-style
	// upstreams read X_User as X-User); names that spell a header the
	// gateway owns are dropped still. Only a proxy host takes it.
	KeepUnderscoreHeaders bool `json:"keepUnderscoreHeaders,omitempty"`
	// AccessLog, when false, leaves the host's requests out of the
	// access log (Compiler.AccessLog); absent or true logs them. They
	// count in the metrics either way.
	AccessLog *bool `json:"accessLog,omitempty"`
}

// Headers holds custom header rules: at most 32 per direction, one per
// name.
type Headers struct {
	// Request rules apply to the request sent upstream.
	Request []HeaderRule `json:"request,omitempty"`
	// Response rules apply to the response sent to the client, the
	// proxy's own answers included.
	Response []HeaderRule `json:"response,omitempty"`
}

// HeaderRule sets, adds or removes one header.
type HeaderRule struct {
	// Name is 1-64 token characters; names the proxy owns are refused.
	Name string `json:"name,omitempty"`
	// Operation is a proxy.HeaderOpNames name: "set" (default), "add" or
	// "remove"; Set-Cookie only takes "add".
	Operation string `json:"operation,omitempty"`
	// Value is 1-4096 visible characters without leading or trailing
	// space; none for "remove".
	Value string `json:"value,omitempty"`
}

// Compression is a host's response compression.
type Compression struct {
	Enabled bool `json:"enabled,omitempty"`
	// MinimumSize is the smallest declared length compressed, 0 to 1 MiB;
	// default 1024.
	MinimumSize int `json:"minimumSize,omitempty"`
	// Encodings lists proxy.EncodingNames ("gzip", "zstd", "br") in the
	// order preferred when the client's q-values tie; default that order.
	Encodings []string `json:"encodings,omitempty"`
}

// HostTLS is a host's TLS policy.
type HostTLS struct {
	// MinVersion is a gate.TLSVersionNames name, "1.2" or "1.3"; empty
	// means no minimum.
	MinVersion string `json:"minVersion,omitempty"`
	// HTTP1Only refuses HTTP/2.
	HTTP1Only bool `json:"http1Only,omitempty"`
	// HTTP3 serves the host over HTTP/3 and advertises it with Alt-Svc.
	HTTP3 bool `json:"http3,omitempty"`
	// AltSvc is the Alt-Svc value of an http3 host; empty means HTTP/3
	// on global.httpsPort (gate.AltSvcFor).
	AltSvc string `json:"altSvc,omitempty"`
	// ClientAuth asks TLS clients for a certificate: "off" (default),
	// "optional" or "required" (tlsselect.ClientAuthNames), verified
	// against ClientCAs offline. Each request is re-checked against this
	// host's ClientCAs whatever name its connection was made for: 421
	// when the host requires a certificate and the connection has none
	// verified against them, or when it presented one verified against
	// another host's roots; plain HTTP only passes an "optional" host, or
	// a "required" one's HTTPS redirect.
	ClientAuth string `json:"clientAuth,omitempty"`
	// ClientCAs is a PEM file of the roots client certificates are
	// verified against; needed with clientAuth optional or required.
	ClientCAs string `json:"clientCAs,omitempty"`
}

// HSTS configures Strict-Transport-Security.
type HSTS struct {
	// MaxAge is required, at least 1s.
	MaxAge            Duration `json:"maxAge,omitempty"`
	IncludeSubdomains bool     `json:"includeSubdomains,omitempty"`
	Preload           bool     `json:"preload,omitempty"`
}

// HTTPSRedirect configures the plain-HTTP to HTTPS redirect.
type HTTPSRedirect struct {
	// Status is 301, 302, 307 or 308 (default 308).
	Status int `json:"status,omitempty"`
	// Port is the HTTPS port of the Location; 0 means global.httpsPort.
	Port int `json:"port,omitempty"`
}

// RequestLimits bounds requests; 0 means no limit.
type RequestLimits struct {
	MaxURIBytes    int `json:"maxUriBytes,omitempty"`    // 414 beyond
	MaxHeaderCount int `json:"maxHeaderCount,omitempty"` // 431 beyond
	MaxHeaderBytes int `json:"maxHeaderBytes,omitempty"` // 431 beyond
	MaxBodyBytes   int `json:"maxBodyBytes,omitempty"`   // 413 beyond
}

// RuleSet is a list of path, method and user-agent rules; the first that
// matches decides.
type RuleSet struct {
	ID string `json:"id,omitempty"`
	// Mode is a gate.ModeNames name: "enforce" (default), "shadow"
	// (evaluate, count and log to Compiler.Logger, then continue) or
	// "off"; the same for every policy.
	Mode  string `json:"mode,omitempty"`
	Rules []Rule `json:"rules,omitempty"`
}

// Rule matches when every condition set holds.
type Rule struct {
	PathPrefix        string   `json:"pathPrefix,omitempty"`
	PathExact         string   `json:"pathExact,omitempty"`
	Methods           []string `json:"methods,omitempty"`
	UserAgentContains string   `json:"userAgentContains,omitempty"`
	// Action is a gate.RuleActionNames name: "deny" (default, 403),
	// "allow" or "respond".
	Action string `json:"action,omitempty"`
	// Respond is the answer of a "respond" rule (status required).
	Respond *FixedAnswer `json:"respond,omitempty"`
}

// RateLimit is a token bucket per client address (IPv4, IPv6 /64).
type RateLimit struct {
	ID   string `json:"id,omitempty"`
	Mode string `json:"mode,omitempty"`
	// Requests per Period is the sustained rate; both required.
	Requests int      `json:"requests,omitempty"`
	Period   Duration `json:"period,omitempty"`
	// Burst defaults to Requests.
	Burst int `json:"burst,omitempty"`
	// Scope is required, a gate.RateLimitScopeNames name: "shared" (one
	// bucket per client for every host and route naming the limit) or
	// "route" (one per client and route).
	Scope string `json:"scope,omitempty"`
	// Buckets is a gate.RateLimitBucketsNames name: "local" (the default:
	// each instance counts alone, so N instances let N times the rate
	// through) or "cluster" (the instances share buckets in the store the
	// daemon's -redis names; a store that fails or misses its deadline
	// leaves the decision to the local bucket). Scope says what a bucket
	// counts, Buckets where it lives.
	Buckets string `json:"buckets,omitempty"`
	// ExemptProbes lets Global.ProbeSources through.
	ExemptProbes bool `json:"exemptProbes,omitempty"`
}

// ForwardAuth asks an auth service about each request.
type ForwardAuth struct {
	ID   string `json:"id,omitempty"`
	Mode string `json:"mode,omitempty"`
	// URL is the service's absolute http(s) URL.
	URL string `json:"url,omitempty"`
	// Timeout defaults to 5s; a timeout answers 504.
	Timeout Duration `json:"timeout,omitempty"`
	// RequestHeaders are sent to the service; IdentityHeaders are copied
	// from its 2xx answer upstream (and always removed from the client's
	// request).
	RequestHeaders  []string `json:"requestHeaders,omitempty"`
	IdentityHeaders []string `json:"identityHeaders,omitempty"`
}

// Redirect describes the answer of a redirect host.
type Redirect struct {
	// To is the absolute URL prefix ("https://www.example.com") that the
	// request's path and query are appended to (unless DropPath).
	To string `json:"to,omitempty"`
	// Status is 301, 302, 303, 307 or 308 (default 308).
	Status int `json:"status,omitempty"`
	// DropPath sends every request to To itself.
	DropPath bool `json:"dropPath,omitempty"`
}

// FixedAnswer is an answer given without an upstream.
type FixedAnswer struct {
	// Status is 200-599 (default 200 for fixed hosts, 404 for the default
	// answer).
	Status int `json:"status,omitempty"`
	// ContentType defaults to "text/plain; charset=utf-8".
	ContentType string `json:"contentType,omitempty"`
	// Body is sent as is; at most 64 KiB.
	Body string `json:"body,omitempty"`
}

// Route sends the requests that match its path and matches to an
// upstream.
type Route struct {
	// ID names the route in logs and traces; optional, unique within the
	// host when set. Routes that share a path need one to be told apart in
	// the metrics.
	ID string `json:"id,omitempty"`
	// Path is, by default, a path prefix that matches on segment
	// boundaries, ASCII letters in any case: "/api" matches "/api",
	// "/API/x" and "/api;v=1/x" but not "/apix". Default "/". It is
	// written as the gate's path view spells paths: no escapes, ";", "?",
	// "#", "//" or dot segments. PathType reads it otherwise.
	Path string `json:"path,omitempty"`

	// Matching, the gate's (gate.Route, gate.RouteMatch).

	// PathType is a gate.PathTypeNames name: "prefix" (default), "exact"
	// (the whole path, a trailing "/" counts), "template" (segments:
	// literals, "{name}" for one segment, a last "{**name}" for the rest:
	// "/api/{id}/{**rest}") or "regex" (an RE2 expression on the whole
	// path view, anchored).
	PathType string `json:"pathType,omitempty"`
	// Match is what a request needs besides its path; absent matches any.
	Match RouteMatch `json:"match,omitzero"`
	// Order puts the route before (lower) or after (higher) routes of
	// other orders, whatever their precedence; absent is 0, and it may be
	// negative.
	Order int `json:"order,omitempty"`

	// AllowInPath lists path spellings the gate refuses with 400 by
	// default that this route accepts, by gate.PathAllowNames:
	// encodedSlash, encodedBackslash, encodedQuestionMark, encodedHash,
	// encodedSemicolon, encodedPercent, emptySegments. Each one is a
	// promise about the upstream behind it (gate.PathAllow says which).
	AllowInPath []string `json:"allowInPath,omitempty"`
	// Upstream names an upstream by ID.
	Upstream string `json:"upstream,omitempty"`
	// Policies names the route's own policies by ID, after the host's.
	Policies []string `json:"policies,omitempty"`
	// MaxBodyBytes overrides the host's limits.maxBodyBytes; 0 means the
	// host's.
	MaxBodyBytes int `json:"maxBodyBytes,omitempty"`
	// HostHeader is the Host sent upstream, a proxy.HostHeaderNames name:
	// "client" (default, as received), "destination" (the destination's
	// address) or "custom" (HostName). On https upstreams it is also the SNI and, with system
	// trust, the certificate check name.
	HostHeader string `json:"hostHeader,omitempty"`
	// HostName is the Host of hostHeader "custom": a host name or IP
	// literal, with an optional port.
	HostName string  `json:"hostName,omitempty"`
	Rewrite  Rewrite `json:"rewrite,omitzero"`
	// Headers merge over the host's by name.
	Headers Headers    `json:"headers,omitzero"`
	Retry   RouteRetry `json:"retry,omitzero"`

	// Backends and mirroring, the proxy's (proxy.Split, proxy.Mirror).

	// Backends are the route's weighted sides, each an upstream of its
	// own with its balancing, health, affinity and retries, and the
	// route's own settings (rewrite, headers, host header, retry); a
	// route names upstream or backends, not both. Absent: upstream.
	Backends []Backend `json:"backends,omitempty"`
	// Split places a request on one of the backends: sticky by a key,
	// forced by a header or cookie value; only with backends. Absent:
	// by the weights alone.
	Split Split `json:"split,omitzero"`
	// Mirror copies a sampled share of the route's requests to another
	// upstream, whose answers are dropped; absent mirrors nothing.
	Mirror *Mirror `json:"mirror,omitempty"`

	// A route's own answers and timeouts (gate.RouteRedirect,
	// gate.Route.Fixed, proxy.Timeouts). A route has one of upstream,
	// redirect and fixed.

	// Redirect answers the route's requests with a redirect: each field
	// given replaces its part of the request's URL.
	Redirect *RouteRedirect `json:"redirect,omitempty"`
	// Fixed answers the route's requests itself, as a fixed host does
	// (status default 200).
	Fixed *FixedAnswer `json:"fixed,omitempty"`
	// Timeouts bound the wait for an upstream's answer head; absent means
	// none (the upstream's idleTimeout alone).
	Timeouts RouteTimeouts `json:"timeouts,omitzero"`
}

// RouteRedirect is a route's redirect (gate.RouteRedirect); the query is
// always the request's.
type RouteRedirect struct {
	// Scheme is http or https; default the request's.
	Scheme string `json:"scheme,omitempty"`
	// Host is the Location's host name, without a port; default the
	// request's.
	Host string `json:"host,omitempty"`
	// Port is 1-65535, left out when it is the scheme's well-known one;
	// default the scheme's with scheme given, else the request's.
	Port int `json:"port,omitempty"`
	// Path replaces the whole path.
	Path string `json:"path,omitempty"`
	// Prefix replaces the route's matched prefix (prefix routes); not
	// with path.
	Prefix string `json:"prefix,omitempty"`
	// Status is 301, 302, 303, 307 or 308; default 302.
	Status int `json:"status,omitempty"`
}

// RouteTimeouts are a route's time limits (proxy.Timeouts), Go durations
// ("30s"); absent or "0s" means none.
type RouteTimeouts struct {
	// Request runs from the gateway's start on the request to the
	// answer's head, retries included: 504 past it.
	Request Duration `json:"request,omitempty"`
	// PerTry bounds each attempt to its answer's head; with retries on,
	// an idempotent request past it goes to another destination. At
	// most request.
	PerTry Duration `json:"perTry,omitempty"`
}

// Backend is one side of a route's split.
type Backend struct {
	// Upstream names an upstream by ID, one side's; two backends of a
	// route name two upstreams.
	Upstream string `json:"upstream,omitempty"`
	// Weight is the side's share against the sum of the route's weights,
	// 0 to 1000000: 0 takes no request but forced ones. Absent is 1, as
	// the Gateway API's backendRefs.
	Weight *int `json:"weight,omitempty"`
}

// Split says how a request with no force rule of its own is placed on a
// route's backends (proxy.SplitConfig).
type Split struct {
	// Sticky keeps a key on one side while the weights hold and the side
	// has an available destination; absent: the weights place each
	// request.
	Sticky Sticky `json:"sticky,omitzero"`
	// Force rules send a request to one backend, checked first, in
	// order; the first that matches wins.
	Force []Force `json:"force,omitempty"`
}

// Sticky names a sticky split's key: exactly one of a cookie (one the
// application sets: the split reads it and never sets it), a header, or
// the client address as the gate resolved it.
type Sticky struct {
	Cookie string `json:"cookie,omitempty"`
	Header string `json:"header,omitempty"`
	Client bool   `json:"client,omitempty"`
}

// Force sends a request whose header or cookie has Value to the backend
// Upstream names: exactly one of Header and Cookie.
type Force struct {
	Header string `json:"header,omitempty"`
	Cookie string `json:"cookie,omitempty"`
	// Value is compared exactly; a header sent twice is compared on its
	// values joined with ", ".
	Value string `json:"value,omitempty"`
	// Upstream is one of the route's backends.
	Upstream string `json:"upstream,omitempty"`
}

// Mirror copies a sampled share of a route's requests to another upstream
// (proxy.MirrorConfig): the same method, path and query as forwarded,
// the headers after the route's rules, and the body up to MaxBodyBytes.
// Its answers are read and dropped; it never delays or changes the
// client's.
type Mirror struct {
	// Upstream names the upstream that receives the copies: not the
	// route's own, nor one of its backends.
	Upstream string `json:"upstream,omitempty"`
	// Percent is the share of the route's requests copied, 0 to 100,
	// fractions allowed (0.5); absent is 100, as the Gateway API's
	// RequestMirror.
	Percent *float64 `json:"percent,omitempty"`
	// MaxBodyBytes is the largest body copied; a request with a larger
	// body is not mirrored (counted as tooLarge). 0 means 65536, at most
	// 16 MiB.
	MaxBodyBytes int `json:"maxBodyBytes,omitempty"`
	// MaxInFlight bounds the route's copies in flight; a sampled request
	// beyond it is not mirrored (counted as dropped). 0 means 64, at most
	// 10000.
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// HostName is the Host of the copies; absent means the Host the
	// route sends.
	HostName string `json:"hostName,omitempty"`
	// Timeout bounds a copy from its send to the end of its answer; 0
	// means 30s.
	Timeout Duration `json:"timeout,omitempty"`
}

// BackendWeight returns a backend's weight: its own, or 1 when absent.
func (b *Backend) BackendWeight() int {
	if b.Weight == nil {
		return 1
	}
	return *b.Weight
}

// MirrorPercent returns a mirror's percent: its own, or 100 when absent.
func (m *Mirror) MirrorPercent() float64 {
	if m.Percent == nil {
		return 100
	}
	return *m.Percent
}

// RouteMatch is what a route needs of a request besides its path; every
// part that is set must match (gate.RouteMatch).
type RouteMatch struct {
	// Methods matches any of these methods, case-sensitive; empty means
	// any.
	Methods []string `json:"methods,omitempty"`
	// Headers must all match, on the headers as they are forwarded; a
	// header sent twice is matched on its values joined with ", ".
	Headers []HeaderMatch `json:"headers,omitempty"`
	// Query must all match; a parameter given twice must match on every
	// occurrence.
	Query []QueryMatch `json:"query,omitempty"`
}

// HeaderMatch is one header a route needs.
type HeaderMatch struct {
	// Name is a header name, in any case.
	Name string `json:"name,omitempty"`
	// Type is a gate.HeaderMatchTypeNames name: "exact" (default),
	// "prefix", "regex" (RE2, anchored), "present" or "absent".
	Type string `json:"type,omitempty"`
	// Value is compared as written; none for present and absent.
	Value string `json:"value,omitempty"`
}

// QueryMatch is one query parameter a route needs, compared after
// percent-decoding.
type QueryMatch struct {
	// Name is case-sensitive.
	Name string `json:"name,omitempty"`
	// Type is a gate.QueryMatchTypeNames name: "exact" (default), "regex"
	// (RE2, anchored) or "present".
	Type string `json:"type,omitempty"`
	// Value is the decoded value to compare; none for present.
	Value string `json:"value,omitempty"`
}

// Rewrite changes the path a route forwards; the raw path is never decoded
// or re-encoded.
type Rewrite struct {
	// StripPrefix takes the route's path off the front: on /app, /app/x goes
	// as /x. Refused on the route "/".
	StripPrefix bool `json:"stripPrefix,omitempty"`
	// AddPrefix puts a path in front: "/api" (starts with /, no trailing /,
	// no dot segment, URL path characters, at most 256 bytes).
	AddPrefix string `json:"addPrefix,omitempty"`
	// RewriteLocation maps an upstream's Location back under the client's
	// prefix; default true on a rewriting route.
	RewriteLocation *bool `json:"rewriteLocation,omitempty"`
	// Template replaces the path with one filled from a template route's
	// values, in the client's spelling: on "/v1/{**rest}", "/api/{rest}"
	// sends /v1/users/7 as /api/users/7 (proxy.Rewrite.Template). Every
	// name it uses must be one the route's path captures.
	Template string `json:"template,omitempty"`

	// The rewrite's filters (proxy.Rewrite.ReplacePrefix, Path, Query).

	// ReplacePrefix puts a path in the place of the route's matched
	// prefix (prefix routes; not with stripPrefix, addPrefix or
	// template): on /app, "/v2" sends /app/x as /v2/x.
	ReplacePrefix string `json:"replacePrefix,omitempty"`
	// Path replaces the whole path (not with stripPrefix, addPrefix,
	// replacePrefix or template).
	Path string `json:"path,omitempty"`
	// Query sets, adds and removes parameters of the forwarded query.
	Query RewriteQuery `json:"query,omitzero"`
}

// RewriteQuery changes the forwarded query (proxy.QueryRewrite): names
// compared after percent-decoding, written percent-encoded, the other
// parameters kept in their order. A name is in one of the three.
type RewriteQuery struct {
	// Set gives each name one value, in the place of its first
	// occurrence (at the end when the query lacks it).
	Set map[string]string `json:"set,omitempty"`
	// Add appends name=value, whatever the query has of the name.
	Add map[string]string `json:"add,omitempty"`
	// Remove drops every occurrence of each name.
	Remove []string `json:"remove,omitempty"`
}

// RouteRetry is a route's retry policy; absent means no retries but of
// the requests that never left (see ConnectFailures).
type RouteRetry struct {
	// Attempts is the most retries on other destinations, 0 to 5.
	Attempts int `json:"attempts,omitempty"`
	// BodyLimit is the largest body buffered to be replayed, 0 to 1 MiB;
	// default 65536.
	BodyLimit int `json:"bodyLimit,omitempty"`
	// Budget is the share of live requests that may be retrying, in
	// (0, 1]; default 0.2.
	Budget float64 `json:"budget,omitempty"`
	// ConnectFailures is a proxy.ConnectFailuresNames name: "on" (the
	// default, also without a retry block) sends a request that never
	// left (connection refused or reset, connect timeout, failed TLS
	// handshake) to another destination, whatever its method; "off"
	// leaves it to attempts.
	ConnectFailures string `json:"connectFailures,omitempty"`
}

// Upstream is a cluster of destinations that routes send requests to.
type Upstream struct {
	// ID is stable across publishes: runtime state (health, in-flight
	// counts, pooled connections) belongs to it.
	ID           string        `json:"id,omitempty"`
	Destinations []Destination `json:"destinations,omitempty"`
	// LoadBalancing names a policy: a balance.PolicyNames name
	// (PowerOfTwoChoices, the default, LeastRequests, RoundRobin, Random,
	// FirstAlphabetical, PreferLocalZone, ConsistentHash) or one
	// registered on Compiler.Policies.
	LoadBalancing string            `json:"loadBalancing,omitempty"`
	HTTP          UpstreamHTTP      `json:"http,omitzero"`
	Health        HealthCheck       `json:"health,omitzero"`
	Affinity      Affinity          `json:"affinity,omitzero"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Limits        UpstreamLimits    `json:"limits,omitzero"`
}

// UpstreamLimits are an upstream's circuit breakers: past one, a request
// is answered 503 at once with Retry-After: 1 and the error kind
// "overloaded" in the access log, never queued and never counted against
// a destination's health. Each is 0 (no limit, the default) to
// proxy.MaxLimit.
type UpstreamLimits struct {
	// MaxInFlight bounds the upstream's requests in flight at once, from
	// admission to the end of the answer (streams and upgrades included).
	MaxInFlight int `json:"maxInFlight,omitempty"`
	// MaxPending bounds the requests waiting for a connection at once:
	// on the forwarder's HTTP/1.1 client, dialing one or waiting at
	// maxConnectionsPerDestination. Requests through net/http's clients
	// (HTTP/2, upgrades and the other fallbacks) are not counted.
	MaxPending int `json:"maxPending,omitempty"`
	// MaxRetriesInFlight bounds the retries in flight at once; past it a
	// failure is answered as without a retry (502, 504).
	MaxRetriesInFlight int `json:"maxRetriesInFlight,omitempty"`
	// MaxConnectionsPerDestination bounds the connections open to each
	// destination; a request past it waits for one (bounded by
	// maxPending and the route's timeouts: a wait the request timeout
	// ends is 503).
	MaxConnectionsPerDestination int `json:"maxConnectionsPerDestination,omitempty"`
}

// Destination is one address of an upstream.
type Destination struct {
	// ID is stable across publishes and unique within the upstream.
	ID string `json:"id,omitempty"`
	// Address is "http://host:port" or "https://host:port" (the port
	// defaults to the scheme's); no path, query or user info.
	Address string `json:"address,omitempty"`
	// Health is the address probes go to, in the same form and with the
	// same scheme; empty means Address.
	Health   string            `json:"health,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Drain, when true, sends the destination no new requests (affinity
	// clients move on as when it fails) while those in flight, streams
	// and upgrades included, finish, and stops its probes; GET /health
	// says draining and how many are in flight. The admin API drains a
	// destination too (POST /upstreams/{id}/destinations/{d}/drain); the
	// document's drain wins when set.
	Drain bool `json:"drain,omitempty"`
}

// UpstreamHTTP holds the client settings for an upstream: those that decide
// whether its pooled transport can be kept across publishes.
type UpstreamHTTP struct {
	// Version is a proxy.HTTPVersionNames name, "1.1" (default) or "2";
	// "2" reaches http:// destinations (as h2c) only with versionPolicy
	// "exact".
	Version string `json:"version,omitempty"`
	// VersionPolicy is a proxy.VersionPolicyNames name: "orLower"
	// (default: negotiate down over TLS, HTTP/1.1 to http://) or "exact".
	VersionPolicy string `json:"versionPolicy,omitempty"`
	// ConnectTimeout covers the TCP connect and the TLS handshake; default
	// 10s, between 100ms and 5m.
	ConnectTimeout Duration `json:"connectTimeout,omitempty"`
	// IdleTimeout cuts a request, response stream or upgraded connection
	// when no data moved either way for this long; default 1h, "0s" means
	// never.
	IdleTimeout Duration `json:"idleTimeout,omitempty"`
	// HTTP1Client is a proxy.HTTP1ClientNames name: the client that
	// speaks HTTP/1.1 to the upstream, "direct" (the default: the
	// forwarder's own) or "netHTTP" (net/http's).
	HTTP1Client string      `json:"http1Client,omitempty"`
	TLS         UpstreamTLS `json:"tls,omitzero"`
	// ProxyProtocol is a proxy.ProxyProtocolNames name: "off" (default),
	// "v1" or "v2". With v1 or v2 each new connection to a destination
	// starts with a PROXY header carrying the client's address as the
	// gate resolved it and the local address the client reached, before
	// any TLS; a connection then carries the requests of one client
	// connection only. Health probes send a LOCAL header (v1: "PROXY
	// UNKNOWN").
	ProxyProtocol string `json:"proxyProtocol,omitempty"`
}

// UpstreamTLS says how an https upstream's certificate is checked.
type UpstreamTLS struct {
	// Trust is a proxy.TrustNames name: "system" (default: the system
	// roots and the name), "pinned" (the certificate's SHA-256 must be in
	// Pins), "any" (no check) or "caFile" (the chain against the
	// certificates of CAFile, and the name).
	Trust string `json:"trust,omitempty"`
	// CAFile is a PEM file of the roots trust "caFile" checks against;
	// read as certificate files are (a regular file, capped, within the
	// compile's file timeout), and again on a publish when it changed on
	// disk. Only with trust "caFile", which needs it.
	CAFile string `json:"caFile,omitempty"`
	// ClientCertificate is the ID of one of the document's certificates,
	// presented to the upstream on every TLS connection (requests and
	// health probes); empty means none. The certificate as last loaded
	// (a renewal, a reloaded file) is the one the next new connection
	// presents. Only for upstreams whose destinations are https.
	ClientCertificate string `json:"clientCertificate,omitempty"`
	// Pins are base64 or hex SHA-256 digests of the leaf certificate's
	// SubjectPublicKeyInfo.
	Pins []string `json:"pins,omitempty"`
	// ServerName overrides the SNI and the certificate check name.
	ServerName string `json:"serverName,omitempty"`
}

// HealthCheck configures active and passive health and availability: a
// health.Config, whose package owns every rule and name. The publisher
// runs the checks (see PublisherConfig).
type HealthCheck struct {
	Active  ActiveHealth  `json:"active,omitzero"`
	Passive PassiveHealth `json:"passive,omitzero"`
	Outlier OutlierHealth `json:"outlier,omitzero"`
	// Availability is a health.AvailabilityNames name, "HealthyOrPanic"
	// (default) or "HealthyAndUnknown", or one registered on the monitor.
	Availability string `json:"availability,omitempty"`
	// ProbeFirst keeps a new or changed destination out of rotation until
	// its first successful probe (needs active health).
	ProbeFirst bool `json:"probeFirst,omitempty"`
	// SlowStart ramps a destination that becomes available up to its full
	// share over this window (balance.SlowStart, which reads when health
	// saw it become available); empty means off.
	SlowStart Duration `json:"slowStart,omitempty"`
}

// ActiveHealth configures probes.
type ActiveHealth struct {
	Enabled  bool     `json:"enabled,omitempty"`
	Interval Duration `json:"interval,omitempty"` // default 15s
	Timeout  Duration `json:"timeout,omitempty"`  // default 10s
	Path     string   `json:"path,omitempty"`     // default "/"
	Query    string   `json:"query,omitempty"`
	// Policy is a health.ActivePolicyNames name, "ConsecutiveFailures"
	// (default), or one registered on the monitor.
	Policy string `json:"policy,omitempty"`
	// Threshold is the number of consecutive failures that marks a
	// destination unhealthy (default 2).
	Threshold int `json:"threshold,omitempty"`
}

// PassiveHealth configures observation of real traffic.
type PassiveHealth struct {
	Enabled bool `json:"enabled,omitempty"`
	// Policy is a health.PassivePolicyNames name, "TransportFailureRate"
	// (default) or "FailureRateWith5xx", or one registered on the
	// monitor.
	Policy             string   `json:"policy,omitempty"`
	Window             Duration `json:"window,omitempty"`             // default 60s
	MinRequests        int      `json:"minRequests,omitempty"`        // default 10
	FailureRate        float64  `json:"failureRate,omitempty"`        // default 0.3
	ReactivationPeriod Duration `json:"reactivationPeriod,omitempty"` // default 60s
}

// Affinity configures session affinity.
type Affinity struct {
	Enabled bool `json:"enabled,omitempty"`
	// Mode is a balance.AffinityModeNames name: "HashCookie" (default),
	// "ArrCookie" or "Header".
	Mode string `json:"mode,omitempty"`
	// FailurePolicy is a balance.AffinityFailurePolicyNames name:
	// "Redistribute" (default) or "Return503".
	FailurePolicy string `json:"failurePolicy,omitempty"`
	// Key is the cookie or header name; default ".Paduraksa.Affinity".
	Key    string         `json:"key,omitempty"`
	Cookie AffinityCookie `json:"cookie,omitzero"`
}

// AffinityCookie holds the affinity cookie's attributes.
type AffinityCookie struct {
	Path     string `json:"path,omitempty"`
	Domain   string `json:"domain,omitempty"`
	HTTPOnly *bool  `json:"httpOnly,omitempty"` // default true
	// Secure is a balance.CookieSecureNames name: "SameAsRequest"
	// (default), "Always" or "Never".
	Secure string `json:"secure,omitempty"`
	// SameSite is a balance.CookieSameSiteNames name: "Lax" (default),
	// "Strict", "None" (needs secure "Always") or "Unspecified" (no
	// attribute).
	SameSite string `json:"sameSite,omitempty"`
	// MaxAge is in whole seconds; empty or 0 makes a session cookie.
	MaxAge Duration `json:"maxAge,omitempty"`
}

// AccessList is a named set of allowed and denied client addresses.
type AccessList struct {
	ID string `json:"id,omitempty"`
	// Allow, when not empty, admits only these prefixes.
	Allow []string `json:"allow,omitempty"`
	// Deny refuses these prefixes; it wins over Allow.
	Deny []string `json:"deny,omitempty"`
	// AllowCountries, when not empty, admits only clients of these
	// countries (ISO 3166-1 alpha-2, "DE"); DenyCountries refuses them.
	// Both need Compiler.Countries, without which they are refused.
	AllowCountries []string `json:"allowCountries,omitempty"`
	DenyCountries  []string `json:"denyCountries,omitempty"`
	// Mode is a gate.ModeNames name, "enforce" (default), "shadow" or
	// "off", wherever the list is used.
	Mode string `json:"mode,omitempty"`
	// Users, when not empty, require HTTP basic auth as one of them.
	Users []BasicUser `json:"users,omitempty"`
	// Realm is the basic-auth realm; default gate.DefaultRealm.
	Realm string `json:"realm,omitempty"`
}

// BasicUser is a basic-auth user with a bcrypt password hash.
type BasicUser struct {
	Name         string `json:"name,omitempty"`
	PasswordHash string `json:"passwordHash,omitempty"`
}

// Certificate is a named TLS certificate: PEM files, ACME, or a source of
// the embedder's.
type Certificate struct {
	ID string `json:"id,omitempty"`
	// CertFile is a PEM file with the chain, leaf first; KeyFile the
	// leaf's private key. Read when a document compiles; a publish reads
	// them again when they changed on disk.
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
	// ACME obtains the certificate, for the names of the hosts that use
	// it, from the Compiler's ACME manager (HTTP-01 through the gate's
	// challenge store); until it arrives those hosts get the default
	// certificate. A certificate with neither files nor acme comes from
	// the Compiler's own Certificates (the embedder's).
	ACME bool `json:"acme,omitempty"`
}

// Duration is a duration in Go syntax ("10s", "1m30s", "250ms"). It is kept
// as text so a bad value is reported with its path by validation, and
// written back in its shortest form by [Canonical].
type Duration string
