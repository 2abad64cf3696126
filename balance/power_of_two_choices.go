package balance

import "github.com/paduraksa/paduraksa/upstream"

// PowerOfTwoChoices is the power-of-two-choices policy, the default: it
// draws two distinct available destinations at random and takes the one
// with fewer requests in flight. A slow destination holds its requests longer and so is picked
// rarely; looking at two random candidates instead of all of them keeps many
// gateways from piling onto the same emptiest destination.
//
// The zero value is ready to use and safe for concurrent use.
type PowerOfTwoChoices struct{}

// Pick implements [Policy].
func (PowerOfTwoChoices) Pick(_ Input, available []*upstream.Destination) *upstream.Destination {
	switch len(available) {
	case 0:
		return nil
	case 1:
		return available[0]
	}
	i, j := twoDistinct(len(available))
	return lesser(available[i], available[j])
}
