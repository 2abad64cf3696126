// Package gate is the per-request decision pipeline of a gateway: it takes
// one immutable [Gate], resolves the client, answers what it can answer
// itself (ACME challenges, unknown hosts, TLS mismatches, policy refusals,
// limits, redirects, robots.txt, fixed answers), matches the route and
// hands the request over to the route's [Target] — usually the proxy's
// forwarder, or any code of the embedder's.
//
// A Gate is built from a plain [Config] by [New] and never changes: to
// change anything, build a new Gate and swap it in (the snapshot package
// does that behind one atomic pointer). Because a request reads one Gate and
// every later decision — host, policies, route, target — comes from it, a
// request never mixes two config generations.
//
// # Validation
//
// [New] and the policy constructors return every problem of their config
// at once, each a [ValidationError] with a stable code (listed in
// problems.go) and a path relative to the config ("hosts[2].routes[0].prefix",
// "rules[1].status"). A route's target that implements [TargetChecker]
// is asked whether it can serve, so a forwarder built by hand without its
// cluster is refused by New rather than on the first request; so is a
// built-in policy its constructor did not make (a zero &RateLimit{}).
// [Handler] makes a target of any http.Handler. The names
// of the enumerated settings ([HostKindNames], [ModeNames],
// [RuleActionNames], [RateLimitScopeNames], [TLSVersionNames],
// [PathAllowNames], [PathTypeNames], [HeaderMatchTypeNames],
// [QueryMatchTypeNames]) are their String and Parse forms and the ones a
// config document uses. A target that reads a template's values
// ([PathValueReader]) is asked which, so a rewrite naming a value the
// route's path does not capture is refused by New.
//
// The answers the gate gives itself for a host (a policy's refusal, 400,
// 404, 413, 414, 421, 431, the redirects, robots.txt, a fixed answer)
// carry the host's or the matched route's own headers when they have an
// [AnswerHeaders]: the proxy's Site and Route add the request ID and the
// custom response rules there, as on the proxy's own answers.
//
// # Pipeline
//
//  1. Client address. The peer is the PROXY-protocol source when the
//     connection had one ([ConnInfo], stored once per connection by
//     [ConnContext]), else the socket peer. Only a peer inside
//     [Config.TrustedProxies] may supply the client: the rightmost untrusted
//     address of X-Forwarded-For ([RightmostUntrusted]) or, in Cloudflare
//     mode, CF-Connecting-IP. The trusted scheme comes from CF-Visitor
//     (exactly {"scheme":"https"} or {"scheme":"http"}) from a trusted
//     Cloudflare peer, from X-Forwarded-Proto from a trusted proxy when
//     allowed, else from the connection. Header fallbacks are counted.
//     [Request.CloudflareTrusted] tells the forwarder whether cf-* headers
//     may pass.
//  2. ACME HTTP-01 on plain HTTP, from a [ChallengeStore]; an unknown
//     token falls through.
//  3. Host lookup without allocation: exact names, then wildcard parents,
//     then the catch-all host ([CatchAll], "*") when there is one; port
//     stripped, case folded. A name no host takes, and a Host header that
//     names no host at all (empty or malformed, catch-all or not), get the
//     default answer.
//  4. Response headers stage 1 (Server); the TLS re-check ([TLSPolicy]):
//     a request is served only when the connection it came on satisfies
//     the host it is for, whatever name the handshake was made for, else
//     421 Misdirected Request: HTTP/2 or HTTP/3 to a host that refuses it,
//     a TLS version below its minimum, or a client certificate the host
//     requires and the connection did not present, or presented without a
//     verified chain ending in one of the host's own roots; plain HTTP to
//     a host that requires a certificate, unless its HTTPS redirect
//     answers it. Then stage 2 (Alt-Svc on TCP HTTPS for HTTP/3 hosts,
//     naming [Config.HTTPSPort]; HSTS when the trusted scheme is HTTPS
//     and the name is no IP literal or loopback name).
//  5. The request check: 400 for what no client toward upstreams could
//     send (a method that is not an RFC 9110 token, which HTTP/2's server
//     lets through; a raw space in the query; a declared trailer whose
//     name is not a token), then the path view ([ReadPath], 400). The
//     host's policy chain; the host's request [Limits] (414, 431); the
//     HTTPS redirect; managed robots.txt; redirect and fixed-answer hosts.
//  6. Route match (404 if none): the path view against each route's path,
//     a prefix, an exact path, a template or an anchored RE2 expression
//     ([PathType]), and its [RouteMatch]: methods, headers as the forwarder
//     will send them, query parameters. The first route in precedence
//     order wins ([Host.Routes]: Order, then exact, template, prefix,
//     regex, the longer literal part, a method match, more header
//     matches, more query matches, the config's order), found through a
//     table New compiles, so a request tests only the routes its path
//     could match (route_table.go); a template's values are kept for the
//     target ([Request.PathValue]). Then the route's chain; the body limit
//     (413 for a larger Content-Length, a cutting reader for chunked
//     bodies).
//  7. Hand-over: [Target.Forward] with the per-request [Request] as a typed
//     argument. The gate does not use the request's context to carry state.
//
// # Policies
//
// A [Policy] returns a small value [Decision]: [Continue], [Respond] or
// [Challenge] with a precomputed [Page], [Drop] (the gate panics with
// http.ErrAbortHandler, which closes the HTTP/1.1 connection or resets the
// HTTP/2 stream without an answer or a log line), or [Defer], the one
// asynchronous case ([AsyncPolicy], used by [ForwardAuth]); every
// synchronous path allocates nothing. Each [PolicyUse] runs in a [Mode]:
// [Enforce], [Shadow] (evaluate, count in [Counters.ShadowWouldBlock], log
// "would have blocked" to [Config.Logger], continue) or [Off]. Built in:
// [AccessList] (IP allow and deny, countries through a [CountryLookup],
// basic auth with bcrypt and a verification cache), [RuleSet] (path,
// method and user-agent rules without regular expressions), [RateLimit]
// (a token bucket per IPv4 address or IPv6 /64 in a fixed lock-free table,
// shared or per route, fail-open when full, probe sources exemptable, 429
// with Retry-After), [ForwardAuth] and [Fixed] (maintenance answers).
//
// A chain of two policies or more that all continue counts one pass, one
// atomic add, in place of one Allowed count per policy; [Gate.EachPolicy]
// adds the passes of the [State]'s chains to each policy's Allowed (a
// copy of the counts at the call), and [State.RetainMetrics] moves a
// dropped chain's passes to its policies' own counts. A chain a policy
// stops counts each decision as before.
//
// # Cluster rate limits
//
// A rate limit's buckets are the instance's own table unless its
// [RateLimitConfig.Buckets] is [RateLimitCluster]: then each decision is
// asked of the [RateLimitStore] attached to the [State]
// ([State.SetRateLimitStore]; the fleet module's redislimit keeps the
// buckets in Redis), so gateways sharing a store share the limit. The
// store answers within a deadline ([RateLimitStoreConfig.Timeout], 5 ms
// by default) or the instance's local bucket decides instead: fail-open
// with a local limit, never a longer wait. Such a decision is counted
// ([Counters.RateLimitStoreFallback]); the store starting to fail and
// answering again are logged once each, and while it fails it is asked
// again at most every 100 ms, the local bucket deciding in between. A
// dry run (a simulation) looks at the local bucket only. The local path
// is unchanged and allocates nothing; a cluster decision allocates its
// key and whatever the store does. A [State] without a store refuses a
// cluster limit (gate.rateLimit.store.missing at buckets).
//
// # State across publishes
//
// Long-lived state lives outside the immutable Gate, in a [State] that the
// embedder (or the snapshot compiler) keeps for the life of the process:
// rate-limit tables keyed by policy ID, and the counters. [State.RateLimit]
// returns the existing policy, buckets and all, while the ID's config is
// unchanged, and a fresh one when it changes; [State.Retain] forgets IDs a
// new config no longer has. A Gate still serving keeps what it points at,
// like the upstream registry does for clusters.
//
// # Tracing and simulation
//
// Every step reports to a [Tracer] when one is set: client resolution,
// host match kind, TLS check, each policy with scope, index, mode, verdict
// and reason, redirects, limits, the route with the path view and why it
// won (the route it won over and the key of precedence that decided, and
// a route of higher precedence whose path matched with the match it
// failed) or, on a 404, the nearest route ([Step.Nearest]) and which of
// its matches failed, the hand-over (with the [Request] as the target
// receives it, [Step.Request], for a tracer to ask the target what it
// would send). The production setting is a nil *Tracer, one predictable
// branch per step (BenchmarkGateDecide against BenchmarkGateDecideTraced).
// [Gate.Simulate] runs the same code with [Request.DryRun]: stateful
// policies only look, forward-auth is not called, drops are not carried
// out, counters do not move and the target is not called.
//
// # Cost
//
// A forwarded request through a host with an allow list, a rule set and a
// rate limit, its metrics on, costs no allocation and a few hundred
// nanoseconds, most of them in work each request must do:
//
//	$ go test -run '^$' -bench 'BenchmarkGateDecide$' -benchtime 100000x -cpu 1 ./gate
//	BenchmarkGateDecide/conn-info     100000   272 ns/op   0 B/op   0 allocs/op
//	BenchmarkGateDecide/remote-addr   100000   302 ns/op   0 B/op   0 allocs/op
//	BenchmarkGateDecide/50-routes     100000   319 ns/op   0 B/op   0 allocs/op
//
// (the fastest of 15 runs on a shared 2-core virtual machine). Two
// monotonic clock reads (the start, which the rate limits share, and the
// end: 25 ns each there), seven atomic adds (the chain's pass, the
// bucket's token, the status, the duration's bucket and sum, the route's
// in-flight gauge up and down) and three header map operations (Server,
// User-Agent for the rule set, and the benchmark's fresh header map; a
// host table of up to eight exact names compares them rather than hash
// the name) make about half of it.
//
// Both clock reads are precise on purpose. The duration histograms start
// at 100 µs ([telemetry.Bounds]): a coarse clock (one shared reading a
// ticker moves every millisecond) would put a decision of a few hundred
// nanoseconds in any of the first four buckets, and the rate limits,
// which take the request's start as their time, would lose the
// nanosecond accuracy their buckets keep. The rate limits read no clock
// of their own for a served request, and the cluster store's deadline
// reads one only while the store fails. A host of 50 routes with method and
// header matches walks its trie and reads the matched header and
// Connection: 1.2x a host of two.
//
// # Concurrency
//
// A Gate, its policies, a [State] and a [ChallengeStore] are safe for
// concurrent use. A [Request] belongs to one request and is reused after
// the target returns.
package gate
