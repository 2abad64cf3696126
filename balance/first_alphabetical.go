package balance

import "github.com/paduraksa/paduraksa/upstream"

// FirstAlphabetical picks the available destination whose ID sorts first. It
// does not spread load: it is active-passive failover, where the first
// destination takes everything until health checks take it out.
//
// It relies on [upstream.Members.Available] being ordered by ID, as the
// upstream package guarantees. The zero value is ready to use and safe for
// concurrent use.
type FirstAlphabetical struct{}

// Pick implements [Policy].
func (FirstAlphabetical) Pick(_ Input, available []*upstream.Destination) *upstream.Destination {
	if len(available) == 0 {
		return nil
	}
	return available[0]
}
