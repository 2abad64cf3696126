package listenlimits

import "sync/atomic"

// Upgrades counts upgraded connections (WebSockets, CONNECT tunnels) under
// a cap. A proxy calls TryAcquire before it upgrades a connection and
// answers 503 when it reports false, and calls Release once when the
// upgraded connection ends. Safe for concurrent use; the zero value has no
// cap.
type Upgrades struct {
	max     int64 // <= 0: no cap
	active  atomic.Int64
	refused atomic.Uint64
}

// NewUpgrades returns an Upgrades with a cap of max (<= 0: no cap).
func NewUpgrades(max int) *Upgrades { return &Upgrades{max: int64(max)} }

// Upgrades returns an Upgrades with l's MaxUpgradedConnections.
func (l Limits) Upgrades() *Upgrades {
	return NewUpgrades(on(l.WithDefaults().MaxUpgradedConnections))
}

// TryAcquire takes a place and reports whether there was one.
func (u *Upgrades) TryAcquire() bool {
	for {
		n := u.active.Load()
		if u.max > 0 && n >= u.max {
			u.refused.Add(1)
			return false
		}
		if u.active.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release gives back a place taken by a successful TryAcquire. A Release
// without its TryAcquire is ignored when nothing is held.
func (u *Upgrades) Release() {
	for {
		n := u.active.Load()
		if n <= 0 || u.active.CompareAndSwap(n, n-1) {
			return
		}
	}
}

// Active returns the number of places held now.
func (u *Upgrades) Active() int64 { return u.active.Load() }

// Refused returns the number of TryAcquire calls that found no place.
func (u *Upgrades) Refused() uint64 { return u.refused.Load() }
