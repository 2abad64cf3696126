package upstream

import (
	"sync/atomic"

	"github.com/paduraksa/paduraksa/internal/enum"
	"github.com/paduraksa/paduraksa/internal/seam"
)

// HealthState is a health verdict about a destination. The zero value is
// [Unknown]: a destination nobody has judged yet, routable by default.
type HealthState uint32

const (
	Unknown HealthState = iota
	Healthy
	Unhealthy
)

// String returns the verdict's name.
func (s HealthState) String() string {
	switch s {
	case Unknown:
		return "unknown"
	case Healthy:
		return "healthy"
	case Unhealthy:
		return "unhealthy"
	}
	return "invalid"
}

// DestinationConfig is the static description of a destination, as a
// compiled config gives it. Its zero value is no destination: the ID,
// the scheme and the host are required ([ClusterConfig.Validate]).
type DestinationConfig struct {
	// ID is stable across publishes and unique within its cluster.
	ID string
	// Scheme is "http" or "https".
	Scheme string
	// Host is the host:port to connect to: a host name, an IPv4 address
	// or an IPv6 address in brackets, and a port. It is not a URL.
	Host string
	// HealthHost is the host:port that active probes go to, in the same
	// form; empty means Host.
	HealthHost string
	// Metadata is free-form; "zone" is read by zone-aware balancing. It is
	// not copied: the caller must not change it afterwards.
	Metadata map[string]string
	// Drain, when set, takes the destination out of rotation (see
	// [Destination.Draining]): the document's drain. A publish that
	// changes only it keeps the destination's state.
	Drain bool
}

// Destination is the runtime state of one destination. Its identity and
// address never change: a new address is a new Destination. Every method is
// safe for concurrent use. Destinations are made by their cluster
// ([NewCluster], a [Registry]); the zero Destination belongs to none and
// its methods panic.
type Destination struct {
	// Hot, written on every request: on its own cache line.
	inFlight atomic.Int64
	_        [56]byte

	active  atomic.Uint32
	passive atomic.Uint32
	ejected atomic.Bool // out of rotation by the health package's ejection
	removed atomic.Bool
	// availableSince is the unix nanosecond time at which the destination
	// last became available (set by the health package, read by slow start).
	availableSince atomic.Int64
	// attached is state another package keeps with the destination (the
	// health package's passive window); see Attached.
	attached atomic.Pointer[attachment]
	// docDrain and adminDrain are the two ways to drain (drain.go).
	docDrain, adminDrain atomic.Bool

	metrics Metrics

	cluster *Cluster
	cfg     DestinationConfig // Metadata is not read from here: see meta
	meta    atomic.Pointer[metadata]
}

// metadata can change under a kept destination; it is swapped whole.
type metadata struct {
	m    map[string]string
	zone string
}

// attachment boxes an attached value so that it can sit behind an atomic
// pointer.
type attachment struct{ v any }

func newDestination(c *Cluster, cfg DestinationConfig, initial HealthState) *Destination {
	d := &Destination{cluster: c, cfg: cfg}
	d.active.Store(uint32(initial))
	d.docDrain.Store(cfg.Drain)
	d.cfg.Metadata = nil
	d.setMetadata(cfg.Metadata)
	return d
}

func (d *Destination) setMetadata(m map[string]string) {
	d.meta.Store(&metadata{m: m, zone: m["zone"]})
}

// ClusterID returns the ID of the cluster the destination belongs to.
func (d *Destination) ClusterID() string { return d.cluster.id }

// Cluster returns the cluster the destination belongs to.
func (d *Destination) Cluster() *Cluster { return d.cluster }

// ID returns the destination's ID, unique within its cluster.
func (d *Destination) ID() string { return d.cfg.ID }

// Scheme returns "http" or "https".
func (d *Destination) Scheme() string { return d.cfg.Scheme }

// Host returns the host:port that requests are sent to.
func (d *Destination) Host() string { return d.cfg.Host }

// HealthHost returns the host:port that active probes go to.
func (d *Destination) HealthHost() string {
	if d.cfg.HealthHost != "" {
		return d.cfg.HealthHost
	}
	return d.cfg.Host
}

// Zone returns the destination's "zone" metadata, or "".
func (d *Destination) Zone() string { return d.meta.Load().zone }

// Metadata returns the value of one metadata key, or "".
func (d *Destination) Metadata(key string) string { return d.meta.Load().m[key] }

// Config returns the destination's description. The Metadata map is shared
// and must not be changed.
func (d *Destination) Config() DestinationConfig {
	c := d.cfg
	c.Metadata = d.meta.Load().m
	return c
}

// InFlight returns the number of requests currently sent to the destination.
func (d *Destination) InFlight() int64 { return d.inFlight.Load() }

// Begin counts a request as in flight to the destination. Every Begin is
// paired with exactly one [Destination.End].
func (d *Destination) Begin() { d.inFlight.Add(1) }

// End ends a request counted by [Destination.Begin].
func (d *Destination) End() { d.inFlight.Add(-1) }

// ActiveHealth returns the verdict of active probes.
func (d *Destination) ActiveHealth() HealthState { return HealthState(d.active.Load()) }

