// Package upstream holds the runtime state that balancing, health checking
// and forwarding share: clusters, their destinations, the registry that
// keeps that state alive across config publishes, and the one vocabulary
// for how an exchange with a destination ended.
//
// A [Destination] is one address of a [Cluster]. It carries its identity
// (cluster ID, destination ID), its address and optional health address, its
// metadata (such as the zone), an atomic in-flight request count, and two
// health verdicts: the active one (set by probes) and the passive one (set by
// observing real traffic). A [Cluster] publishes its [Members] (every
// destination, and the subset available for new requests) behind one atomic
// pointer: readers on the request path load it once and never lock.
//
// The [Registry] reconciles runtime state with each new config generation,
// keyed by (cluster ID, destination ID). A destination that keeps its ID and
// its address keeps its object, so its health verdicts and counters survive
// every publish. A destination whose address changes under the same ID gets a
// fresh object: a verdict about the old address must not carry over to the
// new one, nor the other way round. A removed destination is only taken out
// of its cluster's members; requests that already hold it finish normally.
//
// Reconciliation is two-phase so that a refused config leaves nothing
// behind: [Registry.Plan] builds the next state without changing anything
// visible, and [Plan.Commit] installs it. The registry expects one writer (the
// snapshot publisher); every read method is safe for concurrent use.
//
// # Availability
//
// A cluster's available set is recomputed whenever a destination's verdict
// or ejection ([Destination.Ejected], the health package's: a refused
// connection, an outlier) changes and whenever its members change. An
// ejected destination's Health is Unhealthy. The computation is the cluster's
// [AvailabilityFunc]; the default, [HealthyOrPanic], keeps every destination
// that no verdict marks unhealthy and, when that leaves none, falls back to all
// of them. The health package provides the others.
//
// A draining destination ([Destination.Draining]: the document's
// [DestinationConfig.Drain] or the operator's [Destination.SetDrain]) is
// never available, not even in panic mode, while it stays a member: its
// in-flight requests finish and its count shows them going.
//
// A destination created by a plan starts with its cluster's
// [ClusterConfig.InitialActiveHealth]: Unknown (routable) by default, or
// Unhealthy to keep a new or readdressed destination out of rotation until a
// probe passes.
//
// # Outcomes
//
// An [Outcome] says how one exchange with a destination ended; the
// forwarder (proxy), its counters and health all speak it. Success is a
// completed exchange, whatever its status: a 5xx is a Success whose
// [Observation.Status] is 500 or more, which only a policy that asks for it
// counts. ConnectError, TLSError, Timeout, ResponseHeaderError and
// BodyError are transport failures ([Outcome.TransportFailure]), the
// destination's. ClientAbort, ClientBodyError and RequestInvalid are
// client-side ([Outcome.ClientSide]): the client went away, its request
// body failed, or the outgoing client refused to send what the request
// holds; they never count against a destination.
//
// [ClassifyRoundTrip] is the one classifier of a round trip's error, used
// by the forwarder and by health's probes. The forwarder tells an
// [Observer] each [Observation] (never a client-side one); a
// health.Monitor is an Observer, so a hand-built proxy.Cluster gets
// passive health by naming it, with no glue. Observers run on the request
// path and must not block.
//
// # What to call
//
// A gateway built by hand keeps a [Registry] and, per config change, makes
// a [Plan] of every cluster and commits it, each config checked with
// [ClusterConfig.Validate]; or, for a fixed set of destinations, it makes
// one cluster alone with [NewCluster], which checks them (the way to use
// balance's policies without a gateway). A destination's scheme is http
// or https and its Host a host:port, by the rule a config document's
// addresses follow. It reads [Cluster.Members] per
// request, counts requests with [Destination.Begin] and [Destination.End],
// and sets verdicts with SetActiveHealth and SetPassiveHealth (or lets a
// health.Monitor set them).
//
// [Destination.Attach], [Destination.Attached],
// [Destination.SetAvailableSince] and [Cluster.OnRefresh] are plumbing of
// the health package: one lock-free slot for its per-destination state (so
// that the state lives and dies with the destination object and the
// request path finds it without a map), the stamp slow start reads, and
// the hook that sets it. They take a key only the library's own packages
// hold (internal/seam) and do nothing for anyone else.
package upstream
