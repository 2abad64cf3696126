package health

import (
	"slices"
	"strconv"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
)

// CheckKind says which check changed a verdict.
type CheckKind uint8

const (
	CheckActive CheckKind = iota + 1
	CheckPassive
	// CheckEjection is an ejection (New is Unhealthy) or a return from
	// one (New is Unknown): see [Change.EjectReason].
	CheckEjection
)

// String returns "active", "passive" or "ejection".
func (k CheckKind) String() string {
	switch k {
	case CheckActive:
		return "active"
	case CheckPassive:
		return "passive"
	case CheckEjection:
		return "ejection"
	}
	return "CheckKind(" + strconv.Itoa(int(k)) + ")"
}

// Change is a health verdict that changed.
type Change struct {
	ClusterID     string
	DestinationID string
	Destination   *upstream.Destination
	Check         CheckKind
	Old, New      upstream.HealthState
	Reason        string
	// EjectReason is why the destination was ejected, for a Check of
	// CheckEjection (an ejection or a return from it); EjectedFor is the
	// ejection's time, 0 on a return.
	EjectReason upstream.EjectReason
	EjectedFor  time.Duration
	Time        time.Time
}

type subscriber struct{ f func(Change) }

// Subscribe calls f with every health change, on the goroutine that made it
// (a probe worker, a reactivation timer, or the request that crossed a
// passive threshold), so f must be quick. The returned function ends the
// subscription.
func (m *Monitor) Subscribe(f func(Change)) (cancel func()) {
	s := &subscriber{f: f}
	m.subMu.Lock()
	defer m.subMu.Unlock()
	var list []*subscriber
	if cur := m.subs.Load(); cur != nil {
		list = slices.Clone(*cur)
	}
	list = append(list, s)
	m.subs.Store(&list)
	return func() {
		m.subMu.Lock()
		defer m.subMu.Unlock()
		cur := m.subs.Load()
		if cur == nil {
			return
		}
		list := slices.DeleteFunc(slices.Clone(*cur), func(x *subscriber) bool { return x == s })
		m.subs.Store(&list)
	}
}

func (m *Monitor) emit(c Change) {
	m.record(c)
	m.log.Warn("health: destination "+c.New.String(),
		"cluster", c.ClusterID, "destination", c.DestinationID, "check", c.Check.String(),
		"old", c.Old.String(), "new", c.New.String(), "reason", c.Reason)
	if subs := m.subs.Load(); subs != nil {
		for _, s := range *subs {
			s.f(c)
		}
	}
}

func (m *Monitor) change(d *upstream.Destination, k CheckKind, old, new upstream.HealthState, reason string) {
	d.Metrics().HealthChanges.Inc()
	m.emit(Change{ClusterID: d.ClusterID(), DestinationID: d.ID(), Destination: d, Check: k,
		Old: old, New: new, Reason: reason, Time: m.clock.Now()})
}
