package upstream

// Draining takes a destination out of rotation without removing it: it
// is in no cluster's available set, so no new request is sent to it
// (affinity keys that name it move as when it fails), while the
// requests, streams and upgrades it carries finish; a health monitor
// stops probing it. Two switches drain it: the document's
// ([DestinationConfig.Drain]) and the operator's ([Destination.SetDrain],
// the admin API's). It drains while either is on: the document's wins
// when set, and an operator's drain lasts as long as the destination
// object does, across publishes that keep its ID and address.

// Draining reports whether the destination takes no new requests.
func (d *Destination) Draining() bool { return d.docDrain.Load() || d.adminDrain.Load() }

// DrainedBy reports which switches drain the destination: the
// document's and the operator's.
func (d *Destination) DrainedBy() (document, operator bool) {
	return d.docDrain.Load(), d.adminDrain.Load()
}

// SetDrain turns the operator's drain on or off and reports whether it
// changed; a change recomputes the cluster's available set. With the
// document's drain on, turning the operator's off leaves the
// destination draining.
func (d *Destination) SetDrain(on bool) bool {
	if d.adminDrain.Swap(on) == on {
		return false
	}
	d.cluster.refresh()
	return true
}

// undrained returns the destinations of all that are not draining: all
// itself when none is.
func undrained(all []*Destination) []*Destination {
	n := 0
	for _, d := range all {
		if !d.Draining() {
			n++
		}
	}
	if n == len(all) {
		return all
	}
	out := make([]*Destination, 0, n)
	for _, d := range all {
		if !d.Draining() {
			out = append(out, d)
		}
	}
	return out
}

// planDrain notes the document's drain of a destination the plan keeps.
func (p *Plan) planDrain(d *Destination, dc DestinationConfig) {
	if d.docDrain.Load() == dc.Drain {
		return
	}
	if p.drains == nil {
		p.drains = make(map[*Destination]bool)
	}
	p.drains[d] = dc.Drain
}

// commitDrains sets the planned drains, before the members are
// installed.
func (p *Plan) commitDrains() {
	for d, on := range p.drains {
		d.docDrain.Store(on)
	}
}