// PassiveHealth returns the verdict of passive observation.
func (d *Destination) PassiveHealth() HealthState { return HealthState(d.passive.Load()) }

// Health returns the combined verdict: Unhealthy if either verdict is,
// or the destination is ejected ([Destination.Ejected]), else Healthy if
// either verdict is, else Unknown.
func (d *Destination) Health() HealthState {
	a, p := d.ActiveHealth(), d.PassiveHealth()
	switch {
	case a == Unhealthy || p == Unhealthy || d.ejected.Load():
		return Unhealthy
	case a == Healthy || p == Healthy:
		return Healthy
	}
	return Unknown
}

// SetActiveHealth records the verdict of active probes and returns the
// previous one. A change recomputes the cluster's available set.
func (d *Destination) SetActiveHealth(s HealthState) HealthState {
	old := HealthState(d.active.Swap(uint32(s)))
	if old != s {
		d.cluster.refresh()
	}
	return old
}

// SetPassiveHealth records the verdict of passive observation and returns
// the previous one. A change recomputes the cluster's available set.
func (d *Destination) SetPassiveHealth(s HealthState) HealthState {
	old := HealthState(d.passive.Swap(uint32(s)))
	if old != s {
		d.cluster.refresh()
	}
	return old
}

// Ejected reports whether the destination is out of rotation for a
// while: it refused a connection, or its answers made it an outlier (see
// the health package). An ejected destination's Health is Unhealthy,
// whatever its active and passive verdicts say.
func (d *Destination) Ejected() bool { return d.ejected.Load() }

// SetEjected ejects the destination (true) or returns it to rotation
// (false) and reports whether it was ejected before; a change recomputes
// the cluster's available set. It is plumbing of the health package,
// which owns the rules of ejection and its timers: k is a key only the
// library's own packages hold (see internal/seam), and with any other
// SetEjected does nothing and reports the current state.
func (d *Destination) SetEjected(k seam.Key, v bool) bool {
	if !k.Opens() {
		return d.ejected.Load()
	}
	old := d.ejected.Swap(v)
	if old != v {
		d.cluster.refresh()
	}
	return old
}

// Removed reports whether a publish has taken the destination out of its
// cluster. Requests that hold it still finish.
func (d *Destination) Removed() bool { return d.removed.Load() }

// AvailableSince returns the unix nanosecond time at which the destination
// last became available, or 0 if it was never marked.
func (d *Destination) AvailableSince() int64 { return d.availableSince.Load() }

// SetAvailableSince records when the destination became available; slow
// start ramps its share of new requests from that time. It is plumbing of
// the health package, which stamps it as its availability changes: k is a
// key only the library's own packages hold (see internal/seam), and with
// any other SetAvailableSince does nothing.
func (d *Destination) SetAvailableSince(k seam.Key, unixNano int64) {
	if k.Opens() {
		d.availableSince.Store(unixNano)
	}
}

// Attached returns the value attached to the destination with
// [Destination.Attach], or nil. The health package keeps its per-destination
// state (the passive failure window, probe counters) here, so that the state
// lives exactly as long as the destination object and is found without a map
// lookup or a lock on the request path. It is plumbing of the health
// package: k is a key only the library's own packages hold (see
// internal/seam), and with any other Attached returns nil.
func (d *Destination) Attached(k seam.Key) any {
	if !k.Opens() {
		return nil
	}
	if a := d.attached.Load(); a != nil {
		return a.v
	}
	return nil
}

// Attach replaces the attached value with v if it is still old (compared with
// ==, so attached values should be pointers) and reports whether it did.
// Concurrent callers that race to attach a first value use old == nil; exactly
// one of them wins. It is plumbing of the health package: with a key other
// than the library's own (see internal/seam) Attach does nothing and
// reports false.
func (d *Destination) Attach(k seam.Key, old, v any) bool {
	if !k.Opens() {
		return false
	}
	for {
		cur := d.attached.Load()
		var curV any
		if cur != nil {
			curV = cur.v
		}
		if curV != old {
			return false
		}
		if d.attached.CompareAndSwap(cur, &attachment{v: v}) {
			return true
		}
	}
}

// EjectReason is why a destination was ejected ([Destination.SetEjected]):
// the health package's rules, named here so that the per-destination
// counters ([Metrics.Ejections]) can be kept by reason.
type EjectReason uint8

const (
	// EjectConnectFailure: a request to it never left (the connection
	// was refused or reset while it was made, the connect timed out, the
	// TLS handshake or the PROXY header failed).
	EjectConnectFailure EjectReason = iota
	// EjectGatewayErrors: consecutive gateway errors (502, 503 and 504
	// answers, and transport failures).
	EjectGatewayErrors
	// Eject5xx: consecutive 5xx answers (and transport failures).
	Eject5xx

	// NumEjectReasons is the number of EjectReason values.
	NumEjectReasons = iota
)

var ejectReasonNames = enum.Names[EjectReason]{"connectFailure", "consecutiveGatewayErrors", "consecutive5xx"}

// String returns the reason's name, one of [EjectReasonNames].
func (r EjectReason) String() string { return ejectReasonNames.Name(r) }

// EjectReasonNames returns the names of the reasons, in order: the
// reason label of the ejection metrics.
func EjectReasonNames() []string { return ejectReasonNames }
