// Package health decides which destinations of a cluster may take requests:
// active probes, passive observation of real traffic, the availability
// policy, and events for every change.
//
// # Main types
//
// A [Monitor] owns all of it. The snapshot publisher calls [Monitor.Update]
// after every publish with each cluster's [upstream.Cluster], its [Config]
// and the forwarder's [http.RoundTripper] for the cluster (so probes use the
// cluster's HTTP version, TLS settings and pool). A Monitor is an
// [upstream.Observer]: set it as a proxy.Cluster's Observer and the
// forwarder tells [Monitor.Observe] the [upstream.Outcome] of every
// exchange, with no glue in between (the snapshot compiler does exactly
// that for a cluster with passive checks on). [Monitor.Subscribe] delivers
// every [Change]; each is also logged at Warn.
//
// Verdicts live on the [upstream.Destination] objects (active and passive,
// each Unknown, Healthy or Unhealthy) and the cluster recomputes its available
// set from them, through the availability policy named in the config
// (HealthyOrPanic by default, or HealthyAndUnknown). Since the upstream
// registry keeps a destination's object across every publish that keeps its
// ID and address, verdicts survive config changes, including changes to the
// health settings themselves.
//
//   - Active: every Interval (15 s), each destination's health address is
//     probed (GET Path?Query, Timeout 10 s). An [ActivePolicy] turns results
//     into verdicts; the built-in [ConsecutiveFailures] marks a destination
//     unhealthy after Threshold failed probes in a row
//     ([ActiveConfig.Threshold], else the cluster metadata
//     [MetadataThreshold], default 2) and healthy on the first pass. Probe
//     requests come from a [ProbeRequestFactory]. A draining destination
//     ([upstream.Destination.Draining]) is not probed.
//   - Passive: each destination has a sliding window (60 s, ten buckets). A
//     [PassivePolicy] says which observations are failures and when the
//     window makes a destination unhealthy; the built-in [FailureRate]
//     marks it when the window holds at least 10 outcomes and more than
//     30 % failed ([PassiveConfig.FailureRate]).
//     TransportFailureRate counts transport failures only
//     ([upstream.Outcome.TransportFailure]), FailureRateWith5xx counts
//     completed exchanges with a status of 500 or more too. A client-side
//     outcome (the client went away, or its request body failed) never
//     counts, in any policy: it is not even counted as a request. After
//     ReactivationPeriod the verdict returns to Unknown.
//   - Ejection: a destination a request to which never left (the
//     forwarder's [upstream.Observation.NotSent]: connection refused or
//     reset, connect timeout, failed TLS handshake or PROXY header) is
//     ejected at once, in every cluster the monitor observes, with or
//     without a health config, for [ConnectFailureEjectionTime] (2 s):
//     without probes, it takes requests again after that, and a request
//     that finds it still refusing goes elsewhere and ejects it again.
//     With [OutlierConfig] (off by default), ConsecutiveGatewayErrors
//     (502, 503, 504 and transport failures) or Consecutive5xx in a row
//     eject a destination for BaseEjectionTime (30 s) times the number of
//     its ejections in a row, capped at MaxEjectionTime (300 s); the count
//     falls by one for each base time spent in rotation. An outlier is
//     ejected only while the cluster's ejected share stays within
//     MaxEjectionPercent (50), one always may be (Envoy's
//     always_eject_one_host); refusals are not held to the share. A
//     passing probe ends any ejection that began before it; ejections
//     and returns are [Change] events with Check [CheckEjection] and an
//     [upstream.EjectReason], counted per destination
//     ([upstream.Metrics.Ejections]), and [Monitor.Ejection] tells the
//     current one.
//   - Probes are classified as the forwarder's round trips are, by
//     [upstream.ClassifyRoundTrip] ([ProbeResult.Outcome]).
//   - New destinations start Unknown and take traffic at once, unless
//     [Config.ProbeFirst] is on: then the publisher passes
//     [Config.InitialActiveHealth] to the upstream registry and the
//     destination waits for its first passing probe.
//   - A destination that becomes available is stamped
//     ([upstream.Destination.SetAvailableSince]) so that the balance
//     package's slow start can ramp it up.
//
// # Validation
//
// [Config.Validate] (and [Monitor.Validate], which knows the registered
// policies) returns every error and every warning at once, each a
// [ValidationError] with a stable code (listed in errors.go) and a path
// relative to the Config. Defaults are applied once, on a copy, when a
// config is resolved; the built-in names ([AvailabilityNames],
// [ActivePolicyNames], [PassivePolicyNames]) are the ones a config
// document takes.
//
// # Concurrency
//
// [Monitor.Start] starts one scheduler goroutine and Options.Workers probe
// workers; [Monitor.Close] stops them and waits. A cluster has at most one
// probing round in flight. Observe takes no lock and allocates nothing
// (an atomic ring of buckets attached to the destination); only the request
// that crosses a threshold does more (the verdict, the event, the
// reactivation timer). Update expects one caller at a time (the publisher);
// everything else is safe for concurrent use.
//
// # Differences from YARP
//
//   - A passing active probe ends a passive Unhealthy verdict at once (unless
//     [PassiveConfig.KeepUntilReactivation]): a destination that was killed
//     and restarted comes back at the next probe instead of after the whole
//     period, as HAProxy does.
//   - The reactivation period is still never shorter than the passive window
//     (old failures must have left it), but [Config.Validate] says so in a
//     warning instead of silently using the longer period; the window is
//     also cleared at reactivation.
//   - Policies evaluate one probe at a time, not a whole round.
//   - Probe-first: a new or readdressed destination can be kept out until a
//     probe passes; YARP always routes to it while Unknown.
//   - Turning a check off resets its verdicts to Unknown at once.
//   - Panic mode and empty clusters are logged at Warn when they begin and
//     end.
package health
