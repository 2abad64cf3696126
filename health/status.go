package health

import (
	"github.com/paduraksa/paduraksa/internal/seam"
	"github.com/paduraksa/paduraksa/upstream"
)

// record keeps c as its destination's latest change.
func (m *Monitor) record(c Change) {
	if c.Destination == nil {
		return
	}
	if st := stateOf(c.Destination); st != nil {
		st.last.Store(&c)
	}
}

// LastChange returns the latest health change the monitor made to d (by
// either check, with its reason and time), and false when it made none:
// d has kept its initial verdicts. The change stays with the destination
// across publishes that keep it. LastChange is safe for concurrent use.
func (m *Monitor) LastChange(d *upstream.Destination) (Change, bool) {
	st, _ := d.Attached(seam.Open()).(*destState)
	if st == nil {
		return Change{}, false
	}
	c := st.last.Load()
	if c == nil {
		return Change{}, false
	}
	return *c, true
}

// Checks reports whether the monitor checks the cluster's health: the last
// [Monitor.Update] named it. It is safe for concurrent use.
func (m *Monitor) Checks(c *upstream.Cluster) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clusters[c] != nil
}
