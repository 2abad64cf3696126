// Package paduraksa is the root of a Go library for reverse proxies and edge
// gateways. The root package holds no code; it documents the package map.
//
// Packages, from the leaves up (a package imports only those below it):
//
//   - [github.com/paduraksa/paduraksa/telemetry]: lock-free counters and
//     histograms, the per-request record and its observer, the access log
//     that drops instead of blocking.
//   - [github.com/paduraksa/paduraksa/proxyproto]: PROXY protocol v1/v2 parser,
//     reader and trusted-source listener. Usable alone.
//   - [github.com/paduraksa/paduraksa/connlimit]: the connection stage before
//     TLS: deny list and per-address connection cap in a fixed lock-free table.
//   - [github.com/paduraksa/paduraksa/listenlimits]: the listener's limits
//     for an http.Server: header, idle and handshake timeouts, a shedding
//     connection cap, upgraded-connection cap, minimum data rates.
//   - [github.com/paduraksa/paduraksa/tlsselect]: SNI to prebuilt TLS configs
//     per certificate, host policy and transport (TCP or QUIC): wildcards,
//     unknown-SNI policy, ALPN and minimum version per host, client
//     certificates, session tickets that never resume across policies.
//   - [github.com/paduraksa/paduraksa/upstream]: runtime state of clusters and
//     destinations (in-flight counts, health verdicts, available set, their
//     counters), the registry that keeps it across config publishes, and the
//     one outcome vocabulary of an exchange the forwarder and health speak.
//   - [github.com/paduraksa/paduraksa/secrets]: the affinity key and the TLS
//     ticket secret kept in a file, so restarts and upgrades keep sticky
//     sessions and resumption.
//   - [github.com/paduraksa/paduraksa/balance]: load-balancing policies.
//   - [github.com/paduraksa/paduraksa/health]: active and passive health.
//   - [github.com/paduraksa/paduraksa/gate]: the per-request decision pipeline:
//     client address, host lookup, policies, route match, hand-over.
//   - [github.com/paduraksa/paduraksa/proxy]: the forwarder to upstreams, with
//     a direct HTTP/1.1 client and net/http's for HTTP/2.
//   - [github.com/paduraksa/paduraksa/edge]: the listeners assembled: PROXY
//     protocol, deny list and per-address cap, listener limits, TLS and
//     net/http on TCP; the QUIC connection stage and HTTP/3 on UDP; one
//     handler, one graceful shutdown.
//   - [github.com/paduraksa/paduraksa/config]: the config document: its Go
//     types, strict JSON and YAML decoding, the canonical form, the
//     document's own checks.
//   - [github.com/paduraksa/paduraksa/snapshot]: the document's compilation
//     into an immutable snapshot (every owner's checks), the store and the
//     single-writer publisher with its history of outcomes.
//   - [github.com/paduraksa/paduraksa/source]: where documents come from,
//     through one interface: the config file, reloaded and written to.
//   - [github.com/paduraksa/paduraksa/simulate]: what a request would get and
//     why, over the real connection stage, TLS selection and gate, for the
//     live, a kept or a draft config; what-if diffs; a test helper.
//   - [github.com/paduraksa/paduraksa/admin]: the admin API (config push with
//     compare-and-swap, revisions, health, drain) and the Prometheus
//     collector.
//
// In modules of their own, so that an importer of the packages above pulls
// none of their dependencies: github.com/paduraksa/paduraksa/gatewayapi
// (Kubernetes Gateway API objects translated into a document) and the
// examples (the daemon, with its process hand-over).
//
// The reference daemon is examples/paduraksad; beside it, examples/ holds one
// small program per way the library is used (the edge with TLS and HTTP/3,
// the gate before one's own handler, PROXY protocol, balancing, active
// health, metrics in one's own registry, the admin API under a prefix).
// Benchmarks sit beside the code
// they measure, each beside a peer measured in the same run (go-proxyproto,
// httputil.ReverseProxy).
package paduraksa
