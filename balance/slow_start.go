package balance

import (
	"math/rand/v2"
	"time"

	"github.com/paduraksa/paduraksa/upstream"
)

// SlowStart wraps a policy so that a destination that has just become
// available (new, or back from unhealthy) takes a growing share of new
// requests over Window instead of its full share at once: a cold cache or a
// JIT warming up is not flooded, and power of two choices, which favours the
// destination with nothing in flight, does not send it a burst.
//
// When the wrapped policy picks a destination that became available age ago
// (age < Window), the pick is kept with probability age/Window and otherwise
// the wrapped policy picks again, at most twice. The time a destination
// became available is [upstream.Destination.AvailableSince], which the health
// package stamps; a destination never stamped is not ramped.
//
// Set the fields before first use; SlowStart is then safe for concurrent use
// if the wrapped policy is.
type SlowStart struct {
	// Policy picks the candidates; nil means PowerOfTwoChoices.
	Policy Policy
	// Window is how long the ramp lasts; 0 turns slow start off.
	Window time.Duration
	// Clock returns the current time when Input.Now is zero; nil means
	// time.Now.
	Clock func() time.Time
}

// Pick implements [Policy].
func (s *SlowStart) Pick(in Input, available []*upstream.Destination) *upstream.Destination {
	p := s.Policy
	if p == nil {
		p = PowerOfTwoChoices{}
	}
	d := p.Pick(in, available)
	if d == nil || s.Window <= 0 || len(available) == 1 {
		return d
	}
	var now int64
	for range 2 {
		since := d.AvailableSince()
		if since == 0 {
			return d
		}
		if now == 0 {
			now = s.now(in)
		}
		age := now - since
		if age < 0 || age >= int64(s.Window) || rand.Int64N(int64(s.Window)) < age {
			return d
		}
		d = p.Pick(in, available)
	}
	return d
}

func (s *SlowStart) now(in Input) int64 {
	switch {
	case !in.Now.IsZero():
		return in.Now.UnixNano()
	case s.Clock != nil:
		return s.Clock().UnixNano()
	}
	return time.Now().UnixNano()
}
